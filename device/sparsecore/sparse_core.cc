#include "device/sparsecore/sparse_core.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/row_key.h"
#include "device/sparsecore/partition_dedup.h"
#include "device/sparsecore/row_kernels.h"
#include "device/sparsecore/row_kernels_bf16.h"
#include "device/sparsecore/table_major_runs.h"
#include "glog/logging.h"
#include "layout/row_placement.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

// Narrowest rows the combine may pool straight from the tables (Forward):
// the narrowest with a fixed-dim one-hot loop that stores whole lines.
constexpr int kDirectPoolMinDim = 16;
// Most bytes of one table's unique rows in a partition that the combine
// pools straight from the table although its ids repeat and are sparse: a
// table's rows are read while all segments' groups of it are pooled
// (TableMajorRuns), and rows up to this size stay in a core's L2 meanwhile.
constexpr int64_t kDirectPoolMaxBytes = int64_t{1} << 20;
// Partials at least this large (an upper bound per segment: entries x the
// first entry's dim) are written with non-temporal stores in one-hot groups;
// smaller ones stay in the caches for the exchange that reads them next.
constexpr int64_t kStreamPartialBytes = int64_t{4} << 20;
// Staging buffers above this size are prefetched by the combine.
constexpr int64_t kStagedPrefetchBytes = int64_t{1} << 20;
// Widest row whose single-entry gradient Backward forms on the stack.
constexpr int kSingleRowFloats = 256;

int KeyTable(uint64_t key) { return base::RowKeyTable(key); }
int64_t KeyCol(uint64_t key) { return base::RowKeyRow(key); }

using layout::SameGroup;

}  // namespace

