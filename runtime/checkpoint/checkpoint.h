// Saving and restoring the whole model of a run (every chip's table shards,
// the dense parameters, all optimizer state, the step) in the layout-free
// format of checkpoint_format.h. Restoring works on any world size: each rank
// maps the saved files and copies only the rows its SparseCores own, and the
// ranks verify every file's checksum together. Thread-compatible; the
// functions are collectives that every rank calls in the same order.
#ifndef LEMRT_RUNTIME_CHECKPOINT_CHECKPOINT_H_
#define LEMRT_RUNTIME_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/checkpoint.pb.h"
#include "proto/config.pb.h"
#include "runtime/comm/communicator.h"
#include "runtime/sparsecore_stage.h"
#include "runtime/tensorcore_stage.h"

namespace lemrt::checkpoint {

struct SaveResult {
  std::string dir;  // The step directory written.
  int64_t bytes = 0;  // Data bytes over all files.
};

// Test hook (tests/fault_checkpoint.sh): with the environment variable
// LEMRT_TEST_CRASH_DURING_CHECKPOINT=STEP:RANK, rank RANK SIGKILLs itself in
// the middle of writing the checkpoint of step STEP (after its first table
// file, with half of the next one in its temporary file), to show that a
// crash while writing leaves the previous checkpoint restorable.
inline constexpr char kCrashHookEnv[] = "LEMRT_TEST_CRASH_DURING_CHECKPOINT";

// Collective: writes the model after `step` completed steps to
// `root_dir`/step-NNNNNNNN (created as needed). Every rank writes its
// SparseCores' table files; rank 0 writes the dense file and, after all
// ranks are done, the manifest. An existing checkpoint of the same step is
// replaced file by file. Errors (e.g. a full disk on one rank) are agreed, so
// every rank returns the same one, and leave no manifest behind.
absl::StatusOr<SaveResult> SaveCheckpoint(const std::string& root_dir, int64_t step,
                                          const config::RunConfig& config,
                                          runtime::Communicator& comm,
                                          const runtime::SparseCoreStage& sparse,
                                          const runtime::TensorCoreStage& dense);

struct RestoreResult {
  std::string dir;  // The step directory read.
  Manifest manifest;
};

// Collective: loads the checkpoint `dir` refers to (ResolveCheckpointDir)
// into `sparse` and `dense`, re-sharding the tables when the world size
// differs, and checks the restored model's checksum against the manifest.
// Errors, the same on every rank: NotFound (no checkpoint, missing file),
// DataLoss (truncated or corrupted file, naming it), FailedPrecondition
// (the manifest does not match `config`: names the table and the field).
// On error the model may be partly overwritten; the files never are.
absl::StatusOr<RestoreResult> RestoreCheckpoint(const std::string& dir,
                                                const config::RunConfig& config,
                                                runtime::Communicator& comm,
                                                runtime::SparseCoreStage& sparse,
                                                runtime::TensorCoreStage& dense);

// OK when checkpoint `manifest` (read from `dir`) can be restored into a run
// of `config`: same tables (name, vocab_size, dim, optimizer), same dense
// model and optimizer, same global batch. Else FailedPrecondition naming
// `dir` and the first difference.
absl::Status CheckManifestMatchesConfig(const Manifest& manifest, const std::string& dir,
                                        const config::RunConfig& config);

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_CHECKPOINT_H_
