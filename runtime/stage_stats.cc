#include "runtime/stage_stats.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace lemrt::runtime {
namespace {

const summary::StageStats* FindStage(const summary::RunSummary& s, const std::string& name) {
  for (const auto& st : s.stages()) {
    if (st.name() == name) return &st;
  }
  return nullptr;
}

}  // namespace

Distribution Distribute(std::span<const double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  d.mean = sum / v.size();
  auto rank = [&](double p) {
    return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
  };
  d.p50 = rank(0.5);
  d.p99 = rank(0.99);
  return d;
}

double BusyTime(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double busy = 0, open_begin = 0, open_end = 0;
  bool open = false;
  for (const auto& [b, e] : intervals) {
    if (e <= b) continue;
    if (open && b <= open_end) {
      open_end = std::max(open_end, e);
      continue;
    }
    if (open) busy += open_end - open_begin;
    open = true;
    open_begin = b;
    open_end = e;
  }
  if (open) busy += open_end - open_begin;
  return busy;
}

std::vector<std::string> Diagnose(const summary::RunSummary& s) {
  std::vector<std::string> out;
  const summary::StageStats* host = FindStage(s, "host");
  const summary::StageStats* host_wait = FindStage(s, "host_wait");
  if (host_wait != nullptr) {
    // The device stages' view: the SparseCore executor waiting for the host
    // queue to hand it its next step.
    if (host_wait->share() >= kHostWaitShare) {
      out.push_back(absl::StrFormat(
          "host-bound: the SparseCores waited for the host queue %.0f%% of the step (%.2f ms "
          "of %.2f ms; host preprocessing %.2f ms per step on the workers); raise "
          "sparse_core.host_worker_threads or maximum_parallel_iterations, or speed up the "
          "input",
          100 * host_wait->share(), host_wait->mean_ms(),
          host_wait->mean_ms() / host_wait->share(), host != nullptr ? host->mean_ms() : 0.0));
    }
  } else if (host != nullptr && host->share() >= kHostBoundShare) {
    out.push_back(absl::StrFormat(
        "host-bound: host preprocessing takes %.0f%% of the step (%.2f ms of %.2f ms); the "
        "SparseCores wait for the host queue every step",
        100 * host->share(), host->mean_ms(), host->mean_ms() / host->share()));
  }
  if (s.has_overlap() && s.overlap().stage_sum_ms() > 0 &&
      s.overlap().fraction() < kNoOverlapFraction) {
    out.push_back(absl::StrFormat(
        "no overlap: the stages ran one after another (%.1f%% of stage time hidden); "
        "host, SparseCore and TensorCore work could be pipelined",
        100 * s.overlap().fraction()));
  }
  if (s.has_preprocess() && s.preprocess().mean_minibatches() >= kManyMinibatches) {
    out.push_back(absl::StrFormat(
        "many minibatches: steps needed %.2f minibatches on average (at most %d); the "
        "partition limits are tight for this data, and each minibatch is one more exchange",
        s.preprocess().mean_minibatches(), s.preprocess().max_minibatches()));
  }
  if (s.has_preprocess()) {
    // In table order (map order is unspecified).
    const auto& dropped_per_table = s.preprocess().ids_dropped_per_table();
    for (const auto& t : s.tables()) {
      auto it = dropped_per_table.find(t.name());
      if (it == dropped_per_table.end() || it->second <= 0) continue;
      out.push_back(absl::StrFormat(
          "ids dropped: table '%s' dropped %.0f ids (%.2f%% of its ids after dedup); raise "
          "its limits or disable dropping",
          t.name(), it->second, 100 * it->second / std::max(1.0, t.ids_after_dedup())));
    }
  }
  std::string skewed;  // one line for all skewed tables
  int skewed_tables = 0;
  for (const auto& t : s.tables()) {
    if (t.partition_skew() >= kSkewRatio) {
      int busiest = 0;
      for (int k = 0; k < t.partition_ids_size(); ++k) {
        if (t.partition_ids(k) > t.partition_ids(busiest)) busiest = k;
      }
      absl::StrAppendFormat(&skewed, "%s'%s' SparseCore %d %.2fx", skewed.empty() ? "" : ", ",
                            t.name(), busiest, t.partition_skew());
      ++skewed_tables;
    }
    if (t.padded_ids().has_number_value() && t.ids_after_dedup() > 0 &&
        t.padded_ids().number_value() / t.ids_after_dedup() >= kPaddingRatio) {
      out.push_back(absl::StrFormat(
          "padding overhead: table '%s' sends %.2fx its ids once padded; its partition "
          "limits are far above what the data needs",
          t.name(), t.padded_ids().number_value() / t.ids_after_dedup()));
    }
  }
  if (skewed_tables > 0) {
    out.push_back(absl::StrFormat(
        "partition skew on %d table(s), busiest SparseCore vs the mean ids per SparseCore: %s; "
        "hot ids make that SparseCore set the pace of the lookups",
        skewed_tables, skewed));
  }
  return out;
}

}  // namespace lemrt::runtime
