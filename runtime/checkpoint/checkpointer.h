// The trainer's checkpoint policy and the checkpoint directory's keeper.
// Restores at start when checkpoint.restore_from is set; saves after every
// checkpoint.every_steps completed steps, at the end, and when asked (a
// preemption); keeps the newest checkpoint.keep_last checkpoints plus pinned
// ones. While it lives, rank 0 holds the directory's lock (dir_lock.h).
// One per rank; thread-compatible. Open, Restore and Save are collectives.
#ifndef LEMRT_RUNTIME_CHECKPOINT_CHECKPOINTER_H_
#define LEMRT_RUNTIME_CHECKPOINT_CHECKPOINTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "runtime/checkpoint/dir_lock.h"
#include "runtime/comm/communicator.h"
#include "runtime/step/sparsecore_stage.h"
#include "runtime/step/tensorcore_stage.h"

namespace lemrt::checkpoint {

inline constexpr char kPinsName[] = "pins.pbtxt";

class Checkpointer {
 public:
  // Collective, before any training work, so that a bad directory fails in
  // seconds. With checkpoint.dir set: rank 0 creates the directory, takes its
  // lock (FailedPrecondition naming the holder when another job has it;
  // a lock left by a dead job is taken over with a log line), removes the
  // leftovers of failed or interrupted saves (one log line each) and reads
  // the pins; then every rank creates and removes a file there, so an
  // unwritable directory (a file, read-only, full) fails now instead of at
  // the first save. Errors are agreed. `config` (validated) and `comm` must
  // outlive the checkpointer.
  static absl::StatusOr<std::unique_ptr<Checkpointer>> Open(const config::RunConfig& config,
                                                            runtime::Communicator& comm);

  // True when a checkpoint is due once `steps_done` steps have completed
  // (the trainer drains its pipeline there). Never without checkpoint.dir.
  static bool Due(const config::RunConfig& config, int64_t steps_done);

  // Collective: restores checkpoint.restore_from when set and returns the
  // step to continue from (0 when nothing is restored). Damaged newer
  // checkpoints passed over and accepted config changes are logged as
  // warnings. Errors as RestoreCheckpoint; also InvalidArgument when the
  // checkpoint is past training.steps.
  absl::StatusOr<int64_t> RestoreIfConfigured(runtime::SparseCoreStage& sparse,
                                              runtime::TensorCoreStage& dense);

  // Collective: Save when Due(steps_done).
  absl::Status SaveIfDue(int64_t steps_done, const runtime::SparseCoreStage& sparse,
                         const runtime::TensorCoreStage& dense);

  // Collective: saves the model after `steps_done` steps to checkpoint.dir
  // (FailedPrecondition without one), logs it on rank 0, then applies
  // retention: step directories beyond the newest keep_last, other than
  // pinned ones and this one, are removed (a failure to remove one is a
  // warning).
  absl::Status Save(int64_t steps_done, const runtime::SparseCoreStage& sparse,
                    const runtime::TensorCoreStage& dense);

  // Keeps `step` from retention (e.g. the best evaluation's checkpoint),
  // recorded in DIR/pins.pbtxt so that it outlives this job; Unpin releases
  // it. Every rank calls them alike; only rank 0 writes the file (a failure
  // is a warning: retention may then remove the step).
  void Pin(int64_t step, const std::string& reason);
  void Unpin(int64_t step);

  // The step directory of the newest save of this job ("" before one).
  const std::string& last_saved() const { return last_saved_; }

 private:
  Checkpointer(const config::RunConfig& config, runtime::Communicator& comm)
      : config_(config), comm_(comm) {}
  absl::Status OpenDir();  // rank 0's part of Open
  void WritePins();
  void ApplyRetention(int64_t just_saved);

  const config::RunConfig& config_;
  runtime::Communicator& comm_;
  std::unique_ptr<DirLock> lock_;  // rank 0, with checkpoint.dir
  std::map<int64_t, std::string> pins_;  // step -> reason
  std::string last_saved_;
};

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_CHECKPOINTER_H_
