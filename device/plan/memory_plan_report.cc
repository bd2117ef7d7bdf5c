#include "device/plan/memory_plan_report.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lemrt::device {

void FillMemoryStats(const MemoryPlan& p, summary::MemoryStats* out) {
  out->set_hbm_bytes_per_chip(static_cast<double>(p.hbm_bytes_per_chip));
  out->set_hbm_stack_bytes(static_cast<double>(p.stack_bytes));
  out->set_hbm_heap_bytes(static_cast<double>(p.heap_bytes));
  out->set_spmem_bytes_per_tile(static_cast<double>(p.spmem_bytes_per_tile));
  out->set_padding_bytes(static_cast<double>(p.padding_bytes));
  out->set_hbm_table_bytes(static_cast<double>(p.tables_bytes));
  out->set_hbm_capacity_bytes(static_cast<double>(p.hbm_bytes));
  out->set_packing_saved_bytes(static_cast<double>(p.packing_saved_bytes));
  out->set_prefetch_depth(p.prefetch_depth);
  out->set_in_flight_steps(p.in_flight_steps);
  out->clear_stacks();
  for (const StackPlan& s : p.stacks) {
    summary::StackMemoryStats* o = out->add_stacks();
    o->set_name(s.name);
    for (const std::string& t : s.table_names) o->add_tables(t);
    o->set_padded_dim(s.padded_dim);
    o->set_features(s.num_features);
    o->set_ids_per_sample(static_cast<double>(s.ids_per_sample));
    o->set_max_ids_per_partition(static_cast<double>(s.limits.max_ids));
    o->set_max_unique_ids_per_partition(static_cast<double>(s.limits.max_unique_ids));
    o->set_spmem_fixed_bytes(static_cast<double>(s.spmem_fixed_bytes));
    o->set_gather_operand_bytes(static_cast<double>(s.gather_operand_bytes));
    o->set_spmem_bytes_per_tile(static_cast<double>(s.spmem_bytes()));
    o->set_stack_forward_bytes(static_cast<double>(s.stack_forward_bytes));
    o->set_stack_backward_bytes(static_cast<double>(s.stack_backward_bytes));
    o->set_serialized(s.serialized);
  }
}

namespace {

// "  (bf16 rows, fp32 slots)" for a table with a bf16 part, else "".
std::string FormatDtypes(const TablePlan& t) {
  if (t.element_bytes == 4 && t.slot_element_bytes == 4) return "";
  return absl::StrFormat("  (%s rows, %s slots)", t.element_bytes == 2 ? "bf16" : "fp32",
                         t.slot_element_bytes == 2 ? "bf16" : "fp32");
}

}  // namespace

