#include "device/sparsecore/sparse_core.h"

#include <algorithm>
#include <cstring>

#include "device/sparsecore/key_sort.h"
#include "device/sparsecore/row_kernels.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "host/stacking.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

constexpr int kColBits = 48;
// Narrowest rows the combine may pool straight from the tables (Forward).
constexpr int kDirectPoolMinDim = 32;
// Widest row whose single-entry gradient Backward forms on the stack.
constexpr int kSingleRowFloats = 256;

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
                       std::span<const Optimizer* const> optimizers, bool initialize_tables)
    : global_sc_(global_sc),
      tiles_(std::max(1, config.topology().tiles_per_sparse_core())),
      simd_width_(std::max(1, config.topology().simd_width())),
      checks_(DebugChecks::FromConfig(config.sparse_core())),
      quantization_(TableQuantization::FromConfig(config)) {
  const int total_sc = static_cast<int>(config::TotalSparseCores(config));
  // Table stacking rotates each stack member's ids across the SparseCores
  // (host/stacking.h): this SparseCore holds the member's ids of one residue.
  const host::StackingPlan stacking = host::StackingPlan::FromConfig(config);
  for (int t = 0; t < config.tables_size(); ++t) {
    dims_.push_back(config.tables(t).dim());
    table_names_.push_back(config.tables(t).name());
    shards_.push_back(std::make_unique<TableShard>(config.tables(t), t,
                                                   stacking.ShardResidue(t, global_sc), total_sc,
                                                   config.training().seed(), *optimizers[t],
                                                   initialize_tables));
  }
}

template <typename Fn>
void SparseCore::RunTiles(int64_t n, Fn&& fn) const {
  const int tasks = static_cast<int>(std::min<int64_t>(tiles_, n));
  auto task = [&](int t) { fn(n * t / tasks, n * (t + 1) / tasks); };
  if (pool_ != nullptr) {
    pool_->Run(tasks, task);
  } else {
    for (int t = 0; t < tasks; ++t) task(t);
  }
}

