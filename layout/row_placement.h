// Row placement: which chip (rank) and SparseCore own each row of each
// table, the row's place in that SparseCore's shard, and which rows are
// replicated hot rows. The one answer that host preprocessing (the COO
// builder's destinations, id shuffling, minibatch keys), the SparseCores'
// shards, the memory plan, checkpoints and lemrt_limits all ask. Built once
// from a validated config; immutable and thread-safe afterwards.
//
// A row of table t goes through three maps (N = SparseCores of all chips,
// S = SparseCores per chip):
//
//   original id j in [0, vocab_size)      what the data, checkpoint records
//     |                                   and the model checksum name
//     |  id shuffling (proto/id_shuffle.h): P_t, the identity when off
//     v
//   placed row p = P_t(j)                 what COO entries' col and the
//     |                                   shards' GlobalRow hold
//     |  mod sharding, rotated by the table's stacking shift
//     |  (layout/stacking.h; 0 without stacking)
//     v
//   owner SC  g = (p % N + sc_shift_t) % N     chip g / S, local SC g % S
//   local row   = p / N                        in g's shard of table t
//
// So SparseCore g's shard of table t holds the placed rows of one residue
// r = (g - sc_shift_t) mod N: r, r + N, r + 2N, ... below vocab_size, in
// that order (RowsOfResidue of them). Checkpoint file g of a table holds
// residue g whichever SparseCore owns it, which keeps the files free of the
// stacking layout.
//
// Hot rows (TableConfig.hot_rows / hot_row_ids, proto/hot_row_rule.h: listed
// ids win over the count) keep this home and their place in checkpoints;
// every chip also holds a replica of them, and their lookups and updates go
// to the replicas (runtime/hot_rows/hot_row_replicas.h).
#ifndef LEMRT_LAYOUT_ROW_PLACEMENT_H_
#define LEMRT_LAYOUT_ROW_PLACEMENT_H_

#include <cstdint>
#include <vector>

#include "base/id_permutation.h"
#include "layout/stacking.h"
#include "proto/config.pb.h"
#include "proto/hot_row_rule.h"

namespace lemrt::layout {

// Rows of [0, vocab_size) congruent to `residue` mod `n` (residue in
// [0, n), n >= 1): the rows of one SparseCore's shard of a table, and the
// records of one checkpoint table file.
inline int64_t RowsOfResidue(int64_t vocab_size, int residue, int n) {
  return vocab_size > residue ? (vocab_size - residue + n - 1) / n : 0;
}

// Where one row lives.
struct RowHome {
  int64_t placed_row = 0;  // P_t(j)
  int global_sc = 0;       // owner SparseCore, in [0, N)
  int chip = 0;            // = rank, global_sc / S
  int local_sc = 0;        // global_sc % S
  int64_t local_row = 0;   // row in the owner's shard of the table, placed_row / N
};

// A table's hot rows as the config gives them (proto/hot_row_rule.h).
struct HotRows {
  config::HotRowSource source = config::HotRowSource::kNone;
  int64_t count = 0;            // rows replicated (0 for none)
  std::vector<int64_t> listed;  // original ids, config order (kListed only)
};

class RowPlacement {
 public:
  // The placement of a validated config: its stacking plan
  // (StackingPlan::FromConfig), topology, id shuffling and hot rows.
  static RowPlacement FromConfig(const config::RunConfig& config);

  // An explicit placement (tests and tools): `permutations` and `hot_rows`
  // per table, empty for none anywhere; the stacking plan's
  // total_sparse_cores() is N and must be a multiple of
  // `sparse_cores_per_chip`.
  RowPlacement(StackingPlan stacking, int sparse_cores_per_chip, std::vector<int64_t> vocab_sizes,
               std::vector<base::IdPermutation> permutations, std::vector<HotRows> hot_rows);

  int total_sparse_cores() const { return n_; }     // N
  int sparse_cores_per_chip() const { return s_; }  // S
  int num_chips() const { return n_ / s_; }
  int num_tables() const { return static_cast<int>(vocab_sizes_.size()); }
  int64_t vocab_size(int t) const { return vocab_sizes_[t]; }
  const StackingPlan& stacking() const { return stacking_; }

  // Id shuffling of table t (the identity when it does not shuffle).
  const base::IdPermutation& permutation(int t) const { return permutations_[t]; }
  bool shuffles(int t) const { return !permutations_[t].identity(); }
  // The placed row of original id `id` in [0, vocab_size), and back.
  int64_t PlacedRow(int t, int64_t id) const { return permutations_[t].Forward(id); }
  int64_t OriginalId(int t, int64_t placed_row) const {
    return permutations_[t].Inverse(placed_row);
  }

  // Table t's rotation in its stack (layout/stacking.h), in [0, N).
  int sc_shift(int t) const { return stacking_.table(t).sc_shift; }
  // Owner SparseCore of placed row `placed_row` of table t:
  // (placed_row % N + sc_shift_t) % N. The COO builder computes the same
  // with its own division (host/preprocess/coo_records.h, Destination).
  int OwnerSc(int t, int64_t placed_row) const { return stacking_.DestinationSc(t, placed_row); }
  int OwnerChip(int t, int64_t placed_row) const { return OwnerSc(t, placed_row) / s_; }
  // Row of `placed_row` in its owner's shard: placed_row / N.
  int64_t LocalRow(int64_t placed_row) const { return placed_row / n_; }
  // Every answer above for original id `id` of table t.
  RowHome Home(int t, int64_t id) const;

  // The residue of placed rows (mod N) that SparseCore `global_sc` holds of
  // table t, its number of rows, and the placed row at `local_row` there.
  int ShardResidue(int t, int global_sc) const { return stacking_.ShardResidue(t, global_sc); }
  int64_t ShardRows(int t, int global_sc) const {
    return RowsOfResidue(vocab_sizes_[t], ShardResidue(t, global_sc), n_);
  }
  int64_t ShardPlacedRow(int t, int global_sc, int64_t local_row) const {
    return local_row * n_ + ShardResidue(t, global_sc);
  }
  // Table t's rows rounded up to a multiple of N, and the rows one chip
  // allocates for it (S shards of padded / N rows): the memory plan's sizes.
  int64_t PaddedRows(int t) const { return stacking_.table(t).padded_rows; }
  int64_t RowsPerChip(int t) const { return PaddedRows(t) / n_ * s_; }

  // Table t's hot rows: where they come from and how many.
  const HotRows& hot_rows(int t) const { return hot_rows_[t]; }
  int64_t HotRowCount(int t) const { return hot_rows_[t].count; }
  bool any_hot_rows() const;

 private:
  StackingPlan stacking_;
  int n_ = 1;
  int s_ = 1;
  std::vector<int64_t> vocab_sizes_;
  std::vector<base::IdPermutation> permutations_;
  std::vector<HotRows> hot_rows_;
};

}  // namespace lemrt::layout

#endif  // LEMRT_LAYOUT_ROW_PLACEMENT_H_
