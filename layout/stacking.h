// Table and feature stacking (reference section 2): which tables form one
// stacked ("logical") table, where each member starts in it, how far its ids
// are rotated across the SparseCores, and the id transform between a
// member's (table, id) and its stack's (stack, stacked row). Built once from a
// validated config; immutable and thread-safe afterwards.
//
// Layout of a stack (N = SparseCores of all chips, member k = 0, 1, ...):
//
//   padded_rows_k  = vocab_size_k rounded up to a multiple of N
//   row_offset_k   = padded_rows_0 + ... + padded_rows_{k-1}  (a multiple of N)
//   sc_shift_k     = (k x rotation) % N
//   stacked_row(j) = row_offset_k + (j - j % N) + (j % N + sc_shift_k) % N
//
//   stacked rows   [ member 0 | pad | member 1 | pad | member 2 ... ]
//   each SC shard  [ padded_rows_0 / N rows | padded_rows_1 / N rows | ... ]
//
// so id j of member k lives on SparseCore stacked_row % N = (j + sc_shift_k) % N
// at local row row_offset_k / N + j / N of the stack's shard: the member keeps
// its local rows and its hot low ids land on another SparseCore than the
// other members' (rotation, default = SparseCores per chip, so consecutive
// members start on consecutive chips). Everything that partitions ids (COO
// destinations, partition limits, minibatches, the exchange) uses
// stacked_row % N; each SparseCore stores a member's part of the stack's
// shard as that member's own TableShard (rows j with (j + sc_shift_k) % N ==
// the SC), so checkpoints and the model checksum stay per original table.
//
// Feature stacking: the features that look up a stack's members (or one
// shared table) are looked up as one batch: feature slot f of a stack holds
// samples [f x B, (f + 1) x B) of the stack's concatenated batch (B = the
// source SparseCore's samples), ids unchanged. In a COO entry that sample is
// the (feature, row) pair: per-sample dedup stays per (feature, sample), the
// owner's dedup, the partition counts and the limits are per stack over all
// its features, and the combine step splits the pooled vectors back per
// feature (its (feature, row) groups).
#ifndef LEMRT_LAYOUT_STACKING_H_
#define LEMRT_LAYOUT_STACKING_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "layout/limits.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"

namespace lemrt::layout {

// Where one original table sits in its stack.
struct StackedTable {
  int stack = 0;            // index into StackingPlan::stacks()
  int member = 0;           // k: position in the stack
  int64_t row_offset = 0;   // rows; a multiple of N
  int64_t padded_rows = 0;  // vocab_size rounded up to a multiple of N
  int sc_shift = 0;         // (k x rotation) % N, in [0, N)
};

// Stacked row of id `id` (in [0, vocab_size)) of a member placed at `m`.
inline int64_t StackedRow(const StackedTable& m, int64_t id, int total_sparse_cores) {
  const int64_t r = id % total_sparse_cores;
  int64_t rotated = r + m.sc_shift;
  if (rotated >= total_sparse_cores) rotated -= total_sparse_cores;
  return m.row_offset + (id - r) + rotated;
}

// One stacked table.
struct TableStack {
  std::string name;           // explicit name, else members joined by '+'
  std::vector<int> tables;    // member table indices, in member order
  std::vector<int> features;  // feature indices looking up a member, config order
  int padded_dim = 0;         // floats (dim rounded up to 8)
  int64_t rows = 0;           // padded rows over all members, a multiple of N
};

class StackingPlan {
 public:
  // The plan of a validated config (proto/preprocessing_checks.cc checks the explicit
  // stacks): with sparse_core.disable_table_stacking every table is its own
  // stack; with sparse_core.table_stacks those stacks (unnamed tables alone);
  // else tables are grouped automatically, in config order, with the first
  // stack whose first member they can share a stack with
  // (config::TableStackingMismatch). Stacks are ordered by their first
  // member's table index.
  static StackingPlan FromConfig(const config::RunConfig& config);

  // A plan from explicit groups (member table indices), for tests and tools:
  // `vocab_sizes` per table, every table in exactly one group.
  static StackingPlan FromGroups(const std::vector<std::vector<int>>& groups,
                                 const std::vector<int64_t>& vocab_sizes, int total_sparse_cores,
                                 int rotation);

  bool enabled() const { return enabled_; }
  int rotation() const { return rotation_; }
  int total_sparse_cores() const { return n_; }
  int num_stacks() const { return static_cast<int>(stacks_.size()); }
  int num_tables() const { return static_cast<int>(tables_.size()); }
  const std::vector<TableStack>& stacks() const { return stacks_; }
  const std::vector<StackedTable>& tables() const { return tables_; }
  const StackedTable& table(int t) const { return tables_[t]; }

  // (table, id) -> (stack, stacked row), and back. `id` must be in
  // [0, vocab_size); a stacked row must be one that StackedRow produced.
  std::pair<int, int64_t> Stack(int table, int64_t id) const {
    return {tables_[table].stack, StackedRow(tables_[table], id, n_)};
  }
  std::pair<int, int64_t> Unstack(int stack, int64_t stacked_row) const;

  // Destination SparseCore of id `id` of `table`: (id + sc_shift) % N.
  int DestinationSc(int table, int64_t id) const {
    return static_cast<int>(StackedRow(tables_[table], id, n_) % n_);
  }
  // Which residue class of `table`'s ids SparseCore `global_sc` owns: the
  // ids j with j % N == ShardResidue(table, global_sc). The TableShard of
  // `table` on that SparseCore is built for this residue.
  int ShardResidue(int table, int global_sc) const {
    return (global_sc - tables_[table].sc_shift % n_ + n_) % n_;
  }

  // Multi-line description for the start-up log: one line per stack with
  // its members, row offsets and SparseCore shifts.
  std::string Describe(const std::vector<std::string>& table_names) const;
  // One line when stacking is on and a change of the config would bring the
  // stacks nearer the reference's advice (5 to 100 tables each), naming the
  // change: stacks of fewer than 5 tables that could stack together (same
  // padded dim, combiner and optimizer, kept apart by explicit
  // sparse_core.table_stacks) to be listed in one entry, and stacks of more
  // than 100 tables to be split into entries. "" when nothing should change
  // (e.g. a small stack whose tables stack with no other table).
  std::string SizeWarning() const { return size_advice_; }

 private:
  void Place(int total_sparse_cores, int rotation, const std::vector<int64_t>& vocab_sizes);

  // Fills size_advice_ (FromConfig).
  void AdviseSizes(const config::RunConfig& config);

  bool enabled_ = true;
  std::string size_advice_;
  int rotation_ = 0;
  int n_ = 1;
  std::vector<TableStack> stacks_;
  std::vector<StackedTable> tables_;
};

// The partition limits of each stack from the per-table limits
// (layout/limits.h, indexed by table): a stack's limit of each kind is the
// largest of its members' (a member without a limit leaves the stack
// unlimited). A limit names the partition of the stacked table, which holds
// all members' ids, so lemrt_limits writes the measured stack limit under
// every member's name and the file resolves to the same stack limit (and,
// with stacking off, to an upper bound for each table). Names are the
// stacks'.
PartitionLimits StackLimits(const PartitionLimits& per_table, const StackingPlan& plan);

// The summary's `stacking` object: the plan with table names.
void FillStackingStats(const StackingPlan& plan, const config::RunConfig& config,
                       summary::TableStackingStats* out);

}  // namespace lemrt::layout

#endif  // LEMRT_LAYOUT_STACKING_H_
