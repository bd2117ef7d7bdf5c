#include "runtime/step/table_serialization.h"

namespace lemrt::runtime {

void SelectTables(const layout::PartitionedCoo& in, std::span<const char> keep,
                  layout::PartitionedCoo* out) {
  out->local_sparse_cores = in.local_sparse_cores;
  out->total_sparse_cores = in.total_sparse_cores;
  out->row_group = in.row_group;
  out->entries.clear();
  out->segment_offsets.assign(in.segment_offsets.size(), 0);
  for (size_t k = 0; k + 1 < in.segment_offsets.size(); ++k) {
    for (int64_t i = in.segment_offsets[k]; i < in.segment_offsets[k + 1]; ++i) {
      if (keep[in.entries[i].table]) out->entries.push_back(in.entries[i]);
    }
    out->segment_offsets[k + 1] = static_cast<int64_t>(out->entries.size());
  }
  out->ids_after_dedup = static_cast<int64_t>(out->entries.size());
  out->ids_total = out->ids_after_dedup;
}

TableSerializer::TableSerializer(const device::MemoryPlan& plan) {
  const size_t tables = plan.tables.size();
  std::vector<char> together(tables, 0);
  bool any_together = false;
  for (const device::StackPlan& s : plan.stacks) {
    if (s.serialized) continue;
    for (int t : s.tables) together[t] = 1;
    any_together = true;
  }
  if (any_together) keep_.push_back(std::move(together));
  for (const device::StackPlan& s : plan.stacks) {
    if (!s.serialized) continue;
    keep_.emplace_back(tables, 0);
    for (int t : s.tables) keep_.back()[t] = 1;
  }
}

std::span<const layout::PartitionedCoo> TableSerializer::Expand(
    std::span<const layout::PartitionedCoo> minibatches,
    std::vector<layout::PartitionedCoo>* groups) const {
  if (!active()) return minibatches;
  const size_t g_count = keep_.size();
  const size_t n = minibatches.size() * g_count;
  if (groups->size() < n) groups->resize(n);
  for (size_t m = 0; m < minibatches.size(); ++m) {
    for (size_t g = 0; g < g_count; ++g) {
      layout::PartitionedCoo& group = (*groups)[m * g_count + g];
      SelectTables(minibatches[m], keep_[g], &group);
      // Table groups hold disjoint tables: a row group per (row group, table group).
      group.row_group = minibatches[m].row_group * static_cast<int32_t>(g_count) +
                        static_cast<int32_t>(g);
    }
  }
  return std::span<const layout::PartitionedCoo>(groups->data(), n);
}

}  // namespace lemrt::runtime
