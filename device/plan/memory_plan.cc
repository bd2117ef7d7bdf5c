#include "device/plan/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/row_key.h"
#include "device/optimizers/optimizer.h"
#include "device/tensorcore/dense_model.h"
#include "glog/logging.h"
#include "layout/row_placement.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

constexpr int kFloatsPerLine = 8;  // 32-byte HBM lines
constexpr int64_t kF32 = 4;
constexpr int64_t kCooEntryBytes = 24;
constexpr int64_t kSpmemBytesPerId = 16;  // column, sample, gain, unique index

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t CeilDiv(int64_t x, int64_t m) { return (x + m - 1) / m; }

// Ids per sample of table `t` and the number of features that look it up.
std::pair<int64_t, int> TableLoad(const config::RunConfig& c, int t) {
  int64_t ids = 0;
  int features = 0;
  for (const auto& f : c.features()) {
    if (config::FindTable(c, f.table()) == t) {
      ids += f.max_sequence_length();
      ++features;
    }
  }
  return {ids, features};
}

// Elements of `element_bytes` bytes in one 32-byte HBM line.
int64_t ElementsPerLine(int64_t element_bytes) { return kFloatsPerLine * kF32 / element_bytes; }

void PlanSpmem(const config::RunConfig& c, StackPlan* sp) {
  const auto& topo = c.topology();
  const int64_t n = config::TotalSparseCores(c);
  const int64_t tiles = topo.tiles_per_sparse_core();
  sp->spmem_ids_bytes = CeilDiv(n * sp->limits.max_ids, tiles) * kSpmemBytesPerId;
  sp->spmem_unique_bytes = CeilDiv(n * sp->limits.max_unique_ids, tiles) * kF32;
  // Gathered rows move in the table's format: bf16 rows are processed
  // simd_width_bf16 at a time, at 2 bytes an element and padded to 16
  // elements (a 32-byte line).
  const bool bf16 = sp->element_bytes == 2;
  sp->simd_width = bf16 ? topo.simd_width_bf16() : topo.simd_width();
  sp->row_elements = RoundUp(sp->padded_dim, ElementsPerLine(sp->element_bytes));
  sp->spmem_rows_bytes = 2 * int64_t{sp->simd_width} * sp->row_elements * sp->element_bytes;
  sp->spmem_fixed_bytes = sp->spmem_ids_bytes + sp->spmem_unique_bytes + sp->spmem_rows_bytes;
  // Reference section 10: the batch sets the sample_count *per SparseCore*
  // (each SparseCore stages its own samples), so more chips shrink it.
  sp->gather_sample_count = CeilDiv(c.training().global_batch(), n) * sp->num_features;
  sp->gather_operand_bytes = CeilDiv(sp->gather_sample_count * sp->padded_dim * kF32, tiles);
}

// Peak of one phase: the serialized stacks run one at a time after the others
// ran together.
int64_t PeakStack(const std::vector<StackPlan>& stacks, bool forward) {
  int64_t concurrent = 0, serialized = 0;
  for (const StackPlan& s : stacks) {
    const int64_t b = forward ? s.stack_forward_bytes : s.stack_backward_bytes;
    if (s.serialized) {
      serialized = std::max(serialized, b);
    } else {
      concurrent += b;
    }
  }
  return std::max(concurrent, serialized);
}

// "table 'a'" for a stack of one, else "stack 'a+b' (tables 'a', 'b')".
std::string StackLabel(const StackPlan& s) {
  if (s.tables.size() == 1) return absl::StrFormat("table '%s'", s.table_names[0]);
  return absl::StrFormat("stack '%s' (tables '%s')", s.name,
                         absl::StrJoin(s.table_names, "', '"));
}

}  // namespace

std::string FormatBytes(int64_t b) {
  const double d = static_cast<double>(b);
  if (b >= (int64_t{1} << 30)) return absl::StrFormat("%d B (%.2f GiB)", b, d / (1 << 30));
  if (b >= (int64_t{1} << 20)) return absl::StrFormat("%d B (%.2f MiB)", b, d / (1 << 20));
  if (b >= 1024) return absl::StrFormat("%d B (%.1f KiB)", b, d / 1024);
  return absl::StrFormat("%d B", b);
}

