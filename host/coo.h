// Host preprocessing: one chip's local batch -> COO entries partitioned by
// the SparseCore that owns each id (reference sections 3 and 7).
//
//   Batch (CSR ids per feature)
//     -> split samples over the chip's S SparseCores (contiguous row ranges)
//     -> per sample and feature: sort ids, merge duplicates (gain = count x
//        combiner weight)
//     -> destination SparseCore = (col + sc_shift of the feature's table) % N
//        (N = SparseCores of all chips; sc_shift = the table's rotation in
//        its stack, host/stacking.h; 0 without stacking)
//     -> segments ordered [dest SC 0..N-1][source local SC 0..S-1], entries
//        inside a segment ordered by (feature, row, col)
//
// CooBuilder is thread-compatible; it keeps scratch buffers between calls so
// the steady state does not allocate.
#ifndef LEMRT_HOST_COO_H_
#define LEMRT_HOST_COO_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "host/batch.h"
#include "proto/config.pb.h"

namespace lemrt::host {

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

// What the builder needs to know of each feature.
struct FeatureSpec {
  int table = 0;
  int64_t vocab_size = 0;
  config::TableConfig::Combiner combiner = config::TableConfig::SUM;
  std::string name;        // feature name, for error messages
  std::string table_name;  // table name, for error messages
  // The table's rotation in its stack (host/stacking.h), in [0, N): id j
  // goes to SparseCore (j + sc_shift) % N.
  int sc_shift = 0;
};

struct CooOptions {
  int local_sparse_cores = 1;  // S
  int total_sparse_cores = 1;  // N = chips x S
  int max_ids_per_chip_per_sample = 64;
  // true: an id outside [0, vocab_size) is an error; false: it is wrapped
  // into range (id mod vocab_size, non-negative) before dedup.
  bool id_bound_check = true;
  std::vector<FeatureSpec> features;
};

// Builds `options` from a validated config (with its table stacking plan).
CooOptions MakeCooOptions(const config::RunConfig& config);

// The partitioned COO of one local batch.
struct PartitionedCoo {
  int local_sparse_cores = 0;
  int total_sparse_cores = 0;
  std::vector<CooEntry> entries;
  // segment_offsets[d * S + s] .. [d * S + s + 1]: entries from local SC s to
  // global SC d. Size N * S + 1.
  std::vector<int64_t> segment_offsets;
  int64_t ids_total = 0;        // ids in the batch, duplicates included
  int64_t ids_after_dedup = 0;  // == entries.size()

  std::span<const CooEntry> segment(int dest_sc, int src_local_sc) const {
    const int64_t k = int64_t{dest_sc} * local_sparse_cores + src_local_sc;
    return std::span<const CooEntry>(
        entries.data() + segment_offsets[k],
        segment_offsets[k + 1] - segment_offsets[k]);
  }
};

class CooBuilder {
 public:
  explicit CooBuilder(CooOptions options) : options_(std::move(options)) {}

  // Fills `out` from `batch`. batch.num_samples must be divisible by
  // local_sparse_cores. Errors (InvalidArgument): with id_bound_check, an id
  // outside its table
  // (naming table, feature, sample and the id), or a sample with more ids
  // after dedup over all features than max_ids_per_chip_per_sample (observed
  // vs limit).
  absl::Status Build(const Batch& batch, PartitionedCoo* out);

 private:
  CooOptions options_;
  std::vector<int64_t> sorted_;  // one sample's ids
  std::vector<uint64_t> sort_scratch_;  // RadixSortKeys scratch
  std::vector<CooEntry>
      staged_;  // entries in (src SC, feature, row, col) order
  std::vector<int32_t> staged_dest_;  // segment (dest SC * S + src SC) of each staged entry
  std::vector<int32_t> sample_ids_;  // ids after dedup per sample (limit check)
  std::vector<int64_t> cursor_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_COO_H_
