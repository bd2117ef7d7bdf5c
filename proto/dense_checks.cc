// The dense inputs of data.schema: transform, clip, normalization statistics
// and missing-value indicators (docs/data.md "Dense inputs").
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/config_check.h"
#include "proto/config_loader.h"

namespace lemrt::config {
namespace {

constexpr char kStatsHint[] =
    "; lemrt_vocab --config=... --out_dir=DIR writes the dense lines with their statistics to "
    "DIR/dense_stats.pbtxt";

void CheckClip(const FieldPath& at, const DenseInput& d, ConfigErrors& errors) {
  auto field = [&](const char* name) {
    FieldPath p = at;
    p.push_back({name});
    return p;
  };
  if (d.has_clip_min() && !std::isfinite(d.clip_min())) {
    errors.Fail(field("clip_min"), "must be a finite number");
  }
  if (d.has_clip_max() && !std::isfinite(d.clip_max())) {
    errors.Fail(field("clip_max"), "must be a finite number");
  }
  if (d.has_clip_min() && d.has_clip_max() && !(d.clip_min() <= d.clip_max())) {
    errors.Fail(field("clip_max"),
                absl::StrFormat("is %g, below clip_min %g", d.clip_max(), d.clip_min()));
  }
}

void CheckNormalize(const FieldPath& at, const DenseInput& d, ConfigErrors& errors) {
  auto field = [&](const char* name) {
    FieldPath p = at;
    p.push_back({name});
    return p;
  };
  const bool standardize = d.normalize() == DenseInput::STANDARDIZE;
  const bool min_max = d.normalize() == DenseInput::MIN_MAX;
  struct Statistic {
    bool set;
    const char* name;
    DenseInput::Normalize reader;
  };
  for (const Statistic& st : {Statistic{d.has_mean(), "mean", DenseInput::STANDARDIZE},
                              Statistic{d.has_stddev(), "stddev", DenseInput::STANDARDIZE},
                              Statistic{d.has_minimum(), "minimum", DenseInput::MIN_MAX},
                              Statistic{d.has_maximum(), "maximum", DenseInput::MIN_MAX}}) {
    if (st.set && d.normalize() != st.reader) {
      errors.Fail(
          field(st.name),
          absl::StrCat("dense input '", d.name(), "': ", st.name, " is read only with normalize: ",
                       DenseInput::Normalize_Name(st.reader), "; set that or remove it"));
    }
  }
  if (standardize) {
    if (!d.has_mean() || !d.has_stddev()) {
      errors.Fail(field("normalize"),
                  absl::StrCat("dense input '", d.name(), "': STANDARDIZE needs mean and stddev",
                               kStatsHint));
    } else if (!std::isfinite(d.mean()) || !Positive(d.stddev()) ||
               !std::isfinite(static_cast<float>(1 / d.stddev()))) {
      errors.Fail(field("stddev"),
                  absl::StrFormat("dense input '%s': STANDARDIZE needs a finite mean and a "
                                  "stddev > 0, got mean %g, stddev %g (1 / stddev must be a "
                                  "finite float: stddev >= 3e-39; a constant input carries "
                                  "nothing; remove it or leave it unnormalized)",
                                  d.name(), d.mean(), d.stddev()));
    }
  }
  if (min_max) {
    if (!d.has_minimum() || !d.has_maximum()) {
      errors.Fail(field("normalize"),
                  absl::StrCat("dense input '", d.name(), "': MIN_MAX needs minimum and maximum",
                               kStatsHint));
    } else if (!std::isfinite(d.minimum()) || !std::isfinite(d.maximum()) ||
               !(d.minimum() < d.maximum()) ||
               !std::isfinite(static_cast<float>(1 / (d.maximum() - d.minimum())))) {
      errors.Fail(field("maximum"),
                  absl::StrFormat("dense input '%s': MIN_MAX needs finite minimum < maximum, "
                                  "got %g and %g (1 / (maximum - minimum) must be a finite float)",
                                  d.name(), d.minimum(), d.maximum()));
    }
  }
}

}  // namespace

void CheckDenseInput(const FieldPath& at, const DenseInput& d, bool binary_source,
                     ConfigErrors& errors) {
  CheckClip(at, d, errors);
  CheckNormalize(at, d, errors);
  if (d.missing_indicator() && binary_source) {
    FieldPath p = at;
    p.push_back({"missing_indicator"});
    errors.Fail(p, absl::StrCat("dense input '", d.name(),
                                "': binary files store a missing value as its default_value, "
                                "so they cannot tell it apart; read the text or TFRecord files "
                                "for missing-value indicators"));
  }
}

int ModelDenseInputs(const InputSchema& schema) {
  int inputs = schema.dense_size();
  for (const DenseInput& d : schema.dense()) inputs += d.missing_indicator() ? 1 : 0;
  return inputs;
}

}  // namespace lemrt::config