PlanPartitionLimits PartitionLimitsForPlan(const config::RunConfig& c, int64_t ids_per_sample,
                                           int64_t rows_per_sparse_core,
                                           const layout::TableLimit& configured) {
  const int64_t n = config::TotalSparseCores(c);
  const int64_t samples_per_sc = c.training().global_batch() / n;
  PlanPartitionLimits l;
  l.max_ids = samples_per_sc * ids_per_sample;
  l.max_unique_ids = std::min(l.max_ids, rows_per_sparse_core);
  // kUnlimited (INT32_MAX) never lowers them.
  l.max_ids = std::min<int64_t>(l.max_ids, configured.max_ids);
  l.max_unique_ids = std::min<int64_t>(l.max_unique_ids, configured.max_unique_ids);
  l.max_unique_ids = std::min(l.max_unique_ids, l.max_ids);
  return l;
}

namespace {

layout::PartitionLimits LimitsWithoutFile(const config::RunConfig& c) {
  CHECK(!c.sparse_core().has_limits_file())
      << "a config with a limits_file needs the plan overloads taking resolved limits";
  auto limits = layout::ResolveLimits(c);
  CHECK(limits.ok()) << limits.status();  // only the file can fail on a validated config
  return std::move(*limits);
}

}  // namespace

PlanPartitionLimits PartitionLimitsForPlan(const config::RunConfig& c, int table) {
  return PartitionLimitsForPlan(c, TableLoad(c, table).first,
                                CeilDiv(c.tables(table).vocab_size(), config::TotalSparseCores(c)),
                                LimitsWithoutFile(c).tables[table]);
}

MemoryPlan BuildMemoryPlan(const config::RunConfig& c, int64_t dense_params) {
  return BuildMemoryPlan(c, dense_params, LimitsWithoutFile(c));
}

