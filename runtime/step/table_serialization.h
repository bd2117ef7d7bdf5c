// The reference's xla_sc_num_serialized_tables_to_optimize_hbm in the
// SparseCore stage: the stacked tables (layout/stacking.h, the SparseCore's
// unit; each table is its own stack with disable_table_stacking) that the
// memory plan marks serialized (those with the largest stack) are looked up
// and updated one after another, each with its own exchange, after the other
// stacks ran together. The step's COO is split by stack into groups:
//
//   group 0      the stacks that are not serialized (absent if none)
//   group 1..K   one serialized stack each (all its members' entries), in
//                stack order
//
// and each vocabulary-dimension minibatch m becomes the groups' COOs
//   [m g0, m g1, ..., m gK, m+1 g0, ...]
// which SparseCoreStage's minibatch Forward/Backward run in order. A feature
// reads one table of one stack, so each activation is written by one group
// only, and a row is updated by one group only: results are bit-identical to
// running the stacks together (tests/chip_numerics_test.sh). The number of
// groups comes from the config, so every rank runs the same number of
// exchanges. Partition limits and minibatches are per stack, so a group's
// partitions are its stacks' partitions of the minibatch, within the limits.
// Immutable after construction; thread-safe (callers own the output buffers).
#ifndef LEMRT_RUNTIME_STEP_TABLE_SERIALIZATION_H_
#define LEMRT_RUNTIME_STEP_TABLE_SERIALIZATION_H_

#include <span>
#include <vector>

#include "device/plan/memory_plan.h"
#include "host/preprocess/coo.h"

namespace lemrt::runtime {

// Copies the entries of `in` whose table has keep[table] != 0 into `out`
// (same segments, same order within each segment, same row_group). out->ids_total and
// ids_after_dedup count the kept entries. Allocates only when `out` has less
// capacity than it needs.
void SelectTables(const layout::PartitionedCoo& in, std::span<const char> keep,
                  layout::PartitionedCoo* out);

class TableSerializer {
 public:
  // The groups of `plan` (StackPlan::serialized).
  explicit TableSerializer(const device::MemoryPlan& plan);

  int num_groups() const { return static_cast<int>(keep_.size()); }
  // True when some stack runs on its own (more than one group).
  bool active() const { return num_groups() > 1; }
  // Per group: keep[table] != 0 for the tables the group runs.
  const std::vector<std::vector<char>>& groups() const { return keep_; }

  // The COOs the SparseCore stage runs for one step's `minibatches`: the
  // minibatches themselves when not active(); else their groups' COOs
  // (layout above), written into *groups, which grows but never shrinks (so
  // a step allocates nothing once each buffer has seen its largest group),
  // and the returned span views its first minibatches.size() x num_groups().
  // The span stays valid until *groups or `minibatches` changes.
  std::span<const layout::PartitionedCoo> Expand(
      std::span<const layout::PartitionedCoo> minibatches,
      std::vector<layout::PartitionedCoo>* groups) const;

 private:
  std::vector<std::vector<char>> keep_;  // per group: keep[table]
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_STEP_TABLE_SERIALIZATION_H_
