#include "device/sparsecore/sparse_core.h"

#include <algorithm>
#include <cstring>

#include "glog/logging.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

constexpr int kColBits = 48;

uint64_t Key(const host::CooEntry& e) {
  return (static_cast<uint64_t>(e.table) << kColBits) | static_cast<uint64_t>(e.col);
}
int KeyTable(uint64_t key) { return static_cast<int>(key >> kColBits); }
int64_t KeyCol(uint64_t key) { return static_cast<int64_t>(key & ((uint64_t{1} << kColBits) - 1)); }

bool SameGroup(const host::CooEntry& a, const host::CooEntry& b) {
  return a.feature == b.feature && a.row == b.row;
}

}  // namespace

int64_t PartialFloats(std::span<const host::CooEntry> segment, std::span<const int> table_dims) {
  int64_t floats = 0;
  for (size_t i = 0; i < segment.size(); ++i) {
    if (i == 0 || !SameGroup(segment[i - 1], segment[i])) floats += table_dims[segment[i].table];
  }
  return floats;
}

SparseCore::SparseCore(const config::RunConfig& config, int global_sc,
                       std::span<const Optimizer* const> optimizers)
    : global_sc_(global_sc) {
  const int total_sc = static_cast<int>(config::TotalSparseCores(config));
  for (int t = 0; t < config.tables_size(); ++t) {
    dims_.push_back(config.tables(t).dim());
    shards_.push_back(std::make_unique<TableShard>(config.tables(t), t, global_sc, total_sc,
                                                   config.training().seed(), *optimizers[t]));
  }
}

void SparseCore::Forward(std::span<const std::span<const host::CooEntry>> segments,
                         std::span<float* const> partials, SparseCoreStepState* state) const {
  // Dedup the partition: sort (key, entry index) and number the distinct keys.
  auto& pairs = state->sort_scratch;
  pairs.clear();
  int32_t index = 0;
  for (auto seg : segments) {
    for (const host::CooEntry& e : seg) {
      pairs.emplace_back(Key(e), index++);
    }
  }
  std::sort(pairs.begin(), pairs.end());
  state->unique_keys.clear();
  state->unique_offsets.clear();
  state->entry_unique.resize(pairs.size());
  int64_t offset = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i == 0 || pairs[i].first != pairs[i - 1].first) {
      state->unique_keys.push_back(pairs[i].first);
      state->unique_offsets.push_back(offset);
      offset += dims_[KeyTable(pairs[i].first)];
    }
    state->entry_unique[pairs[i].second] = static_cast<int32_t>(state->unique_keys.size() - 1);
  }
  state->unique_offsets.push_back(offset);

  // Combine: one partial pooled vector per (feature, row) group.
  int64_t entry = 0;
  for (size_t k = 0; k < segments.size(); ++k) {
    std::span<const host::CooEntry> seg = segments[k];
    float* out = partials[k];
    for (size_t i = 0; i < seg.size();) {
      const int dim = dims_[seg[i].table];
      const TableShard& shard = *shards_[seg[i].table];
      std::memset(out, 0, sizeof(float) * dim);
      size_t j = i;
      for (; j < seg.size() && SameGroup(seg[i], seg[j]); ++j, ++entry) {
        const float* row = shard.row(shard.LocalRow(seg[j].col));
        const float gain = seg[j].gain;
        for (int d = 0; d < dim; ++d) out[d] += gain * row[d];
      }
      out += dim;
      i = j;
    }
  }
}

void SparseCore::Backward(std::span<const std::span<const host::CooEntry>> segments,
                          std::span<const float* const> grads, SparseCoreStepState* state) {
  std::vector<float>& acc = state->grad_acc;
  acc.assign(state->unique_offsets.back(), 0.0f);
  int64_t entry = 0;
  for (size_t k = 0; k < segments.size(); ++k) {
    std::span<const host::CooEntry> seg = segments[k];
    const float* g = grads[k];
    for (size_t i = 0; i < seg.size();) {
      const int dim = dims_[seg[i].table];
      size_t j = i;
      for (; j < seg.size() && SameGroup(seg[i], seg[j]); ++j, ++entry) {
        float* a = acc.data() + state->unique_offsets[state->entry_unique[entry]];
        const float gain = seg[j].gain;
        for (int d = 0; d < dim; ++d) a[d] += gain * g[d];
      }
      g += dim;
      i = j;
    }
  }
  for (size_t u = 0; u < state->unique_keys.size(); ++u) {
    const uint64_t key = state->unique_keys[u];
    TableShard& shard = *shards_[KeyTable(key)];
    shard.Update(shard.LocalRow(KeyCol(key)),
                 std::span<const float>(acc.data() + state->unique_offsets[u], shard.dim()));
  }
}

}  // namespace lemrt::device