void SparseCore::Forward(std::span<const std::span<const host::CooEntry>> segments,
                         std::span<float* const> partials, SparseCoreStepState* state) const {
  state->debug_status = absl::OkStatus();
  if (checks_.bounds) {
    state->debug_status = CheckBounds(segments);
    if (!state->debug_status.ok()) return;
  }
  // Dedup the partition: sort (key, entry index) and number the distinct keys.
  auto& pairs = state->sort_scratch;
  pairs.clear();
  int32_t index = 0;
  for (auto seg : segments) {
    for (const host::CooEntry& e : seg) {
      pairs.emplace_back(Key(e), index++);
    }
  }
  // Stable radix sort: the same order as std::sort of the pairs (indices ascend).
  SortByKey(&pairs, &state->sort_scratch2);
  state->unique_keys.clear();
  state->unique_offsets.clear();
  state->entry_unique.resize(pairs.size());
  state->entry_role.resize(pairs.size());
  state->unique_single.clear();
  int64_t offset = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const bool first = i == 0 || pairs[i].first != pairs[i - 1].first;
    const bool last = i + 1 == pairs.size() || pairs[i + 1].first != pairs[i].first;
    if (first) {
      state->unique_keys.push_back(pairs[i].first);
      state->unique_offsets.push_back(offset);
      state->unique_single.push_back(last);
      offset += dims_[KeyTable(pairs[i].first)];
    }
    state->entry_unique[pairs[i].second] = static_cast<int32_t>(state->unique_keys.size() - 1);
    // Equal keys keep ascending entry indices: the first is the earliest.
    state->entry_role[pairs[i].second] = first && last ? kOnlyEntry
                                         : first       ? kFirstEntry
                                                       : kAddEntry;
  }
  state->unique_offsets.push_back(offset);

  // Gather: each tile resolves its share of the unique ids to local rows
  // and, when rows are staged, copies those rows into the staging buffer
  // (tile SPMEM), one run of same-table rows at a time (keys sort by table),
  // with the fixed-dim kernels and prefetching of row_kernels.h. A table's
  // rows skip the staging copy when they are at least kDirectPoolMinDim
  // floats wide and this step's ids cover at least half of the rows between
  // its lowest and highest one, unless something must see the staged copy
  // (simulated quantization, the guard-word check of the staging buffer):
  // the combine then pools them straight from the table, which skips writing
  // and re-reading every row (2 of the 4 bytes moved per payload byte) and
  // gives the same partials bit for bit. For narrower or sparser rows the
  // gather's tight copy loop keeps more row misses in flight than the
  // combine does, and staging measured faster (bench_sparsecore, BM_Lookup
  // staged vs direct; README Performance).
  const bool stage_all = quantization_.any() || checks_.guard_words;
  std::vector<uint8_t>& stage_table = state->stage_table;
  stage_table.assign(dims_.size(), 1);
  if (!stage_all) {
    const uint64_t* keys = state->unique_keys.data();
    const size_t uniques = state->unique_keys.size();
    for (size_t u = 0; u < uniques;) {
      const int table = KeyTable(keys[u]);
      size_t end = u;
      while (end < uniques && KeyTable(keys[end]) == table) ++end;
      const TableShard& shard = *shards_[table];
      const int64_t span =
          shard.LocalRow(KeyCol(keys[end - 1])) - shard.LocalRow(KeyCol(keys[u])) + 1;
      stage_table[table] =
          dims_[table] < kDirectPoolMinDim || 2 * static_cast<int64_t>(end - u) < span;
      u = end;
    }
  }
  auto staged = [&](int table) { return stage_table[table] != 0; };
  float* gathered = nullptr;
  if (std::any_of(stage_table.begin(), stage_table.end(), [](uint8_t s) { return s != 0; })) {
    PlaceGuards(offset, &state->gathered);
    gathered = state->gathered.data() + kGuardFloats;
  }
  state->unique_rows.resize(state->unique_keys.size());
  RunTiles(static_cast<int64_t>(state->unique_keys.size()), [&](int64_t begin, int64_t end) {
    const uint64_t* keys = state->unique_keys.data();
    int64_t* rows = state->unique_rows.data();
    for (int64_t u = begin; u < end;) {
      const int table = KeyTable(keys[u]);
      const TableShard& shard = *shards_[table];
      int64_t run_end = u;
      for (; run_end < end && KeyTable(keys[run_end]) == table; ++run_end) {
        rows[run_end] = shard.LocalRow(KeyCol(keys[run_end]));
      }
      if (staged(table)) {
        GatherRows(shard.dim(), shard.row(0), rows + u, run_end - u,
                   gathered + state->unique_offsets[u]);
      }
      u = run_end;
    }
  });

  // Simulated quantization (section 13): pooling sees the quantized rows.
  if (quantization_.any()) {
    RunTiles(static_cast<int64_t>(state->unique_keys.size()), [&](int64_t begin, int64_t end) {
      quantization_.ApplyToGathered(state->unique_keys, state->unique_offsets, begin, end,
                                    gathered);
    });
  }

  // Combine: one partial pooled vector per (feature, row) group; the tiles
  // split the segments.
  state->segment_begin.resize(segments.size() + 1);
  state->segment_begin[0] = 0;
  for (size_t k = 0; k < segments.size(); ++k) {
    state->segment_begin[k + 1] = state->segment_begin[k] + static_cast<int64_t>(segments[k].size());
  }
  RunTiles(static_cast<int64_t>(segments.size()), [&](int64_t begin, int64_t end) {
    const int32_t* entry_unique = state->entry_unique.data();
    const int64_t* rows = state->unique_rows.data();
    for (int64_t k = begin; k < end; ++k) {
      std::span<const host::CooEntry> seg = segments[k];
      const int32_t* seg_unique = entry_unique + state->segment_begin[k];
      float* out = partials[k];
      size_t prefetched = 0;  // entries of seg whose table rows were prefetched
      for (size_t i = 0; i < seg.size();) {
        const int dim = dims_[seg[i].table];
        size_t j = i + 1;
        while (j < seg.size() && SameGroup(seg[i], seg[j])) ++j;
        const int64_t n = static_cast<int64_t>(j - i);
        if (staged(seg[i].table)) {
          PoolGroup(dim, seg.data() + i, seg_unique + i, n, gathered,
                    state->unique_offsets.data(), 1, out);
        } else {
          // Keep the rows of the next PrefetchRows(dim) entries in flight.
          const size_t ahead = std::min(seg.size(), j + PrefetchRows(dim));
          for (prefetched = std::max(prefetched, j); prefetched < ahead; ++prefetched) {
            const TableShard& shard = *shards_[seg[prefetched].table];
            PrefetchRow(shard.row(rows[seg_unique[prefetched]]), shard.dim());
          }
          const TableShard& shard = *shards_[seg[i].table];
          if (n == 1) {  // one-hot: the same operations as PoolGroup, fewer steps
            ScaleRow(dim, seg[i].gain, shard.row(rows[seg_unique[i]]), out);
          } else {
            PoolGroup(dim, seg.data() + i, seg_unique + i, n, shard.row(0), rows, dim, out);
          }
        }
        out += dim;
        i = j;
      }
    }
  });
  if (checks_.guard_words) state->debug_status = VerifyGuardWords(*state, "sc_forward");
  if (checks_.nan && state->debug_status.ok()) {
    std::vector<const float*> outs(partials.begin(), partials.end());
    state->debug_status =
        CheckFiniteGroups(segments, outs, "partial sums (activations)", "sc_forward", updates_);
  }
}