int64_t PartialFloats(std::span<const layout::CooEntry> segment, std::span<const int> table_dims) {
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
      checks_(DebugChecks::FromConfig(config.sparse_core())),
      quantization_(TableQuantization::FromConfig(config)) {
  // This SparseCore holds each table's placed rows of one residue mod N
  // (layout/row_placement.h: table stacking rotates the residue per member).
  const layout::RowPlacement placement = layout::RowPlacement::FromConfig(config);
  for (int t = 0; t < config.tables_size(); ++t) {
    dims_.push_back(config.tables(t).dim());
    table_names_.push_back(config.tables(t).name());
    shards_.push_back(std::make_unique<TableShard>(
        config.tables(t), t, placement.ShardResidue(t, global_sc), placement.total_sparse_cores(),
        config.training().seed(), *optimizers[t], initialize_tables, placement.permutation(t)));
  }
  table_lr_.resize(shards_.size());
  table_keys_.resize(shards_.size());
  // Feature-major sums only matter where two features share a table (an
  // id's entries then come from several features).
  std::vector<int> features_of_table(config.tables_size(), 0);
  for (const auto& f : config.features()) ++features_of_table[config::FindTable(config, f.table())];
  feature_major_ = config.training().world_size_independent() &&
                   std::any_of(features_of_table.begin(), features_of_table.end(),
                               [](int n) { return n > 1; });
}

template <typename Fn>
void SparseCore::RunTiles(int64_t n, Fn&& fn) const {
  const int tasks = static_cast<int>(std::min<int64_t>(tiles_, n));
  auto task = [&](int t) { fn(n * t / tasks, n * (t + 1) / tasks); };
  RunOnPool(pool_, tasks, task);
}

void SparseCore::Forward(std::span<const std::span<const layout::CooEntry>> segments,
                         std::span<float* const> partials, SparseCoreStepState* state) const {
  NumberIds(segments, state);
  Lookup(segments, partials, state);
}

void SparseCore::NumberIds(std::span<const std::span<const layout::CooEntry>> segments,
                           SparseCoreStepState* state) const {
  state->debug_status = absl::OkStatus();
  if (checks_.bounds) {
    state->debug_status = CheckBounds(segments);
    if (!state->debug_status.ok()) return;
  }
  DedupPartition(segments, dims_, shards_, state, feature_major_);
  ChooseStagedTables(state);
}

void SparseCore::Lookup(std::span<const std::span<const layout::CooEntry>> segments,
                        std::span<float* const> partials, SparseCoreStepState* state) const {
  if (!state->debug_status.ok()) return;  // a bounds failure: no row is read
  float* gathered = GatherStagedRows(state);
  RoundGatheredRows(gathered, state);
  Combine(segments, gathered, partials, state);
  CheckForwardOutputs(segments, partials, state);
}

// Gather (ChooseStagedTables, GatherStagedRows): when rows are staged,
// each tile copies its share of the unique ids' rows (local rows from the
// numbering) into the staging buffer (tile SPMEM), one run of same-table
// rows at a time (keys sort by table), with the fixed-dim kernels and
// prefetching of row_kernels.h. A table's rows skip the staging copy when
// they are at least kDirectPoolMinDim floats wide and either every id of the
// table is distinct in this partition (one-hot features), or this step's ids
// cover at least half of the rows between its lowest and highest one, or its
// unique rows take at most kDirectPoolMaxBytes (the combine pools a table's
// runs of all segments one after the other, so a repeated row is then read
// from memory once and from the caches after), unless something must see the
// staged copy (simulated quantization, the guard-word check of the staging
// buffer): the combine then pools them straight from the table, which skips
// writing and re-reading every row (2 of the 4 bytes moved per payload byte)
// and gives the same partials bit for bit. Sparse ids with repeats whose
// rows would not stay in the caches stay staged: each repeated row then
// comes from DRAM once, while distinct spread ids gain from the one-hot
// loop's (PoolSingleRun) prefetching (the measurements: docs/performance.md,
// "SparseCore kernels"). Rows under 16 floats have no fixed-dim one-hot loop.
// BF16 tables are pooled in place whatever their ids (PoolGroupBf16 widens
// in registers): staging would write and re-read 4 bytes per element for
// each 2 read (BM_MultiHot/4/8/0/1; docs/performance.md).
void SparseCore::ChooseStagedTables(SparseCoreStepState* state) const {
  const bool stage_all = quantization_.any() || checks_.guard_words || int8_lookups_;
  std::vector<uint8_t>& stage_table = state->stage_table;
  stage_table.assign(dims_.size(), 1);
  if (!stage_all) {
    const uint64_t* keys = state->unique_keys.data();
    const int64_t* rows = state->unique_rows.data();
    const std::vector<int64_t>& runs = state->table_runs;
    for (size_t r = 0; r + 1 < runs.size(); ++r) {
      const int64_t u = runs[r], end = runs[r + 1];
      const int table = KeyTable(keys[u]);
      const int64_t span = rows[end - 1] - rows[u] + 1;
      const uint8_t* single = state->unique_single.data();
      const bool distinct = std::all_of(single + u, single + end, [](uint8_t s) { return s != 0; });
      const bool cached = (end - u) * shards_[table]->row_bytes() <= kDirectPoolMaxBytes;
      stage_table[table] = !shards_[table]->bf16() && (dims_[table] < kDirectPoolMinDim ||
                                                       (!distinct && !cached && 2 * (end - u) < span));
    }
  }
}

float* SparseCore::GatherStagedRows(SparseCoreStepState* state) const {
  const int64_t offset = state->unique_offsets.back();
  const std::vector<uint8_t>& stage_table = state->stage_table;
  auto staged = [&](int table) { return stage_table[table] != 0; };
  float* gathered = nullptr;
  if (std::any_of(stage_table.begin(), stage_table.end(), [](uint8_t s) { return s != 0; })) {
    PlaceGuards(offset, &state->gathered);
    gathered = state->gathered.data() + kGuardFloats;
    RunTiles(static_cast<int64_t>(state->unique_keys.size()), [&](int64_t begin, int64_t end) {
      const uint64_t* keys = state->unique_keys.data();
      const int64_t* rows = state->unique_rows.data();
      for (int64_t u = begin; u < end;) {
        const int table = KeyTable(keys[u]);
        int64_t run_end = u + 1;
        while (run_end < end && KeyTable(keys[run_end]) == table) ++run_end;
        if (staged(table)) {
          const TableShard& shard = *shards_[table];
          float* out = gathered + state->unique_offsets[u];
          if (shard.bf16()) {
            GatherRowsBf16(shard.dim(), shard.row_bf16(0), rows + u, run_end - u, out);
          } else {
            GatherRows(shard.dim(), shard.row(0), rows + u, run_end - u, out);
          }
        }
        u = run_end;
      }
    });
  }
  return gathered;
}

void SparseCore::RoundGatheredRows(float* gathered, SparseCoreStepState* state) const {
  // Post-training int8 evaluation: pooling sees each row's int8 round trip.
  if (int8_lookups_) {
    RunTiles(static_cast<int64_t>(state->unique_keys.size()), [&](int64_t begin, int64_t end) {
      const uint64_t* keys = state->unique_keys.data();
      for (int64_t u = begin; u < end; ++u) {
        Int8RoundTripRow(std::span<float>(gathered + state->unique_offsets[u],
                                          dims_[KeyTable(keys[u])]));
      }
    });
  }

  // Simulated quantization (section 13): pooling sees the quantized rows.
  if (quantization_.any()) {
    RunTiles(static_cast<int64_t>(state->unique_keys.size()), [&](int64_t begin, int64_t end) {
      quantization_.ApplyToGathered(state->unique_keys, state->unique_offsets, begin, end,
                                    gathered);
    });
  }
}

// Combine: one partial pooled vector per (feature, row) group, table by
// table (TableMajorRuns: a table's rows stay in the caches while every
// segment's groups of it are pooled); the tiles split the runs. Per-table
// values are looked up per run, not per entry; runs of one-entry groups
// (one-hot features) go through one tight fixed-dim loop (PoolSingleRun). A
// segment whose partials may exceed kStreamPartialBytes writes those with
// non-temporal stores: an output far larger than the caches is then not
// read from memory before being overwritten.
void SparseCore::Combine(std::span<const std::span<const layout::CooEntry>> segments,
                         const float* gathered, std::span<float* const> partials,
                         SparseCoreStepState* state) const {
  const int64_t offset = state->unique_offsets.back();
  const std::vector<uint8_t>& stage_table = state->stage_table;
  const std::vector<SegmentRun>& runs = state->runs;
  RunTiles(static_cast<int64_t>(runs.size()), [&](int64_t begin, int64_t end) {
    const int32_t* entry_unique = state->entry_unique.data();
    const int64_t* rows = state->unique_rows.data();
    const int64_t* unique_offsets = state->unique_offsets.data();
    bool streamed = false;
    // Staged rows come from the caches; only a staging buffer larger than
    // a core's L2 gains from prefetching them.
    const bool prefetch_staged = offset * static_cast<int64_t>(sizeof(float)) > kStagedPrefetchBytes;
    for (int64_t r = begin; r < end; ++r) {
      const SegmentRun& run = runs[r];
      std::span<const layout::CooEntry> seg = segments[run.segment];
      const int32_t* seg_unique = entry_unique + state->segment_begin[run.segment];
      float* out = partials[run.segment] + run.floats;
      const bool stream = static_cast<int64_t>(seg.size()) * dims_[seg[0].table] *
                              static_cast<int64_t>(sizeof(float)) >=
                          kStreamPartialBytes;
      streamed |= stream;
      const int table = run.table;
      const int dim = dims_[table];
      const bool table_staged = stage_table[table] != 0;
      const TableShard& shard = *shards_[table];
      const float* table_rows = table_staged || shard.bf16() ? nullptr : shard.row(0);
      const uint16_t* table_rows_bf16 =
          !table_staged && shard.bf16() ? shard.row_bf16(0) : nullptr;  // pooled in place
      const size_t ahead_rows = PrefetchRows(shard.bf16() ? (dim + 1) / 2 : dim);
      const size_t run_end = static_cast<size_t>(run.end);
      // Keeps the rows (staged or in the table) of the next ahead_rows
      // entries after `j` in flight.
      size_t prefetched = static_cast<size_t>(run.begin);
      auto prefetch_after = [&](size_t j) {
        const size_t ahead = std::min(run_end, j + ahead_rows);
        for (prefetched = std::max(prefetched, j); prefetched < ahead; ++prefetched) {
          const int32_t u = seg_unique[prefetched];
          if (table_staged) {
            PrefetchRow(gathered + unique_offsets[u], dim);
          } else {
            PrefetchBytes(shard.row_address(rows[u]), shard.row_bytes());
          }
        }
      };
      for (size_t i = static_cast<size_t>(run.begin); i < run_end;) {
        size_t j = i + 1;
        while (j < run_end && seg[j].row == seg[i].row) ++j;
        const int64_t n = static_cast<int64_t>(j - i);
        if (table_staged) {
          if (prefetch_staged) prefetch_after(j);
          PoolGroup(dim, seg.data() + i, seg_unique + i, n, gathered, unique_offsets, 1, out);
        } else if (table_rows_bf16 != nullptr) {
          prefetch_after(j);
          PoolGroupBf16(dim, seg.data() + i, seg_unique + i, n, table_rows_bf16, rows, out);
        } else {
          prefetch_after(j);
          if (n == 1) {  // one-hot: the same operations as PoolGroup, fewer steps
            // The run of one-entry groups of this feature run that starts here.
            const int64_t single = PoolSingleRun(dim, stream, seg.data() + i,
                                                 static_cast<int64_t>(run_end - i),
                                                 seg_unique + i, rows, table_rows, out);
            if (single > 0) {
              i += single;
              out += single * dim;
              prefetched = std::max(prefetched, i);
              continue;
            }
            ScaleRow(dim, seg[i].gain, table_rows + rows[seg_unique[i]] * dim, out);
          } else {
            PoolGroup(dim, seg.data() + i, seg_unique + i, n, table_rows, rows, dim, out);
          }
        }
        out += dim;
        i = j;
      }
    }
    if (streamed) StreamFence();
  });
}

void SparseCore::CheckForwardOutputs(std::span<const std::span<const layout::CooEntry>> segments,
                                     std::span<float* const> partials,
                                     SparseCoreStepState* state) const {
  if (checks_.guard_words) state->debug_status = VerifyGuardWords(*state, "sc_forward");
  if (checks_.nan && state->debug_status.ok()) {
    std::vector<const float*> outs(partials.begin(), partials.end());
    state->debug_status =
        CheckFiniteGroups(segments, outs, "partial sums (activations)", "sc_forward", updates_);
  }
}

void SparseCore::DedupForBackward(std::span<const std::span<const layout::CooEntry>> segments,
                                  SparseCoreStepState* state) const {
  DedupPartition(segments, dims_, shards_, state, feature_major_);
}

void SparseCore::Backward(std::span<const std::span<const layout::CooEntry>> segments,
                          std::span<const float* const> grads, SparseCoreStepState* state,
                          bool continue_step) {
  CHECK(!int8_lookups_) << "SparseCore::Backward with int8 lookups on (evaluation only)";
  const int64_t step = continue_step && updates_ > 0 ? updates_ : ++updates_;
  state->debug_status = absl::OkStatus();
  if (checks_.nan) {
    state->debug_status =
        CheckFiniteGroups(segments, grads, "gradients", "sc_backward", step - 1);
    if (!state->debug_status.ok()) return;
  }
  ScatterAndUpdate(segments, grads, step, state);
  if (checks_.guard_words) state->debug_status = VerifyGuardWords(*state, "sc_backward");
  if (checks_.nan && state->debug_status.ok()) state->debug_status = CheckUpdatedRows(step, *state);
}

const float* SparseCore::ScatterSegmentGroups(std::span<const layout::CooEntry> seg, int64_t entry,
                                              int64_t begin, int64_t end, const float* g,
                                              float* acc, SparseCoreStepState* state) const {
  for (int64_t i = begin; i < end;) {
    const int dim = dims_[seg[i].table];
    int64_t j = i + 1;
    while (j < end && SameGroup(seg[i], seg[j])) ++j;
    const int32_t* group_unique = state->entry_unique.data() + entry;
    const uint8_t* group_role = state->entry_role.data() + entry;
    if (j - i == 1 && group_role[0] == kOnlyEntry) {
      // One-hot: no accumulator, and the gradient is read by the update.
      state->unique_gain[group_unique[0]] = seg[i].gain;
      state->unique_grad[group_unique[0]] = g;
      ++entry;
      g += dim;
      i = j;
      continue;
    }
    ScatterGroup(dim, seg.data() + i, group_unique, group_role, j - i, state->unique_offsets.data(),
                 g, acc);
    for (int64_t e = 0; e < j - i; ++e) {
      if (group_role[e] != kOnlyEntry) continue;
      state->unique_gain[group_unique[e]] = seg[i + e].gain;
      state->unique_grad[group_unique[e]] = g;
    }
    entry += j - i;
    g += dim;
    i = j;
  }
  return g;
}

void SparseCore::ScatterAndUpdate(std::span<const std::span<const layout::CooEntry>> segments,
                                  std::span<const float* const> grads, int64_t step,
                                  SparseCoreStepState* state) {
  // Table by table (TableMajorRuns): the scatter of every segment's
  // gradients of one table into its accumulators, then the update of its
  // unique rows, while those accumulators are still in the caches. Every
  // accumulator starts at its id's first entry, which writes it (as if added
  // to zero: ScatterGroup), so the buffer is not cleared first. An id with a
  // single entry skips the accumulator: its gain and group gradient are
  // noted for the update, which forms the same gradient (ScaleRow) next to
  // its row (what it saves: docs/performance.md, "SparseCore kernels"). The
  // runs of a table come in the order the dedup numbered its entries (entry
  // order, or feature-major), so each id's sum is in that order.
  std::vector<float>& acc_buf = state->grad_acc;
  PlaceGuards(state->unique_offsets.back(), &acc_buf);
  float* const acc = acc_buf.data() + kGuardFloats;
  const int64_t uniques = static_cast<int64_t>(state->unique_keys.size());
  CHECK_EQ(static_cast<int64_t>(state->unique_rows.size()), uniques);
  state->unique_gain.resize(uniques);
  state->unique_grad.resize(uniques);
  // Each table's scheduled learning rate for this step, once.
  for (size_t t = 0; t < shards_.size(); ++t) {
    table_lr_[t] = shards_[t]->optimizer().LearningRateAt(step);
    if (shards_[t]->bf16() || shards_[t]->bf16_slots()) {
      table_keys_[t] = shards_[t]->StepRoundingKeys(step);
    }
  }
  // table_runs and the runs both go table by table: table r's runs start at
  // run_begin[r].
  const std::vector<SegmentRun>& runs = state->runs;
  const std::vector<int64_t>& table_runs = state->table_runs;
  const int64_t tables = static_cast<int64_t>(table_runs.size()) - 1;
  std::vector<int64_t>& run_begin = state->table_run_begin;
  run_begin.resize(std::max<int64_t>(tables, 0) + 1);
  size_t c = 0;
  for (int64_t r = 0; r < tables; ++r) {
    run_begin[r] = static_cast<int64_t>(c);
    const int table = KeyTable(state->unique_keys[table_runs[r]]);
    while (c < runs.size() && runs[c].table == table) ++c;
  }
  run_begin[std::max<int64_t>(tables, 0)] = static_cast<int64_t>(c);
  CHECK_EQ(c, runs.size()) << "SparseCore::Backward: runs and unique ids disagree on the tables";
  RunTiles(tables, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t i = run_begin[r]; i < run_begin[r + 1]; ++i) {
        const SegmentRun& run = runs[i];
        ScatterSegmentGroups(segments[run.segment], state->segment_begin[run.segment] + run.begin,
                             run.begin, run.end, grads[run.segment] + run.floats, acc, state);
      }
      UpdateRows(table_runs[r], table_runs[r + 1], step, acc, state);
    }
  });
}

