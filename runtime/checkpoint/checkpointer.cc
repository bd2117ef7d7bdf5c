#include "runtime/checkpoint/checkpointer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "google/protobuf/text_format.h"
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/checkpoint/checkpoint_format.h"
#include "runtime/checkpoint/crash_hook.h"
#include "runtime/checkpoint/durable_files.h"
#include "runtime/checkpoint/step_dirs.h"

namespace lemrt::checkpoint {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Creates and removes a file of this rank in `dir`: the directory takes
// new files from here (not a file, not read-only, not full).
absl::Status ProbeWritable(const std::string& dir, int rank) {
  const std::string path = absl::StrCat(dir, "/.write-probe-rank-", rank);
  unlink(path.c_str());
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write(fd, "x", 1) == 1;
  int err = errno;
  if (fd >= 0 && close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  unlink(path.c_str());
  if (ok) return absl::OkStatus();
  return absl::ErrnoToStatus(
      err, absl::StrCat("checkpoint directory '", dir, "' does not take new files (checked by "
                                                       "creating '", path, "')"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Checkpointer>> Checkpointer::Open(const config::RunConfig& config,
                                                                 runtime::Communicator& comm) {
  std::unique_ptr<Checkpointer> c(new Checkpointer(config, comm));
  if (!config.checkpoint().has_dir()) return c;
  absl::Status st;
  if (comm.rank() == 0) st = c->OpenDir();
  LEMRT_RETURN_IF_ERROR(runtime::AgreeOnStatus(comm, st));
  st = ProbeWritable(config.checkpoint().dir(), comm.rank());
  LEMRT_RETURN_IF_ERROR(runtime::AgreeOnStatus(comm, st));
  return c;
}

absl::Status Checkpointer::OpenDir() {
  const std::string& dir = config_.checkpoint().dir();
  LEMRT_RETURN_IF_ERROR(MakeDirs(dir));
  std::string stale;
  LEMRT_ASSIGN_OR_RETURN(lock_, DirLock::Acquire(dir, &stale));
  if (!stale.empty()) {
    LOG(WARNING) << "checkpoint: taking over the lock of '" << dir << "' from a job that ended "
                 << "without releasing it (" << stale << ")";
  }
  LEMRT_ASSIGN_OR_RETURN(const std::vector<std::string> cleaned, CleanLeftovers(dir));
  for (const std::string& line : cleaned) LOG(WARNING) << "checkpoint: " << line;
  const std::string pins_path = Join(dir, kPinsName);
  std::ifstream in(pins_path);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    Pins pins;
    if (!google::protobuf::TextFormat::ParseFromString(text.str(), &pins)) {
      LOG(WARNING) << "checkpoint: ignoring '" << pins_path << "': it does not parse";
    }
    for (const Pins::Pin& p : pins.pins()) pins_[p.step()] = p.reason();
  }
  return absl::OkStatus();
}

bool Checkpointer::Due(const config::RunConfig& config, int64_t steps_done) {
  const config::CheckpointConfig& k = config.checkpoint();
  if (!k.has_dir()) return false;
  if (steps_done == config.training().steps()) return true;
  return k.every_steps() > 0 && steps_done % k.every_steps() == 0;
}

absl::StatusOr<int64_t> Checkpointer::RestoreIfConfigured(runtime::SparseCoreStage& sparse,
                                                          runtime::TensorCoreStage& dense) {
  if (!config_.checkpoint().has_restore_from()) return 0;
  const auto t0 = Clock::now();
  LEMRT_ASSIGN_OR_RETURN(RestoreResult r, RestoreCheckpoint(config_.checkpoint().restore_from(),
                                                            config_, comm_, sparse, dense));
  const int64_t step = r.manifest.step();
  if (step > config_.training().steps()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "checkpoint '%s' is at step %d, past training.steps %d.", r.dir, step,
        config_.training().steps()));
  }
  if (comm_.rank() == 0) {
    for (const std::string& skipped : r.skipped) {
      LOG(WARNING) << "checkpoint: passed over " << skipped;
    }
    if (!r.config_changes.empty()) {
      LOG(WARNING) << "checkpoint: resuming " << r.dir << " with a changed config "
                   << "(allow_config_change): " << absl::StrJoin(r.config_changes, "; ");
    }
    if (r.manifest.format_version() < 2) {
      LOG(WARNING) << "checkpoint: " << r.dir << " has format version "
                   << r.manifest.format_version()
                   << ": its manifest has no checksum of its own, and its config is not "
                      "recorded (only seed and data source kind are compared)";
    }
    LOG(INFO) << absl::StrFormat(
        "restored %s (step %d, saved on %d ranks x %d SparseCores, model_checksum %s) in %.2f s",
        r.dir, step, r.manifest.world_size(), r.manifest.sparse_cores_per_chip(),
        r.manifest.model_checksum(), SecondsSince(t0));
  }
  return step;
}

absl::Status Checkpointer::SaveIfDue(int64_t steps_done, const runtime::SparseCoreStage& sparse,
                                     const runtime::TensorCoreStage& dense) {
  if (!Due(config_, steps_done)) return absl::OkStatus();
  return Save(steps_done, sparse, dense);
}

absl::Status Checkpointer::Save(int64_t steps_done, const runtime::SparseCoreStage& sparse,
                                const runtime::TensorCoreStage& dense) {
  if (!config_.checkpoint().has_dir()) {
    return absl::FailedPreconditionError("no checkpoint.dir (--checkpoint_dir) to save into");
  }
  const auto t0 = Clock::now();
  LEMRT_ASSIGN_OR_RETURN(SaveResult r, SaveCheckpoint(config_.checkpoint().dir(), steps_done,
                                                      config_, comm_, sparse, dense));
  last_saved_ = r.dir;
  if (comm_.rank() == 0) {
    LOG(INFO) << absl::StrFormat("checkpoint saved: %s (%.1f MB in %.2f s)", r.dir,
                                 r.bytes / 1e6, SecondsSince(t0));
    ApplyRetention(steps_done);
  }
  return absl::OkStatus();
}

void Checkpointer::ApplyRetention(int64_t just_saved) {
  const std::string& dir = config_.checkpoint().dir();
  auto published = ListPublishedSteps(dir);
  if (!published.ok()) {
    LOG(WARNING) << "checkpoint retention skipped: " << published.status().message();
    return;
  }
  std::set<int64_t> keep = {just_saved};
  for (const auto& [step, reason] : pins_) keep.insert(step);
  const CrashHook crash(just_saved, comm_.rank());
  for (int64_t step : StepsToRetire(*published, config_.checkpoint().keep_last(), keep)) {
    const absl::Status st =
        RetireStepDir(dir, step, [&crash](std::string_view point) { crash.At(point); });
    if (st.ok()) {
      LOG(INFO) << "checkpoint retention: removed " << Join(dir, StepDirName(step))
                << " (keep_last " << config_.checkpoint().keep_last() << ")";
    } else {
      LOG(WARNING) << "checkpoint retention: " << st.message();
    }
  }
}

void Checkpointer::Pin(int64_t step, const std::string& reason) {
  pins_[step] = reason;
  WritePins();
}

void Checkpointer::Unpin(int64_t step) {
  if (pins_.erase(step) > 0) WritePins();
}

void Checkpointer::WritePins() {
  if (comm_.rank() != 0 || !config_.checkpoint().has_dir()) return;
  Pins pins;
  for (const auto& [step, reason] : pins_) {
    Pins::Pin* p = pins.add_pins();
    p->set_step(step);
    p->set_reason(reason);
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(pins, &text);
  const absl::Status st = WriteFileAtomically(Join(config_.checkpoint().dir(), kPinsName), text);
  if (!st.ok()) LOG(WARNING) << "checkpoint: pins not saved: " << st.message();
}

}  // namespace lemrt::checkpoint
