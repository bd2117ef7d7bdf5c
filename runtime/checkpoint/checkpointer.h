// The trainer's checkpoint policy: restore at start when
// checkpoint.restore_from is set, save after every checkpoint.every_steps
// completed steps and at the end when checkpoint.dir is set. One per rank;
// thread-compatible. Restore and Save are collectives.
#ifndef LEMRT_RUNTIME_CHECKPOINT_CHECKPOINTER_H_
#define LEMRT_RUNTIME_CHECKPOINT_CHECKPOINTER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "runtime/comm/communicator.h"
#include "runtime/sparsecore_stage.h"
#include "runtime/tensorcore_stage.h"

namespace lemrt::checkpoint {

class Checkpointer {
 public:
  // All arguments must outlive the checkpointer; `config` must be validated.
  Checkpointer(const config::RunConfig& config, runtime::Communicator& comm,
               runtime::SparseCoreStage& sparse, runtime::TensorCoreStage& dense)
      : config_(config), comm_(comm), sparse_(sparse), dense_(dense) {}

  // True when a checkpoint is due once `steps_done` steps have completed
  // (the trainer drains its pipeline there). Never without checkpoint.dir.
  static bool Due(const config::RunConfig& config, int64_t steps_done);

  // Collective: restores checkpoint.restore_from when set and returns the
  // step to continue from (0 when nothing is restored). Errors as
  // RestoreCheckpoint; also InvalidArgument when the checkpoint is past
  // training.steps.
  absl::StatusOr<int64_t> RestoreIfConfigured();

  // Collective: saves when Due(steps_done); logs the directory on rank 0.
  absl::Status SaveIfDue(int64_t steps_done);

 private:
  const config::RunConfig& config_;
  runtime::Communicator& comm_;
  runtime::SparseCoreStage& sparse_;
  runtime::TensorCoreStage& dense_;
};

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_CHECKPOINTER_H_
