#include "host/preprocess/sample_split.h"

#include <algorithm>
#include <bit>

#include "base/random.h"
#include "layout/stacking.h"

namespace lemrt::host {
namespace {

constexpr int kColBits = 48;

bool Fits(const layout::PartitionCount& c, const layout::TableLimit& l) {
  return c.ids <= l.max_ids && c.unique_ids <= l.max_unique_ids;
}

}  // namespace

SampleSplitter::SampleSplitter(const MinibatchOptions& options)
    : options_(options), S_(options.local_sparse_cores), N_(options.total_sparse_cores) {}

uint64_t SampleSplitter::StackedKey(int table, int64_t col) const {
  if (options_.stacking.empty()) {
    return (static_cast<uint64_t>(table) << kColBits) | static_cast<uint64_t>(col);
  }
  const layout::StackedTable& m = options_.stacking[table];
  return (static_cast<uint64_t>(m.stack) << kColBits) |
         static_cast<uint64_t>(layout::StackedRow(m, col, N_));
}

bool SampleSplitter::See(uint64_t key) {
  const uint64_t mask = seen_.size() - 1;
  for (uint64_t slot = base::Mix64(key) & mask;; slot = (slot + 1) & mask) {
    if (seen_[slot] == key + 1) return false;
    if (seen_[slot] == 0) {
      seen_[slot] = key + 1;
      seen_slots_.push_back(static_cast<int64_t>(slot));
      return true;
    }
  }
}

void SampleSplitter::ClearSeen() {
  for (int64_t slot : seen_slots_) seen_[slot] = 0;
  seen_slots_.clear();
}

int SampleSplitter::Plan(const layout::PartitionedCoo& mb, int64_t samples_per_sc) {
  per_sc_ = samples_per_sc;
  const std::vector<layout::TableLimit>& limits = options_.limits.tables;
  range_start_.resize(S_);
  counts_.assign(limits.size() * N_, layout::PartitionCount{});
  int most = 1;
  for (int s = 0; s < S_; ++s) {
    range_start_[s].clear();
    range_start_[s].push_back(int64_t{s} * per_sc_);
    // This source's entries of limited stacks, by sample (stable: the
    // segments' order within a sample).
    items_.clear();
    for (int d = 0; d < N_; ++d) {
      for (const layout::CooEntry& e : mb.segment(d, s)) {
        const uint64_t key = StackedKey(e.table, e.col);
        const int stack = StackOf(key);
        if (limits[stack].limited()) items_.push_back({e.row, key, int64_t{stack} * N_ + d});
      }
    }
    // Counting sort by sample, stable (std::stable_sort would allocate).
    const int64_t first = int64_t{s} * per_sc_;
    sample_offsets_.assign(per_sc_ + 1, 0);
    for (const Item& item : items_) ++sample_offsets_[item.sample - first + 1];
    for (int64_t i = 0; i < per_sc_; ++i) sample_offsets_[i + 1] += sample_offsets_[i];
    sorted_.resize(items_.size());
    for (const Item& item : items_) sorted_[sample_offsets_[item.sample - first]++] = item;
    // At most half full: every key of this source fits.
    const size_t slots = std::bit_ceil(2 * items_.size() + 2);
    if (seen_.size() < slots) seen_.assign(slots, 0);  // a power of two
    // Greedy: a sample joins the current range unless a partition would go
    // over; then the range ends before it and a new one starts with it.
    touched_.clear();
    ClearSeen();
    bool range_empty = true;
    for (size_t i = 0; i < sorted_.size();) {
      size_t j = i;
      while (j < sorted_.size() && sorted_[j].sample == sorted_[i].sample) ++j;
      for (int attempt = 0; attempt < 2; ++attempt) {
        bool over = false;
        for (size_t k = i; k < j; ++k) {
          const Item& item = sorted_[k];
          layout::PartitionCount& c = counts_[item.partition];
          if (c.ids == 0) touched_.push_back(item.partition);
          ++c.ids;
          if (See(item.key)) ++c.unique_ids;
          over |= !Fits(c, limits[StackOf(item.key)]);
        }
        if (!over || range_empty || attempt == 1) break;
        // Close the range before this sample and count it afresh.
        for (int64_t p : touched_) counts_[p] = layout::PartitionCount{};
        touched_.clear();
        ClearSeen();
        range_start_[s].push_back(sorted_[i].sample);
      }
      range_empty = false;
      i = j;
    }
    for (int64_t p : touched_) counts_[p] = layout::PartitionCount{};
    most = std::max(most, static_cast<int>(range_start_[s].size()));
  }
  return most;
}

void SampleSplitter::Split(const layout::PartitionedCoo& mb, int parts,
                           layout::PartitionedCoo* out) const {
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
    layout::PartitionedCoo& p = out[i];
    p.local_sparse_cores = S_;
    p.total_sparse_cores = N_;
    p.row_group = mb.row_group;
    p.table_partition_counts.clear();  // the step's counts are not a part's
    p.ids_total = i == 0 ? mb.ids_total : 0;
    p.entries.clear();
    p.segment_offsets.assign(segments + 1, 0);
  }
  for (int64_t k = 0; k < segments; ++k) {
    for (int64_t e = mb.segment_offsets[k]; e < mb.segment_offsets[k + 1]; ++e) {
      const layout::CooEntry& entry = mb.entries[e];
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