absl::Status SparseCore::VerifyGuardWords(const SparseCoreStepState& state,
                                          std::string_view stage) const {
  const std::string where = absl::StrFormat("%s on SparseCore %d", stage, global_sc_);
  if (!state.gathered.empty()) {
    absl::Status st = VerifyGuards(state.gathered, "gathered", where);
    if (!st.ok()) return st;
  }
  if (!state.grad_acc.empty()) return VerifyGuards(state.grad_acc, "grad_acc", where);
  return absl::OkStatus();
}

absl::Status SparseCore::CheckBounds(
    std::span<const std::span<const host::CooEntry>> segments) const {
  for (size_t k = 0; k < segments.size(); ++k) {
    for (size_t i = 0; i < segments[k].size(); ++i) {
      const host::CooEntry& e = segments[k][i];
      if (e.table < 0 || e.table >= num_tables()) {
        return absl::OutOfRangeError(absl::StrFormat(
            "bounds check: sc_forward on SparseCore %d, segment %d entry %d: table index %d is "
            "outside [0, %d)",
            global_sc_, k, i, e.table, num_tables()));
      }
      const TableShard& shard = *shards_[e.table];
      const int64_t local = e.col >= 0 ? shard.LocalRow(e.col) : -1;
      if (local < 0 || local >= shard.local_rows() || shard.GlobalRow(local) != e.col) {
        return absl::OutOfRangeError(absl::StrFormat(
            "bounds check: sc_forward on SparseCore %d, segment %d entry %d: gather index "
            "(column %d of table '%s') is not a row of this SparseCore's shard (%d local rows, "
            "the columns c with c %% N == %d)",
            global_sc_, k, i, e.col, table_names_[e.table], shard.local_rows(),
            shard.GlobalRow(0)));  // the shard's residue (rotated by table stacking)
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SparseCore::CheckFiniteGroups(
    std::span<const std::span<const host::CooEntry>> segments,
    std::span<const float* const> values, const char* what, const char* stage,
    int64_t step) const {
  for (size_t k = 0; k < segments.size(); ++k) {
    const std::span<const host::CooEntry> seg = segments[k];
    const float* v = values[k];
    for (size_t i = 0; i < seg.size();) {
      const int dim = dims_[seg[i].table];
      const int64_t bad = FirstNonFinite(std::span<const float>(v, dim));
      if (bad >= 0) {
        return absl::InternalError(absl::StrFormat(
            "NaN check: step %d, stage %s: %s of table '%s' (feature %d, sample %d, element %d) "
            "is %f on SparseCore %d",
            step, stage, what, table_names_[seg[i].table], seg[i].feature, seg[i].row, bad,
            v[bad], global_sc_));
      }
      size_t j = i;
      while (j < seg.size() && SameGroup(seg[i], seg[j])) ++j;
      v += dim;
      i = j;
    }
  }
  return absl::OkStatus();
}

void SparseCore::Backward(std::span<const std::span<const host::CooEntry>> segments,
                          std::span<const float* const> grads, SparseCoreStepState* state,
                          bool continue_step) {
  const int64_t step = continue_step && updates_ > 0 ? updates_ : ++updates_;
  state->debug_status = absl::OkStatus();
  if (checks_.nan) {
    state->debug_status =
        CheckFiniteGroups(segments, grads, "gradients", "sc_backward", step - 1);
    if (!state->debug_status.ok()) return;
  }
  // Every accumulator starts at its id's first entry, which writes it (as
  // if added to zero: ScatterGroup), so the buffer is not cleared first. An
  // id with a single entry skips the accumulator: its gain and group
  // gradient are noted for the update, which forms the same gradient
  // (ScaleRow) next to its row; with one-hot ids that halves the bytes the
  // update moves besides the rows (bench_sparsecore).
  std::vector<float>& acc_buf = state->grad_acc;
  PlaceGuards(state->unique_offsets.back(), &acc_buf);
  float* const acc = acc_buf.data() + kGuardFloats;
  state->unique_gain.resize(state->unique_keys.size());
  state->unique_grad.resize(state->unique_keys.size());
  int64_t entry = 0;
  for (size_t k = 0; k < segments.size(); ++k) {
    std::span<const host::CooEntry> seg = segments[k];
    const float* g = grads[k];
    for (size_t i = 0; i < seg.size();) {
      const int dim = dims_[seg[i].table];
      size_t j = i + 1;
      while (j < seg.size() && SameGroup(seg[i], seg[j])) ++j;
      const int32_t* group_unique = state->entry_unique.data() + entry;
      const uint8_t* group_role = state->entry_role.data() + entry;
      ScatterGroup(dim, seg.data() + i, group_unique, group_role, static_cast<int64_t>(j - i),
                   state->unique_offsets.data(), g, acc);
      for (size_t e = 0; e < j - i; ++e) {
        if (group_role[e] != kOnlyEntry) continue;
        state->unique_gain[group_unique[e]] = seg[i + e].gain;
        state->unique_grad[group_unique[e]] = g;
      }
      entry += static_cast<int64_t>(j - i);
      g += dim;
      i = j;
    }
  }
  // Each tile applies the optimizer to its share of the unique rows (local
  // rows from the gather of the same step), prefetching rows and slots ahead.
  CHECK_EQ(state->unique_rows.size(), state->unique_keys.size());
  RunTiles(static_cast<int64_t>(state->unique_keys.size()), [&](int64_t begin, int64_t end) {
    const uint64_t* keys = state->unique_keys.data();
    const int64_t* rows = state->unique_rows.data();
    // A single-entry id's gradient: here, or for wider rows in its own
    // (otherwise unused) accumulator.
    alignas(64) float single[kSingleRowFloats];
    for (int64_t u = begin; u < end; ++u) {
      TableShard& shard = *shards_[KeyTable(keys[u])];
      const int64_t next = u + PrefetchRows(shard.dim());
      if (next < end && KeyTable(keys[next]) == KeyTable(keys[u])) {
        const int64_t ahead = rows[next];
        PrefetchRow(shard.row(ahead), shard.dim(), /*for_write=*/true);
        const std::span<const float> slots = shard.row_slots(ahead);
        if (!slots.empty()) PrefetchRow(slots.data(), static_cast<int>(slots.size()), true);
      }
      float* grad = acc + state->unique_offsets[u];
      if (state->unique_single[u]) {
        if (shard.dim() <= kSingleRowFloats) grad = single;
        ScaleRow(shard.dim(), state->unique_gain[u], state->unique_grad[u], grad);
      }
      shard.Update(rows[u], std::span<const float>(grad, shard.dim()), step);
    }
  });
  if (checks_.guard_words) state->debug_status = VerifyGuardWords(*state, "sc_backward");
  if (checks_.nan && state->debug_status.ok()) {
    for (size_t u = 0; u < state->unique_keys.size(); ++u) {
      const uint64_t key = state->unique_keys[u];
      const TableShard& shard = *shards_[KeyTable(key)];
      const int64_t bad = FirstNonFinite(
          std::span<const float>(shard.row(shard.LocalRow(KeyCol(key))), shard.dim()));
      if (bad >= 0) {
        state->debug_status = absl::InternalError(absl::StrFormat(
            "NaN check: step %d, stage sc_backward: the update made row %d of table '%s' "
            "non-finite (element %d) on SparseCore %d; lower the table's learning rate",
            step - 1, KeyCol(key), table_names_[KeyTable(key)], bad, global_sc_));
        return;
      }
    }
  }
}

}  // namespace lemrt::device
