// What one SparseCore's lookup of a step leaves for the update of the same
// step: the partition's dedup (partition_dedup.h), the staging buffers and
// the debug-check status. One per SparseCore and step in flight; its vectors
// keep their capacity between steps, so steady steps allocate nothing.
// Thread-compatible.
#ifndef LEMRT_DEVICE_SPARSECORE_STEP_STATE_H_
#define LEMRT_DEVICE_SPARSECORE_STEP_STATE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/row_key.h"
#include "device/sparsecore/table_major_runs.h"

namespace lemrt::device {

// What the lookup of one step leaves for the update of the same step.
struct SparseCoreStepState {
  // Unique (table, col) of the partition, sorted; float offsets of each in the
  // gradient accumulator (prefix sums of dims).
  std::vector<uint64_t> unique_keys;
  std::vector<int64_t> unique_offsets;
  // Local row of each unique key in its table's shard.
  std::vector<int64_t> unique_rows;
  // Where the table changes in unique_keys: the index of each table's first
  // unique key, in order, then unique_keys.size().
  std::vector<int64_t> table_runs;
  // Unique index of every entry, segments concatenated in order.
  std::vector<int32_t> entry_unique;
  // Each entry's EntryRole (row_kernels.h): whether it starts its unique
  // id's gradient accumulator (the id's first entry in that order), adds to
  // it, or is the id's only entry.
  std::vector<uint8_t> entry_role;
  // Per unique id: 1 when it has exactly one entry. Backward then updates
  // its row from that entry's gain and group gradient (unique_gain,
  // unique_grad) without an accumulator.
  std::vector<uint8_t> unique_single;
  std::vector<float> unique_gain;
  std::vector<const float*> unique_grad;
  // Scratch reused between steps.
  std::vector<std::pair<uint64_t, int32_t>> sort_scratch;
  std::vector<std::pair<uint64_t, int32_t>> sort_scratch2;  // SortByKey's buffer
  std::vector<float> grad_acc;
  // Feature-major order (partition_dedup.h): each segment's entry cursor.
  std::vector<size_t> run_cursor;
  // The partition's feature runs, table by table (table_major_runs.h), the
  // order Combine and Backward walk the entries in; scratch for them; and
  // Backward's index of each table's first run (per table_runs entry).
  std::vector<SegmentRun> runs;
  std::vector<SegmentRun> runs_scratch;
  std::vector<int64_t> runs_count;
  std::vector<int64_t> table_run_begin;
  // The unique rows gathered by the tiles (tile SPMEM), at unique_offsets;
  // filled only for the tables whose rows are staged this step.
  std::vector<float> gathered;
  // Per table, 1 when its rows are staged in `gathered` this step (always
  // with simulated quantization or guard words on; otherwise for rows under
  // 16 floats, or ids with repeats covering under half of their row range),
  // 0 when the combine reads them in place.
  std::vector<uint8_t> stage_table;
  // Index of each segment's first entry in entry_unique (+1 at the end).
  std::vector<int64_t> segment_begin;
  // The first debug-check failure of the last Forward or Backward (OK when
  // the checks are off or passed); see debug_checks.h. Callers must agree on
  // it over ranks before the next collective.
  absl::Status debug_status;
};

// Table index of one of SparseCoreStepState::unique_keys (base/row_key.h).
inline int UniqueKeyTable(uint64_t key) { return base::RowKeyTable(key); }

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_STEP_STATE_H_
