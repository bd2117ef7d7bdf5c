// What lets a run survive a failure: the checkpoint section (where and how
// often to save, what to keep, where to restore from) and the collective
// watchdog that aborts a job whose collective hangs.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "proto/config_check.h"

namespace lemrt::config {

void CheckCheckpoint(const RunConfig& c, ConfigErrors& errors) {
  if (!c.has_checkpoint()) return;
  const CheckpointConfig& k = c.checkpoint();
  if (k.keep_best() && (!k.has_dir() || c.training().eval_every() == 0)) {
    errors.Fail({{"checkpoint"}, {"keep_best"}},
                "needs checkpoint.dir and training.eval_every > 0 (it keeps the checkpoint of "
                "the best evaluation)");
  }
  if (k.has_dir() && k.dir().empty()) {
    errors.Fail({{"checkpoint"}, {"dir"}}, "is empty; name a directory or leave it unset");
  }
  if (k.has_restore_from() && k.restore_from().empty()) {
    errors.Fail({{"checkpoint"}, {"restore_from"}},
                "is empty; name a directory or leave it unset");
  }
  if (k.every_steps() < 0) {
    errors.Fail({{"checkpoint"}, {"every_steps"}},
                absl::StrCat("must be >= 0, got ", k.every_steps()));
  } else if (k.every_steps() > 0 && !k.has_dir()) {
    errors.Fail({{"checkpoint"}, {"every_steps"}},
                "is set but checkpoint.dir is not (nowhere to save)");
  }
  if (k.keep_last() < 0) {
    errors.Fail({{"checkpoint"}, {"keep_last"}},
                absl::StrCat("must be >= 0 (0 keeps every checkpoint), got ", k.keep_last()));
  }
}

void CheckWatchdog(const RunConfig& c, ConfigErrors& errors) {
  const double timeout_s = c.watchdog().collective_timeout_s();
  if (timeout_s < 0 || !std::isfinite(timeout_s)) {
    errors.Fail({{"watchdog"}, {"collective_timeout_s"}},
                absl::StrCat("must be a finite number of seconds >= 0 (0 turns the watchdog "
                             "off), got ",
                             timeout_s));
  }
}

}  // namespace lemrt::config
