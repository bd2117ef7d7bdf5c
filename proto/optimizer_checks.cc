// Optimizer parameters, wherever an OptimizerConfig appears: learning rate,
// Adagrad, row-wise Adagrad (tables only), weight decay, Adam and FTRL.
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "proto/config_check.h"

namespace lemrt::config {
namespace {

void CheckAdamAndFtrl(const FieldPath& path, const OptimizerConfig& o, ConfigErrors& errors) {
  auto fail = [&](const char* kind, const char* field, std::string message) {
    FieldPath p = path;
    p.push_back({kind});
    p.push_back({field});
    errors.Fail(p, std::move(message));
  };
  auto in_unit = [](float b) { return b >= 0 && b < 1; };
  if (o.has_adam()) {
    const auto& a = o.adam();
    if (!in_unit(a.beta1()))
      fail("adam", "beta1", absl::StrCat("must be in [0, 1), got ", a.beta1()));
    if (!in_unit(a.beta2()))
      fail("adam", "beta2", absl::StrCat("must be in [0, 1), got ", a.beta2()));
    if (!Positive(a.epsilon()))
      fail("adam", "epsilon", absl::StrCat("must be > 0, got ", a.epsilon()));
  }
  if (o.has_ftrl()) {
    const auto& f = o.ftrl();
    if (path.front().field != "tables") {
      FieldPath p = path;
      p.push_back({"ftrl"});
      errors.Fail(
          p, "FTRL is for embedding tables only; use sgd, adagrad or adam for dense parameters");
      return;
    }
    if (!(std::isfinite(f.learning_rate_power()) && f.learning_rate_power() <= 0)) {
      fail("ftrl", "learning_rate_power",
           absl::StrCat("must be a finite number <= 0, got ", f.learning_rate_power()));
    }
    if (!Positive(f.initial_accumulator())) {
      fail("ftrl", "initial_accumulator",
           absl::StrCat("must be > 0, got ", f.initial_accumulator()));
    }
    if (!(f.l1() >= 0)) fail("ftrl", "l1", absl::StrCat("must be >= 0, got ", f.l1()));
    if (!(f.l2() >= 0)) fail("ftrl", "l2", absl::StrCat("must be >= 0, got ", f.l2()));
    if (!(f.beta() >= 0)) fail("ftrl", "beta", absl::StrCat("must be >= 0, got ", f.beta()));
  }
}

void CheckRowwiseAdagradAndWeightDecay(const FieldPath& path, const OptimizerConfig& o,
                                       ConfigErrors& errors) {
  auto at = [&](std::initializer_list<const char*> fields) {
    FieldPath p = path;
    for (const char* f : fields) p.push_back({f});
    return p;
  };
  if (o.has_rowwise_adagrad()) {
    const auto& r = o.rowwise_adagrad();
    if (path.front().field != "tables") {
      errors.Fail(at({"rowwise_adagrad"}),
                  "row-wise Adagrad is for embedding tables only (one accumulator per row); use "
                  "sgd, adagrad or adam for dense parameters");
    } else if (!FiniteNonNegative(r.initial_accumulator())) {
      errors.Fail(at({"rowwise_adagrad", "initial_accumulator"}),
                  absl::StrCat("must be a finite number >= 0, got ", r.initial_accumulator()));
    } else if (!Positive(r.epsilon())) {
      errors.Fail(at({"rowwise_adagrad", "epsilon"}),
                  absl::StrCat("must be > 0, got ", r.epsilon()));
    }
  }
  if (!FiniteNonNegative(o.weight_decay())) {
    errors.Fail(at({"weight_decay"}),
                absl::StrCat("must be a finite number >= 0 (0 = none), got ", o.weight_decay()));
  } else if (o.weight_decay() > 0 && o.has_ftrl()) {
    errors.Fail(at({"weight_decay"}),
                "FTRL regularises with its own l2 (ftrl.l2); remove weight_decay");
  }
}

}  // namespace

void CheckOptimizer(const FieldPath& path, const OptimizerConfig& o, ConfigErrors& errors) {
  if (o.has_learning_rate() && !Positive(o.learning_rate())) {
    FieldPath p = path;
    p.push_back({"learning_rate"});
    errors.Fail(p, absl::StrCat("must be a finite number > 0, got ", o.learning_rate()));
    return;
  }
  if (o.has_adagrad()) {
    auto fail = [&](const char* field, std::string message) {
      FieldPath p = path;
      p.push_back({"adagrad"});
      p.push_back({field});
      errors.Fail(p, std::move(message));
    };
    // 0 (PyTorch's and TorchRec's default) is fine: epsilon keeps the first
    // update's division finite.
    const float initial = o.adagrad().initial_accumulator();
    if (!FiniteNonNegative(initial)) {
      fail("initial_accumulator", absl::StrCat("must be a finite number >= 0, got ", initial));
    }
    if (!Positive(o.adagrad().epsilon())) {
      fail("epsilon", absl::StrCat("must be a finite number > 0 (it guards the division by the "
                                   "accumulator's square root), got ",
                                   o.adagrad().epsilon()));
    }
  }
  CheckRowwiseAdagradAndWeightDecay(path, o, errors);
  CheckAdamAndFtrl(path, o, errors);
}

}  // namespace lemrt::config
