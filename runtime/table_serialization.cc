#include "runtime/table_serialization.h"

#include <utility>

namespace lemrt::runtime {

void SelectTables(const host::PartitionedCoo& in, std::span<const char> keep,
                  host::PartitionedCoo* out) {
  out->local_sparse_cores = in.local_sparse_cores;
  out->total_sparse_cores = in.total_sparse_cores;
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
  for (size_t t = 0; t < tables; ++t) {
    if (!plan.tables[t].serialized) together[t] = any_together = true;
  }
  if (any_together) keep_.push_back(std::move(together));
  for (size_t t = 0; t < tables; ++t) {
    if (!plan.tables[t].serialized) continue;
    keep_.emplace_back(tables, 0);
    keep_.back()[t] = 1;
  }
}

void TableSerializer::Expand(std::vector<host::PartitionedCoo>* minibatches) {
  if (!active()) return;
  const size_t groups = keep_.size();
  const size_t n = minibatches->size();
  if (scratch_.size() < n * groups) scratch_.resize(n * groups);
  for (size_t m = 0; m < n; ++m) {
    for (size_t g = 0; g < groups; ++g) {
      SelectTables((*minibatches)[m], keep_[g], &scratch_[m * groups + g]);
    }
  }
  if (minibatches->size() < n * groups) minibatches->resize(n * groups);
  // Swap so both vectors keep their capacity for the next step.
  for (size_t i = 0; i < n * groups; ++i) std::swap((*minibatches)[i], scratch_[i]);
}

}  // namespace lemrt::runtime
