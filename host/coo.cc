#include "host/coo.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "host/stacking.h"
#include "proto/config_loader.h"

namespace lemrt::host {

CooOptions MakeCooOptions(const config::RunConfig& config) {
  CooOptions o;
  o.local_sparse_cores = config.topology().sparse_cores_per_chip();
  o.total_sparse_cores = static_cast<int>(config::TotalSparseCores(config));
  o.max_ids_per_chip_per_sample = config.sparse_core().max_ids_per_chip_per_sample();
  o.id_bound_check = config.sparse_core().enable_id_bound_check();
  const StackingPlan stacking = StackingPlan::FromConfig(config);
  for (const config::FeatureConfig& f : config.features()) {
    FeatureSpec spec;
    spec.table = config::FindTable(config, f.table());
    spec.vocab_size = config.tables(spec.table).vocab_size();
    spec.combiner = config.tables(spec.table).combiner();
    spec.name = f.name();
    spec.table_name = config.tables(spec.table).name();
    spec.sc_shift = stacking.table(spec.table).sc_shift;
    o.features.push_back(spec);
  }
  return o;
}

absl::Status CooBuilder::Build(const Batch& batch, PartitionedCoo* out) {
  const int S = options_.local_sparse_cores;
  const int N = options_.total_sparse_cores;
  const int64_t B = batch.num_samples;
  const int64_t per_sc = B / S;
  out->local_sparse_cores = S;
  out->total_sparse_cores = N;
  out->segment_offsets.assign(int64_t{N} * S + 1, 0);
  out->ids_total = 0;
  staged_.clear();
  staged_dest_.clear();
  sample_ids_.assign(B, 0);
  std::vector<int64_t>& counts = out->segment_offsets;  // counts at [k + 1] first

  for (int s = 0; s < S; ++s) {
    for (int f = 0; f < static_cast<int>(options_.features.size()); ++f) {
      const FeatureSpec& spec = options_.features[f];
      for (int64_t row = s * per_sc; row < (s + 1) * per_sc; ++row) {
        std::span<const int64_t> ids = batch.SampleIds(f, row);
        if (ids.empty()) continue;
        out->ids_total += static_cast<int64_t>(ids.size());
        sorted_.assign(ids.begin(), ids.end());
        if (!options_.id_bound_check) {
          for (int64_t& id : sorted_) {
            id %= spec.vocab_size;
            if (id < 0) id += spec.vocab_size;
          }
        }
        std::sort(sorted_.begin(), sorted_.end());
        if (sorted_.front() < 0 || sorted_.back() >= spec.vocab_size) {
          const int64_t bad = sorted_.front() < 0 ? sorted_.front() : sorted_.back();
          return absl::InvalidArgumentError(absl::StrFormat(
              "id %d of feature %d (table %d) in sample %d of the local batch is outside the "
              "table's vocabulary [0, %d) (feature '%s', table '%s'; the id bound check "
              "sparse_core.enable_id_bound_check is on)",
              bad, f, spec.table, row, spec.vocab_size, spec.name, spec.table_name));
        }
        const double n = static_cast<double>(ids.size());
        const double norm = spec.combiner == config::TableConfig::MEAN    ? 1.0 / n
                            : spec.combiner == config::TableConfig::SQRTN ? 1.0 / std::sqrt(n)
                                                                          : 1.0;
        for (size_t i = 0; i < sorted_.size();) {
          size_t j = i + 1;
          while (j < sorted_.size() && sorted_[j] == sorted_[i]) ++j;
          const int64_t col = sorted_[i];
          int dest = static_cast<int>(col % N) + spec.sc_shift;
          if (dest >= N) dest -= N;
          staged_.push_back({col, static_cast<int32_t>(row), f, spec.table,
                             static_cast<float>((j - i) * norm)});
          staged_dest_.push_back(dest);
          ++counts[int64_t{dest} * S + s + 1];
          ++sample_ids_[row];
          i = j;
        }
      }
    }
  }
  for (int64_t row = 0; row < B; ++row) {
    if (sample_ids_[row] > options_.max_ids_per_chip_per_sample) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "sample %d of the local batch has %d ids over all features after dedup, above "
          "max_ids_per_chip_per_sample = %d; raise the limit in sparse_core",
          row, sample_ids_[row], options_.max_ids_per_chip_per_sample));
    }
  }
  for (size_t k = 1; k < counts.size(); ++k) counts[k] += counts[k - 1];
  // Stable scatter: staged order within a (dest, src) segment is already
  // (feature, row, col) because sources, features and rows were walked in order.
  cursor_.assign(counts.begin(), counts.end() - 1);
  out->entries.resize(staged_.size());
  for (size_t i = 0; i < staged_.size(); ++i) {
    const int src = static_cast<int>(staged_[i].row / per_sc);
    out->entries[cursor_[int64_t{staged_dest_[i]} * S + src]++] = staged_[i];
  }
  out->ids_after_dedup = static_cast<int64_t>(staged_.size());
  return absl::OkStatus();
}

}  // namespace lemrt::host