std::string FormatMemoryPlan(const MemoryPlan& p) {
  std::string out = absl::StrFormat(
      "Memory plan per chip (%d chips x %d SparseCores x %d tiles)\n", p.num_chips,
      p.sparse_cores_per_chip, p.tiles_per_sparse_core);
  absl::StrAppend(&out, absl::StrFormat("%-12s %6s %6s %12s %12s %5s %16s %16s %14s %12s %12s\n",
                                        "table", "dim", "padded", "vocab", "padded_vocab",
                                        "slots", "table_bytes", "slot_bytes", "padding",
                                        "stack_fwd", "stack_bwd"));
  for (const TablePlan& t : p.tables) {
    const int64_t alloc = t.table_bytes + t.slot_bytes;
    absl::StrAppend(
        &out, absl::StrFormat("%-12s %6d %6d %12d %12d %5s %16d %16d %8d %4.1f%% %12d %12d%s%s\n",
                              t.name, t.dim, t.padded_dim, t.vocab_size, t.padded_vocab,
                              SlotLabel(t), t.table_bytes, t.slot_bytes, t.padding_bytes,
                              alloc > 0 ? 100.0 * t.padding_bytes / alloc : 0.0,
                              t.stack_forward_bytes, t.stack_backward_bytes,
                              t.rows_per_line > 1
                                  ? absl::StrFormat("  (packed, %d rows per line)", t.rows_per_line)
                                  : "",
                              FormatDtypes(t)));
  }
  absl::StrAppend(&out, absl::StrFormat(
      "Stacks (the SparseCore's unit: a stack's features are looked up as one batch; SPMEM per "
      "tile, limit %d bytes):\n", p.spmem_bytes_per_tile_limit));
  for (const StackPlan& s : p.stacks) {
    absl::StrAppend(&out, absl::StrFormat(
        "  stack '%s' [%s]: dim %d, %d feature(s), %d id(s) per sample; stack fwd %d bwd %d%s\n"
        "    SPMEM ids %d + unique %d + rows %d = fixed %d; gather operand %d (sample_count %d);"
        " total %d (limits: %d ids, %d unique per partition)\n",
        s.name, absl::StrJoin(s.table_names, " "), s.padded_dim, s.num_features,
        s.ids_per_sample, s.stack_forward_bytes, s.stack_backward_bytes,
        s.serialized ? "  (serialized)" : "", s.spmem_ids_bytes, s.spmem_unique_bytes,
        s.spmem_rows_bytes, s.spmem_fixed_bytes, s.gather_operand_bytes, s.gather_sample_count,
        s.spmem_bytes(), s.limits.max_ids, s.limits.max_unique_ids));
  }
  const int64_t alloc = p.tables_bytes;
  absl::StrAppend(&out, absl::StrFormat(
      "HBM per chip: tables+slots %s, stack %s (peak; %s unserialized), heap %s (dense %s, "
      "host inputs %s per step x prefetch depth %d (%d host queue items + %d in-flight steps) + "
      "activations %s per step x %d in-flight steps), total %s of %s (%.1f%%)\n",
      FormatBytes(p.tables_bytes), FormatBytes(p.stack_bytes), FormatBytes(p.stack_bytes_unserialized),
      FormatBytes(p.heap_bytes), FormatBytes(p.heap_dense_bytes), FormatBytes(p.host_inputs_per_step),
      p.prefetch_depth, p.host_queue_items, p.in_flight_steps, FormatBytes(p.activations_per_step),
      p.in_flight_steps, FormatBytes(p.hbm_bytes_per_chip), FormatBytes(p.hbm_bytes),
      p.hbm_bytes > 0 ? 100.0 * p.hbm_bytes_per_chip / p.hbm_bytes : 0.0));
  if (p.hot_rows > 0) {
    absl::StrAppend(&out, absl::StrFormat(
        "Hot-row replicas (in the total above): %d rows on every chip, %s (weights+slots) + %s "
        "(gradient buffer)\n",
        p.hot_rows, FormatBytes(p.hot_replica_bytes), FormatBytes(p.hot_gradient_bytes)));
  }
  absl::StrAppend(&out, absl::StrFormat(
      "Dense model: %s interaction, %d parameters (with gradients and optimizer slots %s of the "
      "heap)\n",
      p.dense_model.empty() ? "dot" : p.dense_model, p.dense_params,
      FormatBytes(p.heap_dense_bytes)));
  absl::StrAppend(&out, absl::StrFormat(
      "Padding: %s of %s allocated for tables+slots (%.2f%%); SPMEM per tile %d of %d bytes\n",
      FormatBytes(p.padding_bytes), FormatBytes(alloc), alloc > 0 ? 100.0 * p.padding_bytes / alloc : 0.0,
      p.spmem_bytes_per_tile, p.spmem_bytes_per_tile_limit));
  if (p.packing_saved_bytes > 0) {
    absl::StrAppend(&out, absl::StrFormat(
        "Narrow-table packing (pack_narrow_tables) saves %s of HBM per chip (tables+slots)\n",
        FormatBytes(p.packing_saved_bytes)));
  }
  return out;
}

}  // namespace lemrt::device
