// The reference's xla_sc_num_serialized_tables_to_optimize_hbm in the
// SparseCore stage: the tables the memory plan marks serialized (those with
// the largest stack) are looked up and updated one after another, each with
// its own exchange, after the other tables ran together. The step's COO is
// split by table into groups:
//
//   group 0      the tables that are not serialized (absent if none)
//   group 1..K   one serialized table each, in table order
//
// and each vocabulary-dimension minibatch m becomes the groups' COOs
//   [m g0, m g1, ..., m gK, m+1 g0, ...]
// which SparseCoreStage's minibatch Forward/Backward run in order. A feature
// reads one table, so each activation is written by one group only, and a
// row is updated by one group only: results are bit-identical to running the
// tables together (tests/chip_numerics_test.sh). The number of groups comes
// from the config, so every rank runs the same number of exchanges.
// Thread-compatible.
#ifndef LEMRT_RUNTIME_TABLE_SERIALIZATION_H_
#define LEMRT_RUNTIME_TABLE_SERIALIZATION_H_

#include <span>
#include <vector>

#include "device/plan/memory_plan.h"
#include "host/coo.h"

namespace lemrt::runtime {

// Copies the entries of `in` whose table has keep[table] != 0 into `out`
// (same segments, same order within each segment). out->ids_total and
// ids_after_dedup count the kept entries.
void SelectTables(const host::PartitionedCoo& in, std::span<const char> keep,
                  host::PartitionedCoo* out);

class TableSerializer {
 public:
  // The groups of `plan` (TablePlan::serialized).
  explicit TableSerializer(const device::MemoryPlan& plan);

  int num_groups() const { return static_cast<int>(keep_.size()); }
  // True when some table runs on its own (more than one group).
  bool active() const { return num_groups() > 1; }

  // Replaces *minibatches by their groups' COOs (layout above); a no-op when
  // not active(). Reuses its buffers between calls.
  void Expand(std::vector<host::PartitionedCoo>* minibatches);

 private:
  std::vector<std::vector<char>> keep_;  // per group: keep[table]
  std::vector<host::PartitionedCoo> scratch_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_TABLE_SERIALIZATION_H_