void SparseCore::UpdateRows(int64_t begin, int64_t end, int64_t step, float* acc,
                            SparseCoreStepState* state) {
  // The optimizer on unique rows [begin, end) of one table, prefetching rows
  // and slots ahead.
  if (begin == end) return;
  const uint64_t* keys = state->unique_keys.data();
  const int64_t* rows = state->unique_rows.data();
  const int table = KeyTable(keys[begin]);
  TableShard& shard = *shards_[table];
  const int dim = shard.dim();
  const float lr = table_lr_[table];
  const TableShard::RoundingKeys& rounding = table_keys_[table];
  // As many bytes in flight for bf16 rows (half the bytes) as for fp32 ones.
  const int64_t ahead_rows = PrefetchRows(shard.bf16() ? (dim + 1) / 2 : dim);
  // A single-entry id's gradient: here, or for wider rows in its own
  // (otherwise unused) accumulator.
  alignas(64) float single[kSingleRowFloats];
  for (int64_t u = begin; u < end; ++u) {
    const int64_t next = u + ahead_rows;
    if (next < end) {
      const int64_t ahead = rows[next];
      PrefetchBytes(shard.row_address(ahead), shard.row_bytes(), /*for_write=*/true);
      if (shard.slot_stride() > 0) {
        PrefetchBytes(shard.slots_address(ahead), shard.slots_bytes_per_row(), true);
      }
      if (state->unique_single[next]) PrefetchRow(state->unique_grad[next], dim);
    }
    float* grad = acc + state->unique_offsets[u];
    if (state->unique_single[u]) {
      if (dim <= kSingleRowFloats) grad = single;
      ScaleRow(dim, state->unique_gain[u], state->unique_grad[u], grad);
    }
    shard.Update(rows[u], std::span<const float>(grad, dim), step, lr, rounding);
  }
}

absl::Status SparseCore::CheckUpdatedRows(int64_t step, const SparseCoreStepState& state) const {
  std::vector<float> row;
  for (const uint64_t key : state.unique_keys) {
    const TableShard& shard = *shards_[KeyTable(key)];
    row.resize(shard.dim());
    shard.ReadRows(shard.LocalRow(KeyCol(key)), 1, row.data());
    const int64_t bad = FirstNonFinite(row);
    if (bad >= 0) {
      return absl::InternalError(absl::StrFormat(
          "NaN check: step %d, stage sc_backward: the update made row %d of table '%s' "
          "non-finite (element %d) on SparseCore %d; lower the table's learning rate",
          step - 1, KeyCol(key), table_names_[KeyTable(key)], bad, global_sc_));
    }
  }
  return absl::OkStatus();
}

}  // namespace lemrt::device
