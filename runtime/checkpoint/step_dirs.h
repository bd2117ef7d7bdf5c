// The layout of a checkpoint root directory (checkpoint.dir) and the
// directory steps of the save protocol that keep its checkpoints valid
// whatever fails, and whenever a process dies:
//
//   DIR/step-00001200/            a published checkpoint: complete, because a
//                                 step directory only ever appears whole, by
//                                 one rename
//   DIR/incomplete-step-00001300/ a save in progress (every rank writes its
//                                 files here; rank 0 renames it when all are
//                                 done), or a failed one
//   DIR/replaced-step-00001200/   the old checkpoint of a step saved again,
//                                 while the new one takes its name (only where
//                                 the file system cannot exchange two names)
//   DIR/discard-step-00000400/    a checkpoint being removed by retention
//   DIR/lemrt.lock                the lock of the job writing DIR (dir_lock.h)
//   DIR/pins.pbtxt                steps that retention keeps (Pins proto)
//
// Only names "step-" + digits are checkpoints; readers ignore the rest.
// Functions here run on one process (rank 0 for the writers); thread-
// compatible. Errors name the paths.
#ifndef LEMRT_RUNTIME_CHECKPOINT_STEP_DIRS_H_
#define LEMRT_RUNTIME_CHECKPOINT_STEP_DIRS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/checkpoint/checkpoint_format.h"

namespace lemrt::checkpoint {

inline constexpr char kIncompletePrefix[] = "incomplete-";
inline constexpr char kReplacedPrefix[] = "replaced-";
inline constexpr char kDiscardPrefix[] = "discard-";

// The step of a name `prefix` + StepDirName(step), or nullopt (other names,
// or more than 18 digits, which int64 may not hold).
std::optional<int64_t> ParseStepDirName(std::string_view name, std::string_view prefix = "");

// Test seam: called with a point's name ("exchanged", "renamed_old_away", ...)
// as the directory steps pass it, so tests can kill the process there.
using StepHook = std::function<void(std::string_view point)>;

// The published steps of `root` (step-N directories, with or without a
// manifest), newest first. NotFound when `root` does not exist, is not a
// directory or cannot be read (the message says which).
absl::StatusOr<std::vector<int64_t>> ListPublishedSteps(const std::string& root);

// Creates root/incomplete-step-N empty (a leftover of a failed save of the
// same step is removed first) and returns its path.
absl::StatusOr<std::string> BeginStepDir(const std::string& root, int64_t step);

// Publishes root/incomplete-step-N, complete and synced, as root/step-N and
// makes the rename durable (fsync of root). When step-N exists, the new
// directory takes its name in one step (ExchangeDirs) and the old one is
// removed afterwards; where the file system cannot exchange (or
// `allow_exchange` is false, for tests), the old one is first renamed to
// replaced-step-N, which CleanLeftovers renames back if a crash falls
// between the two renames. Either way a valid step-N exists at every
// moment a process could die, except between those two renames.
absl::Status PublishStepDir(const std::string& root, int64_t step, bool allow_exchange = true,
                            const StepHook& hook = nullptr);

// Removes published root/step-N: renamed to discard-step-N first (so a crash
// while deleting never leaves a half-deleted step-N), then deleted.
absl::Status RetireStepDir(const std::string& root, int64_t step, const StepHook& hook = nullptr);

// What failed or interrupted saves left in `root`: removes every
// incomplete-*, discard-* and superseded replaced-* directory, and renames a
// replaced-step-N back to step-N when step-N is missing (a crash between the
// two renames of PublishStepDir). Returns one sentence per action, for the
// log. Run it only while holding the directory's lock.
absl::StatusOr<std::vector<std::string>> CleanLeftovers(const std::string& root);

// Retention: the steps of `published` to remove so that the newest
// `keep_last` remain, plus every step in `pinned`. keep_last 0 keeps all.
// Newest first.
std::vector<int64_t> StepsToRetire(std::span<const int64_t> published, int keep_last,
                                   const std::set<int64_t>& pinned);

// The checkpoints `dir` may mean, in the order a restore tries them: `dir`
// itself when it holds a manifest (then only it), else its published step
// directories newest first. NotFound names `dir` when there are none.
absl::StatusOr<std::vector<std::string>> CheckpointCandidates(const std::string& dir);

// The first of CheckpointCandidates(dir) that holds a manifest (NotFound
// when none does).
absl::StatusOr<std::string> ResolveCheckpointDir(const std::string& dir);

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_STEP_DIRS_H_
