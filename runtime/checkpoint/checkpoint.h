// Saving and restoring the whole model of a run (every chip's table shards,
// the dense parameters, all optimizer state, the step) in the layout-free
// format of checkpoint_format.h. Restoring works on any world size: each rank
// maps the saved files and copies only the rows its SparseCores own, and the
// ranks verify every file's checksum together. Thread-compatible; the
// functions are collectives that every rank calls in the same order.
//
// Save protocol (step_dirs.h), safe against a crash of any rank at any
// point: rank 0 creates ROOT/incomplete-step-N; every rank writes and fsyncs
// its table files there (rank 0 also the dense file); the ranks agree that
// all succeeded; rank 0 writes the manifest, fsyncs the directory and
// publishes it as ROOT/step-N by one rename (exchanging it with an existing
// step-N, which is removed only afterwards), then fsyncs ROOT. Until that
// rename no published checkpoint has changed.
#ifndef LEMRT_RUNTIME_CHECKPOINT_CHECKPOINT_H_
#define LEMRT_RUNTIME_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/checkpoint.pb.h"
#include "proto/config.pb.h"
#include "runtime/comm/communicator.h"
#include "runtime/step/sparsecore_stage.h"
#include "runtime/step/tensorcore_stage.h"

namespace lemrt::checkpoint {

struct SaveResult {
  std::string dir;  // The published step directory.
  int64_t bytes = 0;  // Data bytes over all files.
};

// Collective: writes the model after `step` completed steps to
// `root_dir`/step-NNNNNNNN by the protocol above (root_dir is created as
// needed). Errors (e.g. a full disk on one rank) are agreed, so every rank
// returns the same one; the unfinished directory is then removed and every
// published checkpoint is as it was.
absl::StatusOr<SaveResult> SaveCheckpoint(const std::string& root_dir, int64_t step,
                                          const config::RunConfig& config,
                                          runtime::Communicator& comm,
                                          const runtime::SparseCoreStage& sparse,
                                          const runtime::TensorCoreStage& dense);

struct RestoreResult {
  std::string dir;  // The step directory read.
  Manifest manifest;
  // Newer checkpoints that were damaged and passed over: "'DIR': reason".
  std::vector<std::string> skipped;
  // Config changes accepted by checkpoint.allow_config_change
  // (config_match.h: ConfigChangesSince).
  std::vector<std::string> config_changes;
};

// Collective: loads checkpoint `dir` into `sparse` and `dense`, re-sharding
// the tables when the world size differs, and checks the restored model's
// checksum against the manifest. `dir` is a step directory (only it is
// tried) or a root of step directories: then the newest is tried first, and
// a damaged one (missing or corrupted files or manifest: NotFound, DataLoss)
// is passed over for the next newest, listed in `skipped`. Errors, the same
// on every rank: NotFound / DataLoss when no candidate is intact (naming
// each and why), FailedPrecondition when the checkpoint does not match
// `config` (config_match.h; never passed over, the config is what is wrong).
// On error the model may be partly overwritten; the files never are.
absl::StatusOr<RestoreResult> RestoreCheckpoint(const std::string& dir,
                                                const config::RunConfig& config,
                                                runtime::Communicator& comm,
                                                runtime::SparseCoreStage& sparse,
                                                runtime::TensorCoreStage& dense);

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_CHECKPOINT_H_
