// The training section: batch, steps and epochs, learning rates and their
// schedules, eval and early stop.
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/config_check.h"
#include "proto/config_loader.h"

namespace lemrt::config {
namespace {

// A learning-rate schedule (device/optimizers/lr_schedule.h) of a run of
// `steps` steps (< 0: not known yet).
void CheckSchedule(const char* name, const LearningRateScheduleConfig& s, int64_t steps,
                   ConfigErrors& errors) {
  auto at = [&](const char* f) { return FieldPath{{"training"}, {name}, {f}}; };
  using Sched = LearningRateScheduleConfig;
  if (s.warmup_steps() < 0) {
    errors.Fail(at("warmup_steps"), absl::StrCat("must be >= 0 steps, got ", s.warmup_steps()));
    return;
  }
  if (s.decay() == Sched::CONSTANT) {
    for (const char* f : {"decay_start_step", "decay_steps", "power", "end_factor"}) {
      if (s.GetReflection()->HasField(s, s.GetDescriptor()->FindFieldByName(f))) {
        errors.Fail(at(f), "is set but decay is CONSTANT (no decay); set decay: LINEAR, "
                           "POLYNOMIAL or COSINE, or remove it");
        return;
      }
    }
    return;
  }
  const int64_t start = s.has_decay_start_step() ? s.decay_start_step() : s.warmup_steps();
  if (start < s.warmup_steps()) {
    errors.Fail(at("decay_start_step"),
                absl::StrFormat("is %d, inside the warm-up (warmup_steps %d); the decay starts "
                                "at or after the warm-up's end",
                                start, s.warmup_steps()));
  } else if (s.has_decay_steps() && s.decay_steps() <= 0) {
    errors.Fail(at("decay_steps"), absl::StrCat("must be > 0 steps, got ", s.decay_steps()));
  } else if (!s.has_decay_steps() && steps >= 0 && steps - start <= 0) {
    errors.Fail(at(s.has_decay_start_step() ? "decay_start_step" : "decay"),
                absl::StrFormat("the decay would start at step %d but the run has %d steps "
                                "(training.steps or training.epochs); set decay_steps or an "
                                "earlier decay_start_step",
                                start, steps));
  } else if (!Positive(s.power())) {
    errors.Fail(at("power"), absl::StrCat("must be > 0, got ", s.power()));
  } else if (!(s.end_factor() >= 0 && s.end_factor() <= 1)) {
    errors.Fail(at("end_factor"), absl::StrCat("must be in [0, 1], got ", s.end_factor()));
  }
}

}  // namespace

void CheckLearningRateSchedules(const TrainingConfig& t, int64_t steps, ConfigErrors& errors) {
  if (t.has_learning_rate_schedule()) {
    CheckSchedule("learning_rate_schedule", t.learning_rate_schedule(), steps, errors);
  }
  if (t.has_dense_learning_rate_schedule()) {
    CheckSchedule("dense_learning_rate_schedule", t.dense_learning_rate_schedule(), steps,
                  errors);
  }
  if (t.has_embedding_learning_rate_schedule()) {
    CheckSchedule("embedding_learning_rate_schedule", t.embedding_learning_rate_schedule(), steps,
                  errors);
  }
}

// The local batch must be whole blocks: a smaller block would train another
// model than the world sizes the block was chosen for.
void CheckGradientBlock(const RunConfig& c, ConfigErrors& errors) {
  const TrainingConfig& t = c.training();
  const int64_t chips = c.topology().num_chips();
  if (!t.world_size_independent() || t.global_batch() <= 0 || chips <= 0 ||
      t.global_batch() % chips != 0) {
    return;
  }
  const int64_t block = GradientBlockSamples(t);
  const int64_t local = t.global_batch() / chips;
  if (local % block == 0) return;
  errors.Fail({{"training"}, {"gradient_block_samples"}},
              absl::StrFormat(
                  "the local batch of %d samples (global_batch %d / %d ranks) is not a whole "
                  "number of %d-sample blocks (%s); world_size_independent needs one block that "
                  "divides the local batch of every world size compared: set "
                  "gradient_block_samples to %d (divides the local batches of 1, 2, 4 and %d "
                  "ranks) or run on a world size whose local batch it divides",
                  local, t.global_batch(), chips, block,
                  t.gradient_block_samples() > 0 ? "configured" : "auto: a quarter of the batch",
                  std::gcd(block, local), chips));
}

void CheckTraining(const RunConfig& c, ConfigErrors& errors) {
  const TrainingConfig& t = c.training();
  auto at = [](const char* f) { return FieldPath{{"training"}, {f}}; };
  const int64_t total_sc = TotalSparseCores(c);
  if (t.global_batch() <= 0) {
    errors.Fail(at("global_batch"), absl::StrCat("must be > 0, got ", t.global_batch()));
  } else if (total_sc > 0 && t.global_batch() % total_sc != 0) {
    errors.Fail(at("global_batch"),
                absl::StrFormat("%d is not divisible by the total number of SparseCores %d "
                                "(%d chips x %d SparseCores per chip)",
                                t.global_batch(), total_sc, c.topology().num_chips(),
                                c.topology().sparse_cores_per_chip()));
  }
  if (t.steps() < 0) errors.Fail(at("steps"), absl::StrCat("must be >= 0, got ", t.steps()));
  if (t.has_epochs()) {
    const bool synthetic = c.data().source_case() == DataConfig::SOURCE_NOT_SET ||
                           c.data().has_synthetic();
    if (t.epochs() <= 0) {
      errors.Fail(at("epochs"), absl::StrCat("must be > 0 passes, got ", t.epochs()));
    } else if (synthetic) {
      errors.Fail(at("epochs"),
                  "needs file data (synthetic data has no end to pass over); set "
                  "training.steps instead");
    }
  }
  if (!Positive(t.dense_learning_rate())) {
    errors.Fail(at("dense_learning_rate"),
                absl::StrCat("must be a finite number > 0, got ", t.dense_learning_rate()));
  }
  if (!Positive(t.embedding_learning_rate())) {
    errors.Fail(at("embedding_learning_rate"),
                absl::StrCat("must be a finite number > 0, got ", t.embedding_learning_rate()));
  }
  if (t.has_dense_optimizer()) CheckOptimizer(at("dense_optimizer"), t.dense_optimizer(), errors);
  // With epochs the run's length follows from the training rows: the
  // trainer checks the schedules again once it is known.
  CheckLearningRateSchedules(t, t.has_epochs() ? -1 : t.steps(), errors);
  if (t.eval_every() < 0) errors.Fail(at("eval_every"), "must be >= 0");
  if (t.early_stop_evals() < 0) {
    errors.Fail(at("early_stop_evals"),
                absl::StrCat("must be >= 0, got ", t.early_stop_evals()));
  } else if (t.early_stop_evals() > 0 && t.eval_every() == 0) {
    errors.Fail(at("early_stop_evals"), "needs training.eval_every > 0 (it counts evaluations)");
  }
  if (t.eval_samples() < 0) errors.Fail(at("eval_samples"), "must be >= 0");
  if (t.has_eval_group_feature()) {
    bool known = false;
    for (const FeatureConfig& f : c.features()) known = known || f.name() == t.eval_group_feature();
    if (!known) {
      errors.Fail(at("eval_group_feature"),
                  absl::StrCat("'", t.eval_group_feature(),
                               "' is not a feature of the config (GAUC groups rows by a feature)"));
    }
  }
  if (t.log_every() < 0) errors.Fail(at("log_every"), "must be >= 0");
  if (t.gradient_block_samples() != 0 && !t.world_size_independent()) {
    errors.Fail(at("gradient_block_samples"),
                "applies only with training.world_size_independent: true (it would be ignored)");
  } else if (t.gradient_block_samples() < 0) {
    errors.Fail(at("gradient_block_samples"),
                absl::StrCat("must be >= 0 (0 = auto), got ", t.gradient_block_samples()));
  } else if (t.gradient_block_samples() > 0 && t.global_batch() > 0 &&
             t.global_batch() % t.gradient_block_samples() != 0) {
    errors.Fail(at("gradient_block_samples"),
                absl::StrCat(t.gradient_block_samples(), " does not divide global_batch ",
                             t.global_batch()));
  } else {
    CheckGradientBlock(c, errors);
  }
}

}  // namespace lemrt::config
