// Hot-row replication on the host (TableConfig.hot_rows): which rows of
// each table every chip holds a replica of (HotRowSet), taking their entries
// out of a partitioned COO so they leave the all-to-all (ExtractHotEntries),
// and counting a rank's ids to choose them (RowIdCounter; the choice over
// all ranks is runtime/hot_rows/hot_row_choice.h). The replicas themselves, their
// lookup and their update live in runtime/hot_rows/hot_row_replicas.h.
//
// A hot row keeps its owner (the SparseCore of the mod sharding) and its
// place in checkpoints; only its lookups and updates move to the replicas.
#ifndef LEMRT_HOST_PREPROCESS_HOT_ROWS_H_
#define LEMRT_HOST_PREPROCESS_HOT_ROWS_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "host/batch.h"
#include "host/preprocess/coo.h"

namespace lemrt::host {

// One (sample, hot row) pair of a chip's batch, after per-sample dedup: the
// entry the COO would have sent to the row's owner.
struct HotEntry {
  int32_t slot;     // the row's replica, HotRowSet numbering
  int32_t row;      // sample index within the chip's local batch
  int32_t feature;  // feature index in the config
  float gain;       // weight of the row in the pooled vector (layout::CooEntry::gain)
};

// The replicated rows of every table, numbered by "slots": table 0's rows
// in increasing (placed) id order, then table 1's, and so on. Immutable;
// thread-safe.
class HotRowSet {
 public:
  HotRowSet() = default;
  // placed[t]: table t's hot rows as placed ids (what layout::CooEntry::col holds:
  // the original id, or its id-shuffled P(j)); distinct, any order.
  explicit HotRowSet(std::vector<std::vector<int64_t>> placed);

  bool empty() const { return slots_ == 0; }
  int32_t slots() const { return slots_; }
  int num_tables() const { return static_cast<int>(rows_.size()); }
  // Table t's hot rows in slot order (sorted placed ids).
  std::span<const int64_t> rows(int t) const { return rows_[t]; }
  int32_t first_slot(int t) const { return first_slot_[t]; }
  // The slot of placed row `col` of table `table`, or -1 when not hot.
  int32_t Find(int table, int64_t col) const {
    if (table >= num_tables() || rows_[table].empty()) return -1;
    const auto it = index_[table].find(col);
    return it == index_[table].end() ? -1 : it->second;
  }

 private:
  std::vector<std::vector<int64_t>> rows_;
  std::vector<int32_t> first_slot_;
  std::vector<absl::flat_hash_map<int64_t, int32_t>> index_;
  int32_t slots_ = 0;
};

// Moves every entry of `coo` whose (table, col) is in `set` to `*hot` (which
// it clears first; in segment order, then entry order), and closes the gaps:
// the segments keep their order and their other entries' order.
// coo->ids_total and ids_after_dedup keep counting the moved entries.
// Unless `set` is empty, coo->table_partition_counts must be empty (they
// would count the moved entries).
void ExtractHotEntries(const HotRowSet& set, layout::PartitionedCoo* coo,
                       std::vector<HotEntry>* hot);

// Counts one rank's ids per table (duplicates included) over batches, to
// choose the hot rows. Ids are original ids; with `wrap` (as
// sparse_core.enable_id_bound_check false) an out-of-range id counts as its
// wrapped id, otherwise it is skipped (the COO builder reports it).
class RowIdCounter {
 public:
  // feature_tables[f]: feature f's table; vocab_sizes[t]: table t's rows;
  // counted[t]: whether table t is counted.
  RowIdCounter(std::vector<int> feature_tables, std::vector<int64_t> vocab_sizes,
               std::vector<char> counted, bool wrap);

  void Add(const Batch& batch);
  // Table t's `n` most frequent ids as (id, count), by count (descending)
  // then id (ascending); fewer when fewer distinct ids were seen.
  std::vector<std::pair<int64_t, int64_t>> Top(int t, int64_t n) const;
  // How often table t's id was seen (0 if never), and all its ids counted.
  int64_t Count(int t, int64_t id) const;
  int64_t Total(int t) const { return totals_[t]; }

 private:
  std::vector<int> feature_tables_;
  std::vector<int64_t> vocab_sizes_;
  std::vector<char> counted_;
  bool wrap_;
  std::vector<absl::flat_hash_map<int64_t, int64_t>> counts_;
  std::vector<int64_t> totals_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_PREPROCESS_HOT_ROWS_H_
