#include "base/auc.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "glog/logging.h"

namespace lemrt::base {

double Auc(std::span<const float> scores, std::span<const float> labels) {
  CHECK_EQ(scores.size(), labels.size());
  const size_t n = scores.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  // A strict weak order with NaN below every number (std::sort with a
  // plain < on NaN is undefined behaviour and its result order-dependent).
  auto less = [&](uint32_t a, uint32_t b) {
    const bool nan_a = std::isnan(scores[a]), nan_b = std::isnan(scores[b]);
    if (nan_a || nan_b) return nan_a && !nan_b;
    return scores[a] < scores[b];
  };
  auto tied = [&](uint32_t a, uint32_t b) { return !less(a, b) && !less(b, a); };
  std::sort(order.begin(), order.end(), less);
  // Sum of the (1-based, tie-averaged) ranks of the positives.
  double positive_rank_sum = 0;
  int64_t positives = 0;
  for (size_t begin = 0; begin < n;) {
    size_t end = begin + 1;
    while (end < n && tied(order[end], order[begin])) ++end;
    const double average_rank = 0.5 * static_cast<double>(begin + 1 + end);
    for (size_t j = begin; j < end; ++j) {
      if (labels[order[j]] > 0.5f) {
        positive_rank_sum += average_rank;
        ++positives;
      }
    }
    begin = end;
  }
  const int64_t negatives = static_cast<int64_t>(n) - positives;
  if (positives == 0 || negatives == 0) return 0.5;
  const double p = static_cast<double>(positives);
  return (positive_rank_sum - p * (p + 1) / 2) / (p * static_cast<double>(negatives));
}

double LogLoss(std::span<const float> probs, std::span<const float> labels) {
  CHECK_EQ(probs.size(), labels.size());
  if (probs.empty()) return 0;
  constexpr double kEps = 1e-7;
  double total = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double p = std::clamp(static_cast<double>(probs[i]), kEps, 1 - kEps);
    const double y = labels[i];
    total -= y * std::log(p) + (1 - y) * std::log(1 - p);
  }
  return total / static_cast<double>(probs.size());
}

double BaseRateEntropy(std::span<const float> labels) {
  if (labels.empty()) return 0;
  double sum = 0;
  for (float y : labels) sum += y;
  const double p = sum / static_cast<double>(labels.size());
  if (p <= 0 || p >= 1) return 0;
  return -(p * std::log(p) + (1 - p) * std::log(1 - p));
}

GroupAucResult GroupAuc(std::span<const float> scores, std::span<const float> labels,
                        std::span<const int64_t> groups) {
  CHECK_EQ(scores.size(), labels.size());
  CHECK_EQ(scores.size(), groups.size());
  std::vector<uint32_t> order;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i] >= 0) order.push_back(static_cast<uint32_t>(i));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return groups[a] < groups[b]; });
  GroupAucResult r;
  double weighted = 0;
  std::vector<float> s, y;
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    s.clear();
    y.clear();
    int64_t positives = 0;
    for (; end < order.size() && groups[order[end]] == groups[order[begin]]; ++end) {
      s.push_back(scores[order[end]]);
      y.push_back(labels[order[end]]);
      positives += labels[order[end]] > 0.5f ? 1 : 0;
    }
    const auto n = static_cast<int64_t>(end - begin);
    if (positives > 0 && positives < n) {
      weighted += static_cast<double>(n) * Auc(s, y);
      r.rows += n;
      ++r.groups;
    }
    begin = end;
  }
  r.gauc = r.rows > 0 ? weighted / static_cast<double>(r.rows)
                      : std::numeric_limits<double>::quiet_NaN();
  return r;
}

}  // namespace lemrt::base
