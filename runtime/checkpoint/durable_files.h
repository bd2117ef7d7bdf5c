// File-system primitives that make checkpoint writes durable and atomic
// (LevelDB's recipe: write, fsync, rename, fsync the directory), plus the
// directory operations the step-directory protocol (step_dirs.h) is built
// from. Thread-compatible; each touches only the paths it names. Errors are
// absl::Status sentences that name the path and the failing call (errno).
#ifndef LEMRT_RUNTIME_CHECKPOINT_DURABLE_FILES_H_
#define LEMRT_RUNTIME_CHECKPOINT_DURABLE_FILES_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace lemrt::checkpoint {

// Writes `bytes` to `path` (created or truncated) and fsyncs it; the
// directory entry is not synced (SyncDir the directory once after a batch).
// On failure the partial file is removed, so a full disk is not left fuller.
// Errors start with `prefix`: "checkpoint: cannot write 'PATH': <OS error>".
absl::Status WriteFileDurably(const std::string& path, std::string_view bytes,
                              std::string_view prefix = "checkpoint: ");

// Writes `bytes` to `path` atomically: `path`.tmp, fsync, rename, fsync of
// the directory. Readers see the old contents or the new, never a mix.
// Errors as WriteFileDurably's; a failed rename names both paths ("cannot
// rename 'P.tmp' to 'P': Is a directory").
absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes,
                                 std::string_view prefix = "checkpoint: ");

// fsyncs directory `dir`, making the entries created or renamed in it durable.
absl::Status SyncDir(const std::string& dir);

// Creates `path` and its missing parents (mkdir -p). FailedPrecondition when
// `path` exists and is not a directory. Messages start with `prefix`.
absl::Status MakeDirs(const std::string& path, std::string_view prefix = "checkpoint: ");

// Removes `path` and everything below it (rm -rf; symbolic links are removed,
// not followed). OK when `path` does not exist.
absl::Status RemoveTree(const std::string& path);

// Renames directory `from` to `to`, which must not exist (or be an empty
// directory). Errors name both paths.
absl::Status RenameDir(const std::string& from, const std::string& to);

// Swaps the directories `a` and `b` in one atomic step (renameat2
// RENAME_EXCHANGE). Unimplemented when the file system (or kernel) cannot,
// so callers fall back to two renames.
absl::Status ExchangeDirs(const std::string& a, const std::string& b);

// True when `path` exists (any type; links not followed).
bool PathExists(const std::string& path);

// The directory part of `path` ("." when it has none).
std::string DirOf(const std::string& path);

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_DURABLE_FILES_H_
