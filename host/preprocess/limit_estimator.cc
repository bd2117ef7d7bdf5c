#include "host/preprocess/limit_estimator.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lemrt::host {
namespace {

double NearestRank(std::vector<float>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = static_cast<size_t>(std::ceil(p * v.size()));
  const size_t index = std::min(v.size() - 1, k == 0 ? 0 : k - 1);
  std::nth_element(v.begin(), v.begin() + index, v.end());
  return v[index];
}

double Mean(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}

int32_t Max(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, x);
  return static_cast<int32_t>(m);
}

// ceil(observed x headroom) as a limit: at least 1, and INT32_MAX when it is
// larger (a double beyond int32 cast to int32 wrapped to INT_MIN, so a huge
// headroom gave limits of 1).
int32_t LimitOf(int32_t observed, double headroom) {
  const double limit = std::ceil(observed * headroom - 1e-9);
  if (limit >= static_cast<double>(std::numeric_limits<int32_t>::max())) {
    return std::numeric_limits<int32_t>::max();
  }
  return limit >= 1 ? static_cast<int32_t>(limit) : 1;  // also NaN (0 x inf)
}

}  // namespace

LimitEstimator::LimitEstimator(int num_tables, int local_sparse_cores, int total_sparse_cores)
    : T_(num_tables),
      S_(local_sparse_cores),
      N_(total_sparse_cores),
      ids_(num_tables),
      unique_ids_(num_tables),
      ids_per_dest_(num_tables, std::vector<int64_t>(total_sparse_cores, 0)) {}

void LimitEstimator::AddBatch(const std::vector<layout::PartitionCount>& counts) {
  for (int t = 0; t < T_; ++t) {
    for (int s = 0; s < S_; ++s) {
      for (int d = 0; d < N_; ++d) {
        const layout::PartitionCount& c = counts[(int64_t{t} * S_ + s) * N_ + d];
        ids_[t].push_back(static_cast<float>(c.ids));
        unique_ids_[t].push_back(static_cast<float>(c.unique_ids));
        ids_per_dest_[t][d] += c.ids;
      }
    }
  }
}

TableLimitReport LimitEstimator::Summarise(std::vector<float> ids, std::vector<float> unique_ids,
                                           const std::vector<int64_t>& ids_per_dest) {
  TableLimitReport r;
  r.max_ids = Max(ids);
  r.max_unique_ids = Max(unique_ids);
  r.mean_ids = Mean(ids);
  r.mean_unique_ids = Mean(unique_ids);
  r.p99_ids = NearestRank(ids, 0.99);
  r.p99_unique_ids = NearestRank(unique_ids, 0.99);
  int64_t total = 0;
  for (size_t d = 0; d < ids_per_dest.size(); ++d) {
    total += ids_per_dest[d];
    if (ids_per_dest[d] > ids_per_dest[r.hottest_sc]) r.hottest_sc = static_cast<int>(d);
  }
  if (total > 0) {
    r.hottest_share = ids_per_dest[r.hottest_sc] / (static_cast<double>(total) / ids_per_dest.size());
  }
  return r;
}

config::TableLimits LimitEstimator::Limits(const std::string& table,
                                           const TableLimitReport& report, double headroom) {
  config::TableLimits l;
  l.set_table(table);
  l.set_max_ids_per_partition(LimitOf(report.max_ids, headroom));
  l.set_max_unique_ids_per_partition(LimitOf(report.max_unique_ids, headroom));
  return l;
}

}  // namespace lemrt::host
