// The COO wire format: what host preprocessing (host/preprocess/coo.h, the builder)
// hands to the SparseCores (device/sparsecore/sparse_core.h) for one chip's
// local batch. Plain data, shared by both layers; the builder's rules (which
// SparseCore owns an id, dedup, gains) live with the builder.
//
// One chip's PartitionedCoo (S = its SparseCores, N = SparseCores of all
// chips):
//
//   entries  [ seg(0,0) | seg(0,1) | .. | seg(0,S-1) | seg(1,0) | .. | seg(N-1,S-1) ]
//   seg(d,s) = entries that local SparseCore s sends to global SparseCore d,
//              from entries[segment_offsets[d*S+s]] to
//              entries[segment_offsets[d*S+s+1]] (exclusive)
//   in a segment: ordered by (feature, row, col); a maximal run with one
//              (feature, row) is a "group" (SameGroup), pooled into one
//              partial vector on the receiving SparseCore
//
// A segment travels between ranks as raw bytes (CooEntry is trivially
// copyable, 24 bytes). Thread-compatible plain structs.
#ifndef LEMRT_LAYOUT_COO_FORMAT_H_
#define LEMRT_LAYOUT_COO_FORMAT_H_

#include <cstdint>
#include <span>
#include <vector>

namespace lemrt::layout {

// One (sample, id) pair sent by a source SparseCore to the SparseCore owning
// row `col`. 24 bytes, sent as raw bytes between ranks.
struct CooEntry {
  int64_t col;      // global row of the table, in [0, vocab_size)
  int32_t row;      // sample index within the source chip's local batch
  int32_t feature;  // feature index in the config
  int32_t table;    // table index in the config
  float gain;       // weight of the row in the pooled vector
};
static_assert(sizeof(CooEntry) == 24);

// Whether two entries belong to one pooled group: the same (feature,
// sample). A segment's consecutive entries of one group pool into one
// partial vector (device/sparsecore/sparse_core.h, "Partial layout").
inline bool SameGroup(const CooEntry& a, const CooEntry& b) {
  return a.feature == b.feature && a.row == b.row;
}

// Ids and distinct ids of one partition (one table or stack, one source
// SparseCore, one destination SparseCore).
struct PartitionCount {
  int32_t ids = 0;
  int32_t unique_ids = 0;
};

// The partitioned COO of one local batch (the diagram above).
struct PartitionedCoo {
  int local_sparse_cores = 0;  // S
  int total_sparse_cores = 0;  // N
  std::vector<CooEntry> entries;
  // segment_offsets[d * S + s] .. [d * S + s + 1]: entries from local SC s to
  // global SC d. Size N * S + 1.
  std::vector<int64_t> segment_offsets;
  int64_t ids_total = 0;        // ids in the batch, duplicates included
  int64_t ids_after_dedup = 0;  // == entries.size()
  // The minibatches of one step with the same row_group may hold the same
  // rows (the sample-dimension minibatches of one vocabulary-dimension
  // minibatch, host/preprocess/sample_split.h): the SparseCore stage sums a row's
  // gradients over them before its one update of the step. Minibatches in
  // different row groups never share a row.
  int32_t row_group = 0;
  // With host::CooOptions::count_partitions: partition (table t, source
  // local SC s, destination SC d) at [(t * S + s) * N + d], size
  // num_tables * S * N; ids after per-sample dedup and distinct ids. Empty
  // otherwise.
  std::vector<PartitionCount> table_partition_counts;

  // Segment (dest_sc, src_local_sc); dest_sc in [0, N), src_local_sc in [0, S).
  std::span<const CooEntry> segment(int dest_sc, int src_local_sc) const {
    const int64_t k = int64_t{dest_sc} * local_sparse_cores + src_local_sc;
    return std::span<const CooEntry>(entries.data() + segment_offsets[k],
                                     segment_offsets[k + 1] - segment_offsets[k]);
  }
};

// The entries of each segment of `coo` per table: (*counts)[k * num_tables
// + t] for segment k (segment_offsets order) and table t; keeps capacity.
inline void CountSegmentTables(const PartitionedCoo& coo, int num_tables,
                               std::vector<int64_t>* counts) {
  const size_t segs = coo.segment_offsets.empty() ? 0 : coo.segment_offsets.size() - 1;
  counts->assign(segs * num_tables, 0);
  for (size_t k = 0; k < segs; ++k) {
    int64_t* per_table = counts->data() + k * num_tables;
    for (int64_t i = coo.segment_offsets[k]; i < coo.segment_offsets[k + 1]; ++i) {
      ++per_table[coo.entries[i].table];
    }
  }
}

}  // namespace lemrt::layout

#endif  // LEMRT_LAYOUT_COO_FORMAT_H_
