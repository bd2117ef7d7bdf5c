#include "host/input/dense_stats.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"

namespace lemrt::host {

void DenseMoments::Add(double x) {
  ++count;
  const double delta = x - mean;
  mean += delta / count;
  m2 += delta * (x - mean);
  min = std::min(min, x);
  max = std::max(max, x);
}

void DenseMoments::Merge(const DenseMoments& other) {
  missing += other.missing;
  if (other.count == 0) return;
  if (count == 0) {
    const int64_t kept_missing = missing;
    *this = other;
    missing = kept_missing;
    return;
  }
  const double n = static_cast<double>(count) + other.count;
  const double delta = other.mean - mean;
  mean += delta * other.count / n;
  m2 += other.m2 + delta * delta * count * other.count / n;
  count += other.count;
  min = std::min(min, other.min);
  max = std::max(max, other.max);
}

double DenseMoments::stddev() const { return count > 0 ? std::sqrt(m2 / count) : 0; }

void AccumulateDense(const Schema& schema, const ParsedSample& sample,
                     std::vector<DenseMoments>* moments) {
  for (size_t k = 0; k < schema.dense.size(); ++k) {
    DenseMoments& m = (*moments)[k];
    if (sample.dense_missing[k]) {
      ++m.missing;
    } else {
      m.Add(schema.dense[k].Clip(sample.dense[k]));
    }
  }
}

namespace {

// One line of text format for `in`.
std::string OneLine(const config::DenseInput& in) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  std::string text;
  printer.PrintToString(in, &text);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

std::string DenseStatsLines(const config::InputSchema& schema,
                            const std::vector<DenseMoments>& moments) {
  std::string out;
  for (int k = 0; k < schema.dense_size(); ++k) {
    const DenseMoments& m = moments[k];
    config::DenseInput in = schema.dense(k);
    if (in.normalize() == config::DenseInput::NORMALIZE_NONE) {
      in.set_normalize(config::DenseInput::STANDARDIZE);
    }
    in.clear_mean();
    in.clear_stddev();
    in.clear_minimum();
    in.clear_maximum();
    absl::StrAppendFormat(&out, "# %s: %d values, %d missing", in.name(), m.count, m.missing);
    if (m.count > 0) {
      absl::StrAppendFormat(&out, "; mean %.9g stddev %.9g min %.9g max %.9g", m.mean, m.stddev(),
                            m.min, m.max);
    }
    if (m.count == 0 || !(m.max > m.min)) {
      absl::StrAppend(&out, m.count == 0 ? " (no values" : " (a constant",
                      ": left unnormalized)\n");
      in.clear_normalize();
    } else if (in.normalize() == config::DenseInput::STANDARDIZE) {
      out += "\n";
      in.set_mean(m.mean);
      in.set_stddev(m.stddev());
    } else {
      out += "\n";
      in.set_minimum(m.min);
      in.set_maximum(m.max);
    }
    absl::StrAppend(&out, "dense { ", OneLine(in), " }\n");
  }
  return out;
}

std::string DenseScaleWarning(const Schema& schema, const Batch& batch) {
  std::vector<std::string> loud;
  for (size_t k = 0; k < schema.dense.size(); ++k) {
    if (schema.dense[k].normalized) continue;
    double squares = 0, peak = 0;
    int64_t rows = 0;
    for (int64_t i = 0; i < batch.num_samples; ++i) {
      if (batch.mask[i] == 0) continue;
      const double x = batch.dense[i * batch.num_dense + k];
      squares += x * x;
      peak = std::max(peak, std::abs(x));
      ++rows;
    }
    const double rms = rows > 0 ? std::sqrt(squares / rows) : 0;
    if (rms > kSaturatingDenseRms) {
      loud.push_back(absl::StrFormat("'%s' (root mean square %.4g, largest |x| %.4g)",
                                     schema.dense[k].name, rms, peak));
    }
  }
  if (loud.empty()) return "";
  return absl::StrFormat(
      "dense input%s %s of the first training batch %s far above unit scale: the bottom MLP's "
      "first layer multiplies %s as it comes, so its outputs and the model's logits start "
      "saturated. Normalize: run lemrt_vocab --config=... --out_dir=DIR and use the dense lines "
      "of DIR/dense_stats.pbtxt (normalize: STANDARDIZE with their mean and stddev), or set "
      "transform: LOG1P for counts (docs/data.md \"Dense inputs\").",
      loud.size() > 1 ? "s" : "", absl::StrJoin(loud, ", "), loud.size() > 1 ? "are" : "is",
      loud.size() > 1 ? "them" : "it");
}

}  // namespace lemrt::host