namespace {

// The HBM stack of a stack or table of `padded_dim` floats and `nz` ids per
// sample with `replicas` samples per chip, forward and backward (header).
int64_t StackForwardBytes(int64_t padded_dim, int64_t nz, int64_t replicas) {
  return (2 * padded_dim + 1) * nz * replicas * kF32;
}
int64_t StackBackwardBytes(int64_t padded_dim, int64_t nz, int64_t replicas) {
  return 3 * padded_dim * nz * replicas * kF32;
}

// Bytes of rows_per_chip rows of `dim` elements of `eb` bytes: padded to
// whole lines, or packed (a row of at most half a line at the next
// power-of-two width, line / width rows a line; *rows_per_line set when not
// null).
int64_t RowsBytes(int64_t rows_per_chip, int dim, int64_t eb, bool packed, int* rows_per_line) {
  const int64_t per_line = ElementsPerLine(eb);
  if (!packed || dim > per_line / 2) return rows_per_chip * RoundUp(dim, per_line) * eb;
  int width = 1;
  while (width < dim) width *= 2;
  if (rows_per_line != nullptr) *rows_per_line = static_cast<int>(per_line / width);
  return CeilDiv(rows_per_chip, per_line / width) * kFloatsPerLine * kF32;
}

// The HBM of table t on one chip; adds what packing saved to
// *packing_saved_bytes.
TablePlan PlanTable(const config::RunConfig& c, const layout::RowPlacement& placement, int t,
                    int64_t replicas, int num_chips, int64_t* packing_saved_bytes) {
  const auto& tc = c.tables(t);
  TablePlan tp;
  tp.name = tc.name();
  tp.dim = tc.dim();
  tp.element_bytes = config::IsBf16(tc.dtype()) ? 2 : 4;
  tp.slot_element_bytes = config::IsBf16(tc.slot_dtype()) ? 2 : 4;
  tp.padded_dim = static_cast<int>(RoundUp(tc.dim(), ElementsPerLine(tp.element_bytes)));
  tp.vocab_size = tc.vocab_size();
  tp.padded_vocab = placement.PaddedRows(t);
  tp.rows_per_chip = placement.RowsPerChip(t);
  const auto optimizer = CreateOptimizer(tc.optimizer(), 1.0f);
  tp.slots_per_param = optimizer->slots_per_param();
  tp.row_slots = optimizer->row_slots();
  const bool pack = c.sparse_core().pack_narrow_tables();
  auto rows_bytes = [&](int64_t eb, bool packed, int* rows_per_line) {
    return RowsBytes(tp.rows_per_chip, tc.dim(), eb, packed, rows_per_line);
  };
  tp.table_bytes = rows_bytes(tp.element_bytes, pack, &tp.rows_per_line);
  const int64_t slot_param_bytes = rows_bytes(tp.slot_element_bytes, pack, nullptr);
  *packing_saved_bytes +=
      rows_bytes(tp.element_bytes, false, nullptr) - tp.table_bytes +
      tp.slots_per_param * (rows_bytes(tp.slot_element_bytes, false, nullptr) - slot_param_bytes);
  // Per-row slots are one dense vector of rows_per_chip x row_slots
  // values, rounded up to a whole line.
  tp.slot_bytes =
      tp.slots_per_param * slot_param_bytes +
      RoundUp(tp.rows_per_chip * tp.row_slots * tp.slot_element_bytes, kFloatsPerLine * kF32);
  const int64_t unpadded_all_chips =
      tp.vocab_size * (tp.dim * tp.element_bytes +
                       (tp.dim * tp.slots_per_param + tp.row_slots) * tp.slot_element_bytes);
  tp.padding_bytes = tp.table_bytes + tp.slot_bytes - unpadded_all_chips / num_chips;
  std::tie(tp.ids_per_sample, tp.num_features) = TableLoad(c, t);
  tp.stack = placement.stacking().table(t).stack;
  tp.stack_forward_bytes = StackForwardBytes(tp.padded_dim, tp.ids_per_sample, replicas);
  tp.stack_backward_bytes = StackBackwardBytes(tp.padded_dim, tp.ids_per_sample, replicas);
  return tp;
}

// p->tables and the per-chip sums over them: tables and slots, padding,
// the hot rows' replicas and their gradient buffer
// (runtime/hot_rows/hot_row_replicas.h, all-reduced in place).
void PlanTables(const config::RunConfig& c, const layout::RowPlacement& placement, int64_t replicas,
                MemoryPlan* p) {
  int64_t hot_floats = 0;  // hot rows x (dim + 1), all tables
  for (int t = 0; t < c.tables_size(); ++t) {
    TablePlan tp = PlanTable(c, placement, t, replicas, p->num_chips, &p->packing_saved_bytes);
    p->unpadded_bytes += tp.table_bytes + tp.slot_bytes - tp.padding_bytes;
    p->tables_bytes += tp.table_bytes + tp.slot_bytes;
    p->padding_bytes += tp.padding_bytes;
    const int64_t hot = placement.HotRowCount(t);
    p->hot_rows += hot;
    p->hot_replica_bytes +=
        hot * (int64_t{tp.dim} * (1 + tp.slots_per_param) + tp.row_slots) * kF32;
    hot_floats += hot * (tp.dim + 1);
    p->tables.push_back(std::move(tp));
  }
  p->hot_gradient_bytes = hot_floats * kF32;
}

// p->stacks: the stack, SPMEM and gather operand of each stack with the
// stack's limits, then which stacks are serialized and the peak stack.
void PlanStacks(const config::RunConfig& c, const layout::RowPlacement& placement,
                const layout::PartitionLimits& limits, int64_t replicas, MemoryPlan* p) {
  const layout::StackingPlan& stacking = placement.stacking();
  const layout::PartitionLimits stack_limits = layout::StackLimits(limits, stacking);
  for (int s = 0; s < stacking.num_stacks(); ++s) {
    const layout::TableStack& stack = stacking.stacks()[s];
    StackPlan sp;
    sp.name = stack.name;
    sp.tables = stack.tables;
    sp.padded_dim = stack.padded_dim;
    sp.element_bytes = p->tables[stack.tables[0]].element_bytes;  // members share it
    sp.rows_per_sparse_core = stack.rows / placement.total_sparse_cores();
    for (int t : stack.tables) {
      sp.table_names.push_back(p->tables[t].name);
      sp.ids_per_sample += p->tables[t].ids_per_sample;
      sp.num_features += p->tables[t].num_features;
    }
    sp.limits = PartitionLimitsForPlan(c, sp.ids_per_sample, sp.rows_per_sparse_core,
                                       stack_limits.tables[s]);
    sp.stack_forward_bytes = StackForwardBytes(sp.padded_dim, sp.ids_per_sample, replicas);
    sp.stack_backward_bytes = StackBackwardBytes(sp.padded_dim, sp.ids_per_sample, replicas);
    PlanSpmem(c, &sp);
    p->spmem_bytes_per_tile = std::max(p->spmem_bytes_per_tile, sp.spmem_bytes());
    p->stacks.push_back(std::move(sp));
  }
  p->stack_bytes_unserialized = std::max(PeakStack(p->stacks, true), PeakStack(p->stacks, false));
  // The serialized stacks are the ones with the largest stack.
  std::vector<int> order(p->stacks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return p->stacks[a].stack_backward_bytes + p->stacks[a].stack_forward_bytes >
           p->stacks[b].stack_backward_bytes + p->stacks[b].stack_forward_bytes;
  });
  const int serialized = std::min<int>(
      c.sparse_core().xla_sc_num_serialized_tables_to_optimize_hbm(), order.size());
  for (int i = 0; i < serialized; ++i) p->stacks[order[i]].serialized = true;
  p->stack_bytes = std::max(PeakStack(p->stacks, true), PeakStack(p->stacks, false));
}

