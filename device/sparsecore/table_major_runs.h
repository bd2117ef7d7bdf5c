// The order in which a SparseCore walks its partition's entries for the row
// kernels: table by table, so that one table's rows (and, in Backward, its
// gradient accumulators) stay in the core's caches while every received
// segment's entries of that table are pooled or summed, instead of being
// evicted by the other tables' rows between one segment and the next. A
// key's entries are all of one table, so each key still sees its entries in
// the order the dedup numbered them (partition_dedup.h): entry order, or
// feature-major order. Plain data and a pure function; thread-compatible.
#ifndef LEMRT_DEVICE_SPARSECORE_TABLE_MAJOR_RUNS_H_
#define LEMRT_DEVICE_SPARSECORE_TABLE_MAJOR_RUNS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "layout/coo_format.h"

namespace lemrt::device {

// One feature run of one segment: entries [begin, end) of segments[segment]
// (indices within the segment), all of `feature` and so of `table`; the
// partials (and gradients) of its groups start `floats` floats into the
// segment's partials (the sparse_core.h layout).
struct SegmentRun {
  int32_t segment = 0;
  int32_t feature = 0;
  int32_t table = 0;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t floats = 0;
};

// Fills `runs` with every maximal run of one feature in `segments`
// (dims[t]: table t's dim; every entry's table must index it), ordered by
// table, then by (segment, position), or with `feature_major` by (feature,
// segment) (ForEachFeatureRun's order). `count` is scratch; both vectors keep
// their capacity, so steady steps allocate nothing.
void TableMajorRuns(std::span<const std::span<const layout::CooEntry>> segments,
                    std::span<const int> dims, bool feature_major, std::vector<SegmentRun>* runs,
                    std::vector<SegmentRun>* scratch, std::vector<int64_t>* count);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_TABLE_MAJOR_RUNS_H_
