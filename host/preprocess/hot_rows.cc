#include "host/preprocess/hot_rows.h"

#include <algorithm>

#include "glog/logging.h"

namespace lemrt::host {

HotRowSet::HotRowSet(std::vector<std::vector<int64_t>> placed)
    : rows_(std::move(placed)), first_slot_(rows_.size()), index_(rows_.size()) {
  for (size_t t = 0; t < rows_.size(); ++t) {
    std::vector<int64_t>& rows = rows_[t];
    std::sort(rows.begin(), rows.end());
    CHECK(std::adjacent_find(rows.begin(), rows.end()) == rows.end())
        << "HotRowSet: table " << t << " lists a row twice";
    first_slot_[t] = slots_;
    index_[t].reserve(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) index_[t].emplace(rows[i], slots_ + int32_t(i));
    slots_ += static_cast<int32_t>(rows.size());
  }
}

void ExtractHotEntries(const HotRowSet& set, layout::PartitionedCoo* coo,
                       std::vector<HotEntry>* hot) {
  hot->clear();
  if (set.empty()) return;
  CHECK(coo->table_partition_counts.empty())
      << "ExtractHotEntries: the partition counts would still count the hot entries";
  std::vector<layout::CooEntry>& entries = coo->entries;
  const size_t segments = coo->segment_offsets.size() - 1;
  int64_t out = 0;
  int64_t begin = coo->segment_offsets[0];
  for (size_t k = 0; k < segments; ++k) {
    const int64_t end = coo->segment_offsets[k + 1];
    coo->segment_offsets[k] = out;
    for (int64_t i = begin; i < end; ++i) {
      const layout::CooEntry& e = entries[i];
      const int32_t slot = set.Find(e.table, e.col);
      if (slot >= 0) {
        hot->push_back(HotEntry{slot, e.row, e.feature, e.gain});
      } else {
        entries[out++] = e;
      }
    }
    begin = end;
  }
  coo->segment_offsets[segments] = out;
  entries.resize(out);
}

RowIdCounter::RowIdCounter(std::vector<int> feature_tables, std::vector<int64_t> vocab_sizes,
                           std::vector<char> counted, bool wrap)
    : feature_tables_(std::move(feature_tables)),
      vocab_sizes_(std::move(vocab_sizes)),
      counted_(std::move(counted)),
      wrap_(wrap),
      counts_(vocab_sizes_.size()),
      totals_(vocab_sizes_.size(), 0) {}

void RowIdCounter::Add(const Batch& batch) {
  for (int f = 0; f < batch.num_features(); ++f) {
    const int t = feature_tables_[f];
    if (!counted_[t]) continue;
    const int64_t vocab = vocab_sizes_[t];
    auto& counts = counts_[t];
    for (int64_t i = 0; i < batch.num_samples; ++i) {
      if (!batch.real(i)) continue;
      for (int64_t id : batch.SampleIds(f, i)) {
        if (id < 0 || id >= vocab) {
          if (!wrap_) continue;
          id %= vocab;
          if (id < 0) id += vocab;
        }
        ++counts[id];
        ++totals_[t];
      }
    }
  }
}

std::vector<std::pair<int64_t, int64_t>> RowIdCounter::Top(int t, int64_t n) const {
  std::vector<std::pair<int64_t, int64_t>> all(counts_[t].begin(), counts_[t].end());
  const auto hotter = [](const std::pair<int64_t, int64_t>& a,
                         const std::pair<int64_t, int64_t>& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  const size_t keep = static_cast<size_t>(std::min<int64_t>(n, all.size()));
  std::partial_sort(all.begin(), all.begin() + keep, all.end(), hotter);
  all.resize(keep);
  return all;
}

int64_t RowIdCounter::Count(int t, int64_t id) const {
  const auto it = counts_[t].find(id);
  return it == counts_[t].end() ? 0 : it->second;
}

}  // namespace lemrt::host
