#include "host/input/batch_filler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "glog/logging.h"

namespace lemrt::host {
namespace {

// The largest dense input magnitude (after its transform) the model takes:
// 2^64. The model's float arithmetic squares its inputs' scale (products in
// the MLPs and the feature interaction), and a square beyond 2^128 is no
// float (3.4e38): such an input turns the loss and the parameters into inf
// and NaN, blamed on the learning rates.
constexpr double kMaxDenseMagnitude = 0x1p64;

}  // namespace

BatchFiller::BatchFiller(std::shared_ptr<const Schema> schema)
    : schema_(std::move(schema)), counts_(schema_->features.size()) {}

void BatchFiller::Start(int64_t samples, Batch* batch) const {
  batch->Resize(samples, schema_->model_dense, static_cast<int>(schema_->features.size()),
                schema_->num_tasks());
  batch->teacher_prob.clear();
  batch->mask.assign(samples, 0.0f);
}

absl::Status BatchFiller::Check(const ParsedSample& sample) const {
  for (int t = 0; t < schema_->num_tasks(); ++t) {
    const float label = sample.labels[t];
    const bool unlabelled = std::isnan(label) && schema_->labels[t].optional;
    if (!unlabelled && !(label >= 0 && label <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("label '%s' is %g; labels must be numbers in [0, 1]",
                          schema_->labels[t].key, label));
    }
  }
  for (size_t k = 0; k < schema_->dense.size(); ++k) {
    if (!std::isfinite(sample.dense[k])) {
      return absl::InvalidArgumentError(
          absl::StrFormat("dense input '%s' is %g; inputs must be finite numbers",
                          schema_->dense[k].name, sample.dense[k]));
    }
    if (std::abs(double{sample.dense[k]}) > kMaxDenseMagnitude) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dense input '%s' is %g, beyond +-2^64 = 1.8e19, where the model's float arithmetic "
          "overflows (its square is beyond the float range); scale it, or set its transform: "
          "LOG1P",
          schema_->dense[k].name, sample.dense[k]));
    }
  }
  for (size_t c = 0; c < schema_->sparse.size(); ++c) {
    const std::vector<float>& w = sample.weights[c];
    if (!schema_->sparse[c].weighted()) continue;
    if (w.size() != sample.values[c].size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "sparse input '%s' has %d values but %d weights", schema_->sparse[c].key,
          sample.values[c].size(), w.size()));
    }
    for (float x : w) {
      if (!std::isfinite(x)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "a weight of sparse input '%s' is %g; weights must be finite numbers",
            schema_->sparse[c].key, x));
      }
    }
  }
  LEMRT_RETURN_IF_ERROR(CheckIds(sample));
  if (schema_->truncate_sequences) return absl::OkStatus();
  for (const FeatureInput& in : schema_->features) {
    const size_t n = sample.values[in.sparse].size();
    if (n > static_cast<size_t>(in.max_length)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s' has %d values, more than its max_sequence_length %d (raise it, or set "
          "data.schema.sequence_overflow: OVERFLOW_TRUNCATE to keep the first %d)",
          in.name, n, in.max_length, in.max_length));
    }
  }
  return absl::OkStatus();
}

absl::Status BatchFiller::CheckIds(const ParsedSample& sample) const {
  if (!schema_->check_id_range) return absl::OkStatus();
  for (const FeatureInput& in : schema_->features) {
    if (in.mapping != Mapping::kId) continue;
    const std::vector<uint64_t>& values = sample.values[in.sparse];
    const size_t n = std::min(values.size(), static_cast<size_t>(in.max_length));
    for (size_t i = 0; i < n; ++i) {
      const int64_t id = static_cast<int64_t>(values[i]);
      if (id >= 0 && id < in.rows) continue;
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s' has id %d, outside the rows [0, %d) of its table '%s' (mapping: ID; "
          "sparse_core.enable_id_bound_check: false wraps ids into range instead)",
          in.name, id, in.rows, in.table_name));
    }
  }
  return absl::OkStatus();
}

absl::Status BatchFiller::Append(const ParsedSample& sample, int64_t row, Batch* batch,
                                 bool count) {
  DCHECK_LT(row, batch->num_samples);
  if (absl::Status st = Check(sample); !st.ok()) return st;
  std::copy(sample.labels.begin(), sample.labels.end(),
            batch->labels.begin() + row * batch->num_tasks);
  float* dense = batch->dense.data() + row * batch->num_dense;
  int indicator = static_cast<int>(schema_->dense.size());
  for (size_t k = 0; k < schema_->dense.size(); ++k) {
    const DenseColumn& d = schema_->dense[k];
    dense[k] = d.ModelValue(sample.dense[k]);
    if (d.missing_indicator) dense[indicator++] = sample.dense_missing[k] ? 1.0f : 0.0f;
  }
  batch->mask[row] = 1.0f;
  for (size_t f = 0; f < schema_->features.size(); ++f) {
    const FeatureInput& in = schema_->features[f];
    const std::vector<uint64_t>& values = sample.values[in.sparse];
    const std::vector<float>& weights = sample.weights[in.sparse];
    const bool weighted = schema_->sparse[in.sparse].weighted();
    const size_t n = std::min(values.size(), static_cast<size_t>(in.max_length));
    std::vector<int64_t>& ids = batch->ids[f];
    FeatureCounts& counts = counts_[f];
    if (count) {
      counts.values += static_cast<int64_t>(values.size());
      counts.truncated += static_cast<int64_t>(values.size() - n);
    }
    for (size_t i = 0; i < n; ++i) {
      const uint64_t key = values[i];
      int64_t id;
      switch (in.mapping) {
        case Mapping::kId:
          id = static_cast<int64_t>(key);
          break;
        case Mapping::kVocabulary: {
          const int64_t entry = in.vocabulary->Find(key);
          if (entry >= 0) {
            id = in.num_oov_buckets + entry;
          } else {
            if (count) ++counts.oov;
            if (in.num_oov_buckets == 0) continue;
            id = HashedRow(key, in.table, in.num_oov_buckets);
          }
          break;
        }
        case Mapping::kHash:
        default:
          id = HashedRow(key, in.table, in.rows);
          break;
      }
      ids.push_back(id);
      if (weighted) batch->weights[f].push_back(weights[i]);
    }
    batch->offsets[f][row + 1] = static_cast<int64_t>(ids.size());
  }
  return absl::OkStatus();
}

void BatchFiller::AppendEmpty(int64_t row, Batch* batch) const {
  std::fill_n(batch->labels.begin() + row * batch->num_tasks, batch->num_tasks, 0.0f);
  std::fill_n(batch->dense.begin() + row * batch->num_dense, batch->num_dense, 0.0f);
  batch->mask[row] = 0.0f;
  for (int f = 0; f < batch->num_features(); ++f) {
    batch->offsets[f][row + 1] = static_cast<int64_t>(batch->ids[f].size());
  }
}

}  // namespace lemrt::host
