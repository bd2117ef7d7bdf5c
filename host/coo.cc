#include "host/coo.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "host/radix_sort.h"
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
  // Staged entries are written by index into buffers sized for every id (an
  // upper bound of the entries after dedup), without push_back's checks.
  int64_t ids_upper = 0;
  for (int f = 0; f < batch.num_features(); ++f) {
    ids_upper += static_cast<int64_t>(batch.ids[f].size());
  }
  if (static_cast<int64_t>(staged_.size()) < ids_upper) {
    staged_.resize(ids_upper);
    staged_dest_.resize(ids_upper);
  }
  CooEntry* const staged = staged_.data();
  int32_t* const staged_segment = staged_dest_.data();
  int64_t n_staged = 0;
  // col % N is a mask for the usual power-of-two N (no division per id).
  const bool pow2 = (N & (N - 1)) == 0;
  const int64_t n_mask = int64_t{N} - 1;
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
        // The bound check comes before the sort: the radix sort orders ids
        // as unsigned, which is their order once all are in [0, vocab_size).
        int64_t lowest = sorted_[0], highest = sorted_[0];
        for (const int64_t id : sorted_) {
          lowest = std::min(lowest, id);
          highest = std::max(highest, id);
        }
        if (lowest < 0 || highest >= spec.vocab_size) {
          const int64_t bad = lowest < 0 ? lowest : highest;
          return absl::InvalidArgumentError(absl::StrFormat(
              "id %d of feature %d (table %d) in sample %d of the local batch is outside the "
              "table's vocabulary [0, %d) (feature '%s', table '%s'; the id bound check "
              "sparse_core.enable_id_bound_check is on)",
              bad, f, spec.table, row, spec.vocab_size, spec.name, spec.table_name));
        }
        if (sort_scratch_.size() < sorted_.size()) sort_scratch_.resize(sorted_.size());
        RadixSortKeys(
            std::span<uint64_t>(reinterpret_cast<uint64_t*>(sorted_.data()), sorted_.size()),
            sort_scratch_);
        const double n = static_cast<double>(ids.size());
        const double norm = spec.combiner == config::TableConfig::MEAN    ? 1.0 / n
                            : spec.combiner == config::TableConfig::SQRTN ? 1.0 / std::sqrt(n)
                                                                          : 1.0;
        for (size_t i = 0; i < sorted_.size();) {
          size_t j = i + 1;
          while (j < sorted_.size() && sorted_[j] == sorted_[i]) ++j;
          const int64_t col = sorted_[i];
          int dest = static_cast<int>(pow2 ? (col & n_mask) : (col % N)) + spec.sc_shift;
          if (dest >= N) dest -= N;
          const int32_t segment = dest * S + s;
          staged[n_staged] = {col, static_cast<int32_t>(row), f, spec.table,
                              static_cast<float>((j - i) * norm)};
          staged_segment[n_staged++] = segment;
          ++counts[segment + 1];
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
  out->entries.resize(n_staged);
  CooEntry* const entries = out->entries.data();
  int64_t* const cursor = cursor_.data();
  for (int64_t i = 0; i < n_staged; ++i) entries[cursor[staged_segment[i]]++] = staged[i];
  out->ids_after_dedup = n_staged;
  return absl::OkStatus();
}

}  // namespace lemrt::host
