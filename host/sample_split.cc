#include "host/sample_split.h"

#include <algorithm>

#include "host/stacking.h"

namespace lemrt::host {
namespace {

constexpr int kColBits = 48;

bool Fits(const PartitionCount& c, const TableLimit& l) {
  return c.ids <= l.max_ids && c.unique_ids <= l.max_unique_ids;
}

}  // namespace

SampleSplitter::SampleSplitter(const MinibatchOptions& options)
    : options_(options), S_(options.local_sparse_cores), N_(options.total_sparse_cores) {}

uint64_t SampleSplitter::StackedKey(int table, int64_t col) const {
  if (options_.stacking.empty()) {
    return (static_cast<uint64_t>(table) << kColBits) | static_cast<uint64_t>(col);
  }
  const StackedTable& m = options_.stacking[table];
  return (static_cast<uint64_t>(m.stack) << kColBits) |
         static_cast<uint64_t>(StackedRow(m, col, N_));
}

int SampleSplitter::Plan(const PartitionedCoo& mb, int64_t samples_per_sc) {
  per_sc_ = samples_per_sc;
  const std::vector<TableLimit>& limits = options_.limits.tables;
  range_start_.assign(S_, {});
  counts_.assign(limits.size() * N_, PartitionCount{});
  int most = 1;
  for (int s = 0; s < S_; ++s) {
    range_start_[s].push_back(int64_t{s} * per_sc_);
    // This source's entries of limited stacks, by sample (stable: the
    // segments' order within a sample).
    items_.clear();
    for (int d = 0; d < N_; ++d) {
      for (const CooEntry& e : mb.segment(d, s)) {
        const uint64_t key = StackedKey(e.table, e.col);
        const int stack = StackOf(key);
        if (limits[stack].limited()) items_.push_back({e.row, key, int64_t{stack} * N_ + d});
      }
    }
    std::stable_sort(items_.begin(), items_.end(),
                     [](const Item& a, const Item& b) { return a.sample < b.sample; });
    // Greedy: a sample joins the current range unless a partition would go
    // over; then the range ends before it and a new one starts with it.
    touched_.clear();
    seen_.clear();
    bool range_empty = true;
    for (size_t i = 0; i < items_.size();) {
      size_t j = i;
      while (j < items_.size() && items_[j].sample == items_[i].sample) ++j;
      for (int attempt = 0; attempt < 2; ++attempt) {
        bool over = false;
        for (size_t k = i; k < j; ++k) {
          const Item& item = items_[k];
          PartitionCount& c = counts_[item.partition];
          if (c.ids == 0) touched_.push_back(item.partition);
          ++c.ids;
          if (seen_.insert(item.key).second) ++c.unique_ids;
          over |= !Fits(c, limits[StackOf(item.key)]);
        }
        if (!over || range_empty || attempt == 1) break;
        // Close the range before this sample and count it afresh.
        for (int64_t p : touched_) counts_[p] = PartitionCount{};
        touched_.clear();
        seen_.clear();
        range_start_[s].push_back(items_[i].sample);
      }
      range_empty = false;
      i = j;
    }
    for (int64_t p : touched_) counts_[p] = PartitionCount{};
    most = std::max(most, static_cast<int>(range_start_[s].size()));
  }
  return most;
}

void SampleSplitter::Split(const PartitionedCoo& mb, int parts, PartitionedCoo* out) const {
  // Sample -> its range's part (samples of one source are consecutive).
  part_of_sample_.assign(int64_t{S_} * per_sc_, 0);
  for (int s = 0; s < S_; ++s) {
    const std::vector<int64_t>& starts = range_start_[s];
    for (size_t r = 0; r < starts.size(); ++r) {
      const int64_t end = r + 1 < starts.size() ? starts[r + 1] : int64_t{s + 1} * per_sc_;
      std::fill(part_of_sample_.begin() + starts[r], part_of_sample_.begin() + end,
                static_cast<int32_t>(r));
    }
  }
  const int64_t segments = int64_t{N_} * S_;
  for (int i = 0; i < parts; ++i) {
    PartitionedCoo& p = out[i];
    p.local_sparse_cores = S_;
    p.total_sparse_cores = N_;
    p.row_group = mb.row_group;
    p.ids_total = i == 0 ? mb.ids_total : 0;
    p.entries.clear();
    p.segment_offsets.assign(segments + 1, 0);
  }
  for (int64_t k = 0; k < segments; ++k) {
    for (int64_t e = mb.segment_offsets[k]; e < mb.segment_offsets[k + 1]; ++e) {
      const CooEntry& entry = mb.entries[e];
      out[part_of_sample_[entry.row]].entries.push_back(entry);
    }
    for (int i = 0; i < parts; ++i) {
      out[i].segment_offsets[k + 1] = static_cast<int64_t>(out[i].entries.size());
    }
  }
  for (int i = 0; i < parts; ++i) {
    out[i].ids_after_dedup = static_cast<int64_t>(out[i].entries.size());
  }
}

}  // namespace lemrt::host
