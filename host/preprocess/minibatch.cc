#include "host/preprocess/minibatch.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <span>
#include <string>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/huge_pages.h"
#include "base/random.h"
#include "base/row_key.h"
#include "host/preprocess/radix_sort.h"

namespace lemrt::host {
namespace {

constexpr uint64_t kNoCut = std::numeric_limits<uint64_t>::max();

using base::RowKeyTable;
uint64_t Key(int table, int64_t col) { return base::RowKey(table, col); }
int KeyTable(uint64_t key) { return RowKeyTable(key); }
int BucketOfKey(uint64_t key) {
  return static_cast<int>(base::Mix64(key ^ 0x9e3779b97f4a7c15ULL) >> 58);
}

bool Fits(const layout::PartitionCount& c, const layout::TableLimit& l) {
  return c.ids <= l.max_ids && c.unique_ids <= l.max_unique_ids;
}

// The ids and distinct ids of the sorted keys from *j on that share the
// table of keys[*j], up to `end`; *j ends at the first key past them.
layout::PartitionCount CountTableKeys(const std::vector<uint64_t>& keys, int64_t end,
                                      int64_t* j) {
  const int t = KeyTable(keys[*j]);
  layout::PartitionCount c;
  while (*j < end && KeyTable(keys[*j]) == t) {
    int64_t r = *j + 1;
    while (r < end && keys[r] == keys[*j]) ++r;
    c.ids += static_cast<int32_t>(r - *j);
    c.unique_ids += 1;
    *j = r;
  }
  return c;
}

// The sentence for a partition over `limit` without id dropping.
absl::Status OverLimitError(const std::string& table, int source_sc, int dest_sc,
                            const layout::PartitionCount& c, const layout::TableLimit& limit,
                            const std::string& where) {
  const bool ids_over = c.ids > limit.max_ids;
  return absl::InvalidArgumentError(absl::StrFormat(
      "table '%s': the partition from SparseCore %d to SparseCore %d has %d %s, above "
      "%s = %d%s; raise the limit (lemrt_limits measures it) or set "
      "sparse_core.allow_id_dropping",
      table, source_sc, dest_sc, ids_over ? c.ids : c.unique_ids,
      ids_over ? "ids after per-sample dedup" : "unique ids",
      ids_over ? "max_ids_per_partition" : "max_unique_ids_per_partition",
      ids_over ? limit.max_ids : limit.max_unique_ids, where));
}

// Keeps the lowest rows of one table's sorted keys: walks the distinct keys
// in order while both limits hold; *cut_key is the first key not fully
// kept and *cut_keep how many of its entries are.
void CutToLimit(std::span<const uint64_t> keys, const layout::TableLimit& limit,
                uint64_t* cut_key, int32_t* cut_keep) {
  int32_t kept_ids = 0, kept_unique = 0;
  for (size_t q = 0; q < keys.size();) {
    size_t r = q + 1;
    while (r < keys.size() && keys[r] == keys[q]) ++r;
    const int32_t run = static_cast<int32_t>(r - q);
    if (kept_unique + 1 > limit.max_unique_ids) {
      *cut_key = keys[q];
      *cut_keep = 0;
      return;
    }
    if (kept_ids + run > limit.max_ids) {
      *cut_key = keys[q];
      *cut_keep = limit.max_ids - kept_ids;
      return;
    }
    kept_ids += run;
    kept_unique += 1;
    q = r;
  }
}

}  // namespace

MinibatchSplitter::MinibatchSplitter(MinibatchOptions options)
    : options_(std::move(options)),
      S_(options_.local_sparse_cores),
      N_(options_.total_sparse_cores),
      T_(static_cast<int>(options_.limits.tables.size())),
      num_tables_(options_.stacking.empty() ? T_
                                            : static_cast<int>(options_.stacking.size())) {
  spare_.reserve(kBuckets);  // at most kBuckets minibatches per step
}

int MinibatchSplitter::Bucket(int table, int64_t col) { return BucketOfKey(Key(table, col)); }

uint64_t MinibatchSplitter::StackedKey(int table, int64_t col) const {
  if (options_.stacking.empty()) return Key(table, col);
  const layout::StackedTable& m = options_.stacking[table];
  return Key(m.stack, layout::StackedRow(m, col, N_));
}

void MinibatchSplitter::SortSegmentKeys(const layout::PartitionedCoo& coo) {
  keys_.resize(coo.entries.size());
  for (size_t i = 0; i < coo.entries.size(); ++i) {
    keys_[i] = StackedKey(coo.entries[i].table, coo.entries[i].col);
  }
  if (key_scratch_.size() < keys_.size()) key_scratch_.resize(keys_.size());
  for (size_t k = 0; k + 1 < coo.segment_offsets.size(); ++k) {
    const int64_t begin = coo.segment_offsets[k], n = coo.segment_offsets[k + 1] - begin;
    RadixSortKeys(std::span<uint64_t>(keys_.data() + begin, n),
                  std::span<uint64_t>(key_scratch_.data(), n));
  }
}

void MinibatchSplitter::CountPartitions(const layout::PartitionedCoo& coo) {
  counts_.assign(int64_t{T_} * S_ * N_, layout::PartitionCount{});
  const int64_t per_table = int64_t{S_} * N_;
  if (static_cast<int64_t>(coo.table_partition_counts.size()) == num_tables_ * per_table) {
    // Counted by the builder per original table; a stack's members have
    // disjoint stacked rows, so its distinct ids are their sum.
    for (int t = 0; t < num_tables_; ++t) {
      const int stack = options_.stacking.empty() ? t : options_.stacking[t].stack;
      const layout::PartitionCount* from = coo.table_partition_counts.data() + t * per_table;
      layout::PartitionCount* to = counts_.data() + stack * per_table;
      for (int64_t p = 0; p < per_table; ++p) {
        to[p].ids += from[p].ids;
        to[p].unique_ids += from[p].unique_ids;
      }
    }
    keys_sorted_ = false;
    return;
  }
  SortSegmentKeys(coo);
  keys_sorted_ = true;
  const int64_t segments = int64_t{N_} * S_;
  for (int64_t k = 0; k < segments; ++k) {
    const int d = static_cast<int>(k / S_), s = static_cast<int>(k % S_);
    for (int64_t i = coo.segment_offsets[k]; i < coo.segment_offsets[k + 1];) {
      int64_t j = i + 1;
      while (j < coo.segment_offsets[k + 1] && keys_[j] == keys_[i]) ++j;
      layout::PartitionCount& c = counts_[PartitionIndex(KeyTable(keys_[i]), s, d)];
      c.ids += static_cast<int32_t>(j - i);
      c.unique_ids += 1;
      i = j;
    }
  }
}

uint64_t MinibatchSplitter::PlanLocal(const layout::PartitionedCoo& coo) {
  CountPartitions(coo);
  const int64_t segments = int64_t{N_} * S_;
  over_partitions_.clear();
  for (int t = 0; t < T_; ++t) {
    if (!options_.limits.tables[t].limited()) continue;
    for (int s = 0; s < S_; ++s) {
      for (int d = 0; d < N_; ++d) {
        const int64_t p = PartitionIndex(t, s, d);
        if (!Fits(counts_[p], options_.limits.tables[t])) over_partitions_.push_back(p);
      }
    }
  }
  over_ = !over_partitions_.empty();
  if (!over_ || !options_.minibatching) return 0;

  // Bucket counts of the over-limit partitions only.
  if (!keys_sorted_) SortSegmentKeys(coo);
  over_slot_.assign(counts_.size(), -1);
  for (size_t i = 0; i < over_partitions_.size(); ++i) {
    over_slot_[over_partitions_[i]] = static_cast<int32_t>(i);
  }
  bucket_counts_.assign(over_partitions_.size() * kBuckets, layout::PartitionCount{});
  for (int64_t k = 0; k < segments; ++k) {
    const int d = static_cast<int>(k / S_), s = static_cast<int>(k % S_);
    for (int64_t i = coo.segment_offsets[k]; i < coo.segment_offsets[k + 1];) {
      int64_t j = i + 1;
      while (j < coo.segment_offsets[k + 1] && keys_[j] == keys_[i]) ++j;
      const int t = KeyTable(keys_[i]);
      const int32_t slot = over_slot_[PartitionIndex(t, s, d)];
      if (slot >= 0) {
        layout::PartitionCount& c =
            bucket_counts_[int64_t{slot} * kBuckets + BucketOfKey(keys_[i])];
        c.ids += static_cast<int32_t>(j - i);
        c.unique_ids += 1;
      }
      i = j;
    }
  }
  if (!options_.boundaries_per_source) return GreedyBoundaries(-1);
  // Each source SparseCore's boundaries on their own, then their OR: a
  // function of each SparseCore's samples alone, so the chip's plan ORed over
  // the chips is the same however the SparseCores split over the chips.
  uint64_t boundaries = 0;
  for (int s = 0; s < S_; ++s) boundaries |= GreedyBoundaries(s);
  return boundaries;
}

uint64_t MinibatchSplitter::GreedyBoundaries(int source) {
  // Greedy merge in bucket order over the over-limit partitions: a new
  // minibatch starts where adding the bucket would push one past its limits.
  const int64_t per_table = int64_t{S_} * N_;
  auto mine = [&](size_t i) {
    return source < 0 || (over_partitions_[i] % per_table) / N_ == source;
  };
  uint64_t boundaries = 0;
  running_.assign(over_partitions_.size(), layout::PartitionCount{});
  for (int b = 0; b < kBuckets; ++b) {
    bool fits = true;
    for (size_t i = 0; i < over_partitions_.size() && fits; ++i) {
      if (!mine(i)) continue;
      const layout::PartitionCount& add = bucket_counts_[i * kBuckets + b];
      const layout::PartitionCount sum{running_[i].ids + add.ids,
                                       running_[i].unique_ids + add.unique_ids};
      fits = Fits(sum, options_.limits.tables[over_partitions_[i] / per_table]);
    }
    if (!fits && b > 0) {
      boundaries |= uint64_t{1} << b;
      std::fill(running_.begin(), running_.end(), layout::PartitionCount{});
    }
    for (size_t i = 0; i < over_partitions_.size(); ++i) {
      running_[i].ids += bucket_counts_[i * kBuckets + b].ids;
      running_[i].unique_ids += bucket_counts_[i * kBuckets + b].unique_ids;
    }
  }
  return boundaries;
}

absl::Status MinibatchSplitter::Split(const layout::PartitionedCoo& coo, uint64_t boundaries,
                                      std::vector<layout::PartitionedCoo>* out,
                                      std::vector<int64_t>* dropped_per_table) {
  SplitVocabulary(coo, boundaries, out);
  return Enforce(out, dropped_per_table);
}

void MinibatchSplitter::SplitVocabulary(const layout::PartitionedCoo& coo, uint64_t boundaries,
                                        std::vector<layout::PartitionedCoo>* out) {
  Distribute(coo, boundaries, out, /*take=*/nullptr);
}

void MinibatchSplitter::SplitVocabulary(layout::PartitionedCoo* coo, uint64_t boundaries,
                                        std::vector<layout::PartitionedCoo>* out) {
  Distribute(*coo, boundaries, out, coo);
}

void MinibatchSplitter::Distribute(const layout::PartitionedCoo& coo, uint64_t boundaries,
                                   std::vector<layout::PartitionedCoo>* out,
                                   layout::PartitionedCoo* take) {
  boundaries &= ~uint64_t{1};
  const int minibatches = std::popcount(boundaries) + 1;
  int mb_of_bucket[kBuckets];
  for (int b = 0, m = 0; b < kBuckets; ++b) {
    if ((boundaries >> b) & 1) ++m;
    mb_of_bucket[b] = m;
  }
  // Resize without freeing: surplus minibatches go to spare_ (a move keeps
  // the buffers), missing ones come from it.
  while (static_cast<int>(out->size()) > minibatches) {
    spare_.push_back(std::move(out->back()));
    out->pop_back();
  }
  while (static_cast<int>(out->size()) < minibatches) {
    if (spare_.empty()) {
      out->emplace_back();
    } else {
      out->push_back(std::move(spare_.back()));
      spare_.pop_back();
    }
  }
  const int64_t segments = int64_t{N_} * S_;
  for (int m = 0; m < minibatches; ++m) {
    layout::PartitionedCoo& mb = (*out)[m];
    mb.local_sparse_cores = S_;
    mb.total_sparse_cores = N_;
    mb.ids_total = m == 0 ? coo.ids_total : 0;
    mb.table_partition_counts.clear();  // the step's counts are not a minibatch's
    mb.row_group = m;
  }
  if (minibatches == 1 && take != nullptr) {
    (*out)[0].entries.swap(take->entries);
    (*out)[0].segment_offsets.swap(take->segment_offsets);
  } else if (minibatches == 1) {
    base::ReserveOnHugePages(&(*out)[0].entries, coo.entries.size());
    (*out)[0].entries.assign(coo.entries.begin(), coo.entries.end());
    (*out)[0].segment_offsets.assign(coo.segment_offsets.begin(), coo.segment_offsets.end());
  } else {
    for (layout::PartitionedCoo& mb : *out) {
      mb.entries.clear();
      mb.segment_offsets.assign(segments + 1, 0);
    }
    for (int64_t k = 0; k < segments; ++k) {
      for (int64_t i = coo.segment_offsets[k]; i < coo.segment_offsets[k + 1]; ++i) {
        const layout::CooEntry& e = coo.entries[i];
        (*out)[mb_of_bucket[BucketOfKey(StackedKey(e.table, e.col))]].entries.push_back(e);
      }
      for (layout::PartitionedCoo& mb : *out) {
        mb.segment_offsets[k + 1] = static_cast<int64_t>(mb.entries.size());
      }
    }
  }
  for (layout::PartitionedCoo& mb : *out)
    mb.ids_after_dedup = static_cast<int64_t>(mb.entries.size());
}

absl::Status MinibatchSplitter::Enforce(std::vector<layout::PartitionedCoo>* out,
                                        std::vector<int64_t>* dropped_per_table,
                                        bool sample_split) {
  dropped_per_table->resize(num_tables_, 0);
  const int minibatches = static_cast<int>(out->size());
  for (int m = 0; m < minibatches; ++m) {
    layout::PartitionedCoo& mb = (*out)[m];
    // A minibatch's partitions are subsets of the step's, so when the step
    // fit, every minibatch does.
    if (over_) {
      absl::Status st = EnforceLimits(m, minibatches, sample_split, &mb, dropped_per_table);
      if (!st.ok()) return st;
    }
    mb.ids_after_dedup = static_cast<int64_t>(mb.entries.size());
  }
  return absl::OkStatus();
}

absl::Status MinibatchSplitter::EnforceLimits(int minibatch, int minibatches, bool sample_split,
                                              layout::PartitionedCoo* mb,
                                              std::vector<int64_t>* dropped_per_table) {
  SortSegmentKeys(*mb);
  const int64_t segments = int64_t{N_} * S_;
  cut_key_.resize(T_);
  cut_keep_.resize(T_);
  int64_t w = 0;
  for (int64_t k = 0; k < segments; ++k) {
    const int64_t begin = mb->segment_offsets[k], end = mb->segment_offsets[k + 1];
    LEMRT_RETURN_IF_ERROR(
        ChooseSegmentCuts(k, begin, end, minibatch, minibatches, sample_split));
    mb->segment_offsets[k] = w;
    CompactSegment(begin, end, mb, &w, dropped_per_table);
  }
  mb->segment_offsets[segments] = w;
  mb->entries.resize(w);
  return absl::OkStatus();
}

std::string MinibatchSplitter::OverLimitWhere(int minibatch, int minibatches,
                                              bool sample_split) const {
  if (sample_split) {
    return absl::StrFormat(
        " in minibatch %d of %d after vocabulary- and sample-dimension minibatching (one "
        "sample's ids alone are over the limit)",
        minibatch + 1, minibatches);
  }
  if (minibatches > 1) {
    return absl::StrFormat(" in minibatch %d of %d after vocabulary-dimension minibatching",
                           minibatch + 1, minibatches);
  }
  return options_.minibatching ? " (no minibatch split can fit it)"
                               : " (minibatching is disabled)";
}

absl::Status MinibatchSplitter::ChooseSegmentCuts(int64_t k, int64_t begin, int64_t end,
                                                  int minibatch, int minibatches,
                                                  bool sample_split) {
  const int d = static_cast<int>(k / S_), s = static_cast<int>(k % S_);
  std::fill(cut_key_.begin(), cut_key_.end(), kNoCut);
  for (int64_t i = begin; i < end;) {
    // One table's keys of this segment: [i, j).
    const int t = KeyTable(keys_[i]);
    int64_t j = i;
    const layout::PartitionCount c = CountTableKeys(keys_, end, &j);
    const layout::TableLimit& limit = options_.limits.tables[t];
    if (!Fits(c, limit)) {
      if (!options_.allow_id_dropping) {
        return OverLimitError(options_.limits.table_names[t], options_.chip * S_ + s, d, c, limit,
                              OverLimitWhere(minibatch, minibatches, sample_split));
      }
      CutToLimit(std::span<const uint64_t>(keys_.data() + i, j - i), limit, &cut_key_[t],
                 &cut_keep_[t]);
    }
    i = j;
  }
  return absl::OkStatus();
}

void MinibatchSplitter::CompactSegment(int64_t begin, int64_t end, layout::PartitionedCoo* mb,
                                       int64_t* w, std::vector<int64_t>* dropped_per_table) {
  // In place: *w <= begin always.
  for (int64_t i = begin; i < end; ++i) {
    const layout::CooEntry& e = mb->entries[i];
    const uint64_t key = StackedKey(e.table, e.col);
    const int stack = KeyTable(key);
    const uint64_t cut = cut_key_[stack];
    bool keep = key < cut;
    if (key == cut && cut_keep_[stack] > 0) {
      --cut_keep_[stack];
      keep = true;
    }
    if (keep) {
      mb->entries[(*w)++] = e;
    } else {
      ++(*dropped_per_table)[e.table];
    }
  }
}

}  // namespace lemrt::host
