// Estimates partition limits from data, by the reference's algorithm
// (section 7): per batch, split it over the SparseCores, build the COO with
// per-sample dedup, mod-shard it, count ids and distinct ids per partition
// (source SC -> destination SC, per table), and take the maximum over
// partitions and batches. Also keeps what a report needs: every partition's
// counts (for mean / p99) and the ids each destination SparseCore receives
// (skew). Thread-compatible; the multi-chip reduction is the caller's (see
// tools/lemrt_limits_main.cc).
#ifndef LEMRT_HOST_PREPROCESS_LIMIT_ESTIMATOR_H_
#define LEMRT_HOST_PREPROCESS_LIMIT_ESTIMATOR_H_

#include <cstdint>
#include <vector>

#include "host/preprocess/minibatch.h"
#include "proto/config.pb.h"

namespace lemrt::host {

// Per-table summary of observed partition counts.
struct TableLimitReport {
  int32_t max_ids = 0;
  int32_t max_unique_ids = 0;
  double mean_ids = 0;         // over all partitions of all batches
  double mean_unique_ids = 0;
  double p99_ids = 0;          // nearest-rank 99th percentile
  double p99_unique_ids = 0;
  int hottest_sc = 0;          // destination SC receiving the most ids
  double hottest_share = 0;    // its ids / the mean over destination SCs
};

class LimitEstimator {
 public:
  LimitEstimator(int num_tables, int local_sparse_cores, int total_sparse_cores);

  // Adds one batch's partition counts (MinibatchSplitter::counts() layout,
  // [(t * S + s) * N + d]).
  void AddBatch(const std::vector<layout::PartitionCount>& counts);

  // Observed values of table t, one per (batch, source SC, destination SC).
  const std::vector<float>& ids(int t) const { return ids_[t]; }
  const std::vector<float>& unique_ids(int t) const { return unique_ids_[t]; }
  // Ids received per destination SC of table t, summed over batches.
  const std::vector<int64_t>& ids_per_dest(int t) const { return ids_per_dest_[t]; }

  // Summarises gathered values (this chip's or all chips').
  static TableLimitReport Summarise(std::vector<float> ids, std::vector<float> unique_ids,
                                    const std::vector<int64_t>& ids_per_dest);

  // Limits of a report: ceil(max x headroom), at least 1 and at most
  // INT32_MAX (saturated, never wrapped). Precondition: headroom >= 1.
  static config::TableLimits Limits(const std::string& table, const TableLimitReport& report,
                                    double headroom);

 private:
  int T_, S_, N_;
  std::vector<std::vector<float>> ids_, unique_ids_;
  std::vector<std::vector<int64_t>> ids_per_dest_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_PREPROCESS_LIMIT_ESTIMATOR_H_
