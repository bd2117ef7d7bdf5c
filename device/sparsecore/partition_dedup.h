// The first stage of a SparseCore's lookup: the dedup of one step's partition.
// Numbers the distinct (table, col) keys of the received entries in key order
// (row keys, base/row_key.h) and records, for each entry, the index of its
// unique key and its role in that key's gradient sum (EntryRole,
// row_kernels.h). The gather, the combine (SparseCore::Forward) and the
// update (SparseCore::Backward) then work per unique key. A pure function of
// the entries; thread-compatible on `state`.
#ifndef LEMRT_DEVICE_SPARSECORE_PARTITION_DEDUP_H_
#define LEMRT_DEVICE_SPARSECORE_PARTITION_DEDUP_H_

#include <memory>
#include <span>
#include <vector>

#include "device/sparsecore/step_state.h"
#include "device/sparsecore/table_shard.h"
#include "layout/coo_format.h"

namespace lemrt::device {

// Fills, for the entries of `segments` taken in order (segment k's entries
// are entries segment_begin[k] .. segment_begin[k + 1] - 1):
//   segment_begin  index of each segment's first entry, then the total;
//   unique_keys    the distinct keys, ascending;
//   unique_offsets float offset of each key's row in the gradient
//                  accumulator / staging buffer (prefix sums of dims[table]),
//                  then the total;
//   unique_rows    each key's local row in its table's shard (LocalRow);
//   unique_single  1 when the key has exactly one entry;
//   table_runs     index of each table's first unique key, then the count;
//   entry_unique   each entry's unique index;
//   entry_role     kOnlyEntry for a key's only entry, else kFirstEntry for
//                  its earliest entry and kAddEntry for the others;
//   runs           the segments' feature runs, table by table
//                  (TableMajorRuns, table_major_runs.h, with `feature_major`).
// `dims[t]` and `shards[t]` are table t's dim and this SparseCore's shard;
// every entry's table must index them and its col belong to that shard.
// `feature_major`: a key's "earliest" entry is the first in feature-major
// order (ForEachFeatureRun) instead of entry order, the order Backward then
// sums in. Reuses the state's vectors (and sort scratch) without shrinking
// them.
void DedupPartition(std::span<const std::span<const layout::CooEntry>> segments,
                    std::span<const int> dims, std::span<const std::unique_ptr<TableShard>> shards,
                    SparseCoreStepState* state, bool feature_major = false);

// Feature-major order of the entries of `segments` (each sorted by feature,
// as the COO format is): for each feature present, ascending, for each
// segment k in order, fn(k, begin, end) with [begin, end) that segment's run
// of the feature (empty runs skipped). When segments come in global sample
// order (source rank, source SparseCore), a key's entries in this order are
// in (feature, global sample) order, whatever the number of SparseCores:
// the order a world-size-independent gradient sum needs. `cursor` is
// scratch (resized to segments.size()).
template <typename Fn>
void ForEachFeatureRun(std::span<const std::span<const layout::CooEntry>> segments,
                       std::vector<size_t>* cursor_buf, Fn&& fn) {
  std::vector<size_t>& cursor = *cursor_buf;
  cursor.assign(segments.size(), 0);
  for (;;) {
    int32_t feature = -1;
    for (size_t k = 0; k < segments.size(); ++k) {
      if (cursor[k] < segments[k].size()) {
        const int32_t f = segments[k][cursor[k]].feature;
        if (feature < 0 || f < feature) feature = f;
      }
    }
    if (feature < 0) return;
    for (size_t k = 0; k < segments.size(); ++k) {
      const size_t begin = cursor[k];
      size_t end = begin;
      while (end < segments[k].size() && segments[k][end].feature == feature) ++end;
      if (end == begin) continue;
      cursor[k] = end;
      fn(k, static_cast<int64_t>(begin), static_cast<int64_t>(end));
    }
  }
}

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_PARTITION_DEDUP_H_
