#include "runtime/checkpoint/checkpointer.h"

#include <chrono>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "runtime/checkpoint/checkpoint.h"

namespace lemrt::checkpoint {

bool Checkpointer::Due(const config::RunConfig& config, int64_t steps_done) {
  const config::CheckpointConfig& k = config.checkpoint();
  if (!k.has_dir()) return false;
  if (steps_done == config.training().steps()) return true;
  return k.every_steps() > 0 && steps_done % k.every_steps() == 0;
}

absl::StatusOr<int64_t> Checkpointer::RestoreIfConfigured() {
  if (!config_.checkpoint().has_restore_from()) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  LEMRT_ASSIGN_OR_RETURN(RestoreResult r, RestoreCheckpoint(config_.checkpoint().restore_from(),
                                                            config_, comm_, sparse_, dense_));
  const int64_t step = r.manifest.step();
  if (step > config_.training().steps()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "checkpoint '%s' is at step %d, past training.steps %d.", r.dir, step,
        config_.training().steps()));
  }
  if (comm_.rank() == 0) {
    const double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    LOG(INFO) << absl::StrFormat(
        "restored %s (step %d, saved on %d ranks x %d SparseCores, model_checksum %s) in %.2f s",
        r.dir, step, r.manifest.world_size(), r.manifest.sparse_cores_per_chip(),
        r.manifest.model_checksum(), sec);
  }
  return step;
}

absl::Status Checkpointer::SaveIfDue(int64_t steps_done) {
  if (!Due(config_, steps_done)) return absl::OkStatus();
  const auto t0 = std::chrono::steady_clock::now();
  LEMRT_ASSIGN_OR_RETURN(SaveResult r, SaveCheckpoint(config_.checkpoint().dir(), steps_done,
                                                      config_, comm_, sparse_, dense_));
  if (comm_.rank() == 0) {
    const double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    LOG(INFO) << absl::StrFormat("checkpoint saved: %s (%.1f MB in %.2f s)", r.dir,
                                 r.bytes / 1e6, sec);
  }
  return absl::OkStatus();
}

}  // namespace lemrt::checkpoint