// The heap: the dense model and its optimizer, the host inputs in the
// prefetch queue and the activations of the steps in flight.
void PlanHeap(const config::RunConfig& c, int64_t dense_params, int64_t replicas, MemoryPlan* p) {
  const int64_t dense_slot_floats =
      CreateOptimizer(c.training().dense_optimizer(), 1.0f)->SlotFloats(dense_params);
  p->heap_dense_bytes = (dense_params * 2 + dense_slot_floats) * kF32;
  p->dense_params = dense_params;
  p->dense_model = DescribeInteraction(DenseModelSpecFromConfig(c));
  int64_t ids_per_sample = 0, activation_width = 0;
  for (const auto& f : c.features()) {
    ids_per_sample += f.max_sequence_length();
    activation_width += c.tables(config::FindTable(c, f.table())).dim();
  }
  p->host_inputs_per_step =
      replicas * ((int64_t{c.model().num_dense_features()} + 1) * kF32 + ids_per_sample * kCooEntryBytes);
  p->activations_per_step = replicas * activation_width * kF32 * 2;
  p->host_queue_items = std::max(1, c.sparse_core().maximum_parallel_iterations());
  p->in_flight_steps = c.sparse_core().disable_full_embedding_pipelining() ? 1 : 2;
  p->prefetch_depth = p->host_queue_items + p->in_flight_steps;
  p->heap_inputs_bytes =
      p->host_inputs_per_step * p->prefetch_depth + p->activations_per_step * p->in_flight_steps;
  p->heap_bytes = p->heap_dense_bytes + p->heap_inputs_bytes;
}

}  // namespace

MemoryPlan BuildMemoryPlan(const config::RunConfig& c, int64_t dense_params,
                           const layout::PartitionLimits& limits) {
  const auto& topo = c.topology();
  MemoryPlan p;
  p.num_chips = topo.num_chips();
  p.sparse_cores_per_chip = topo.sparse_cores_per_chip();
  p.tiles_per_sparse_core = topo.tiles_per_sparse_core();
  p.hbm_bytes = topo.hbm_bytes();
  p.spmem_bytes_per_tile_limit = topo.spmem_bytes_per_tile();
  // Samples per chip per step: logical_replica_count (header).
  const int64_t replicas = c.training().global_batch() / p.num_chips;
  const layout::RowPlacement placement = layout::RowPlacement::FromConfig(c);
  PlanTables(c, placement, replicas, &p);
  PlanStacks(c, placement, limits, replicas, &p);
  PlanHeap(c, dense_params, replicas, &p);
  p.hbm_bytes_per_chip = p.tables_bytes + p.stack_bytes + p.heap_bytes + p.hot_replica_bytes +
                         p.hot_gradient_bytes;
  return p;
}

absl::StatusOr<MemoryPlan> BuildMemoryPlan(const config::RunConfig& c) {
  // Counted from the model's description: a full-size model is not built.
  auto dense_params = CountDenseParams(DenseModelSpecFromConfig(c));
  if (!dense_params.ok()) return dense_params.status();
  auto limits = layout::ResolveLimits(c);
  if (!limits.ok()) return limits.status();
  return BuildMemoryPlan(c, *dense_params, *limits);
}

absl::Status CheckMemoryPlan(const MemoryPlan& p) {
  const int64_t spmem = p.spmem_bytes_per_tile_limit;
  for (const StackPlan& s : p.stacks) {
    const bool alone = s.tables.size() == 1;
    const int64_t stack_rows = s.rows_per_sparse_core * p.num_chips * p.sparse_cores_per_chip;
    if (!alone && stack_rows > base::kMaxKeyRows) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s holds %d rows (its members' rows padded to the SparseCores), more than the 2^48 "
          "= %d rows a row key holds (base/row_key.h); split the stack "
          "(sparse_core.table_stacks / disable_table_stacking)",
          StackLabel(s), stack_rows, base::kMaxKeyRows));
    }
    if (s.spmem_fixed_bytes > spmem) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "Fixed size allocations (%d bytes) do not fit in TileSpmem (%d bytes) for %s: "
          "ids %d B (max_ids_per_partition %d x %d partitions / %d tiles x %d B) + unique ids "
          "%d B (max_unique_ids_per_partition %d) + gathered-row buffers %d B; lower the "
          "%s max_ids_per_partition / max_unique_ids_per_partition (sparse_core "
          "max_ids_per_table / max_unique_ids_per_table) or training.global_batch%s",
          s.spmem_fixed_bytes, spmem, StackLabel(s), s.spmem_ids_bytes, s.limits.max_ids,
          p.num_chips * p.sparse_cores_per_chip, p.tiles_per_sparse_core, kSpmemBytesPerId,
          s.spmem_unique_bytes, s.limits.max_unique_ids, s.spmem_rows_bytes,
          alone ? "table's" : "members'",
          alone ? "" : " (a stack's limit is its largest member's), or split the stack "
                       "(sparse_core.table_stacks / disable_table_stacking)"));
    }
    if (s.spmem_bytes() > spmem) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "Gather operand too large for %s: sample_count %d x feature_width %d floats "
          "x 4 B / %d tiles = %d bytes per tile, but TileSpmem (%d bytes) has %d bytes left "
          "after the fixed allocations (%d bytes); lower training.global_batch or use more "
          "chips%s",
          StackLabel(s), s.gather_sample_count, s.padded_dim, p.tiles_per_sparse_core,
          s.gather_operand_bytes, spmem, spmem - s.spmem_fixed_bytes, s.spmem_fixed_bytes,
          alone ? "" : absl::StrFormat(", or split the stack (its %d features are looked up "
                                       "as one batch: sparse_core.table_stacks / "
                                       "disable_table_stacking)",
                                       s.num_features)));
    }
  }
  if (p.hbm_bytes_per_chip > p.hbm_bytes) {
    std::vector<const TablePlan*> by_size;
    for (const TablePlan& t : p.tables) by_size.push_back(&t);
    std::sort(by_size.begin(), by_size.end(), [](const TablePlan* a, const TablePlan* b) {
      return a->table_bytes + a->slot_bytes > b->table_bytes + b->slot_bytes;
    });
    std::vector<std::string> largest;
    for (size_t i = 0; i < std::min<size_t>(3, by_size.size()); ++i) {
      largest.push_back(absl::StrFormat("table '%s' %s (with %s slot(s))", by_size[i]->name,
                                        FormatBytes(by_size[i]->table_bytes + by_size[i]->slot_bytes),
                                        SlotLabel(*by_size[i])));
    }
    const char* biggest_part =
        p.tables_bytes >= std::max(p.stack_bytes, p.heap_bytes)
            ? "tables and slots dominate: shrink vocab_size / dim, use an optimizer with fewer "
              "slots, or use more chips"
        : p.stack_bytes >= p.heap_bytes
            ? "the stack dominates: raise sparse_core.xla_sc_num_serialized_tables_to_optimize_hbm "
              "(stacks run one after another) or lower training.global_batch"
            : "the heap dominates: lower training.global_batch, "
              "sparse_core.maximum_parallel_iterations (host queue) or disable pipelining "
              "(in-flight steps)";
    return absl::ResourceExhaustedError(absl::StrFormat(
        "HBM out of memory on each chip: needs %s but hbm_bytes is %s; tables+slots %s, stack "
        "%s (peak), heap %s (dense %s, prefetched inputs %s: prefetch depth %d); largest items: "
        "%s; %s",
        FormatBytes(p.hbm_bytes_per_chip), FormatBytes(p.hbm_bytes), FormatBytes(p.tables_bytes),
        FormatBytes(p.stack_bytes), FormatBytes(p.heap_bytes), FormatBytes(p.heap_dense_bytes),
        FormatBytes(p.heap_inputs_bytes), p.prefetch_depth, absl::StrJoin(largest, ", "),
        biggest_part));
  }
  return absl::OkStatus();
}

std::string SlotLabel(const TablePlan& t) {
  if (t.row_slots > 0 && t.slots_per_param == 0) return absl::StrFormat("%d/row", t.row_slots);
  if (t.row_slots > 0) return absl::StrFormat("%d+%d/row", t.slots_per_param, t.row_slots);
  return absl::StrFormat("%d", t.slots_per_param);
}

}  // namespace lemrt::device
