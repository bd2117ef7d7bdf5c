#include "runtime/observability/stage_stats.h"

#include <algorithm>
#include <iterator>

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

BusyTimeAccumulator::BusyTimeAccumulator() { periods_.reserve(kPeriods + 1); }

void BusyTimeAccumulator::Add(double begin, double end) {
  if (folded_any_) begin = std::max(begin, frontier_);
  if (!(end > begin)) return;
  // The first period that could touch [begin, end): the last one beginning
  // at or before `begin`, if it reaches it.
  auto it = std::lower_bound(periods_.begin(), periods_.end(), begin,
                             [](const std::pair<double, double>& p, double b) {
                               return p.first < b;
                             });
  if (it != periods_.begin() && std::prev(it)->second >= begin) --it;
  auto last = it;
  while (last != periods_.end() && last->first <= end) {
    begin = std::min(begin, last->first);
    end = std::max(end, last->second);
    ++last;
  }
  it = periods_.erase(it, last);
  periods_.insert(it, {begin, end});
  if (static_cast<int>(periods_.size()) > kPeriods) {
    const auto fold_end = periods_.begin() + kPeriods / 2;
    for (auto p = periods_.begin(); p != fold_end; ++p) folded_ms_ += p->second - p->first;
    frontier_ = std::prev(fold_end)->second;
    folded_any_ = true;
    periods_.erase(periods_.begin(), fold_end);
  }
}

double BusyTimeAccumulator::Total() const {
  double busy = folded_ms_;
  for (const auto& [b, e] : periods_) busy += e - b;
  return busy;
}

namespace {

// Diagnose's checks, each appending its lines to `*out`. The host stage (or,
// with host workers, the SparseCores' wait for it) taking much of the step.
void DiagnoseHost(const summary::RunSummary& s, std::vector<std::string>* out) {
  const summary::StageStats* host = FindStage(s, "host");
  const summary::StageStats* host_wait = FindStage(s, "host_wait");
  if (host_wait != nullptr) {
    // The device stages' view: the SparseCore executor waiting for the host
    // queue to hand it its next step.
    if (host_wait->share() >= kHostWaitShare) {
      out->push_back(absl::StrFormat(
          "host-bound: the SparseCores waited for the host queue %.0f%% of the step (%.2f ms "
          "of %.2f ms; host preprocessing %.2f ms per step on the workers); raise "
          "sparse_core.host_worker_threads or maximum_parallel_iterations, or speed up the "
          "input",
          100 * host_wait->share(), host_wait->mean_ms(),
          host_wait->mean_ms() / host_wait->share(), host != nullptr ? host->mean_ms() : 0.0));
    }
  } else if (host != nullptr && host->share() >= kHostBoundShare) {
    out->push_back(absl::StrFormat(
        "host-bound: host preprocessing takes %.0f%% of the step (%.2f ms of %.2f ms); the "
        "SparseCores wait for the host queue every step",
        100 * host->share(), host->mean_ms(), host->mean_ms() / host->share()));
  }
}

// Why the stages did not overlap: the schedule, or the threads it ran on.
std::string NoOverlapCause(const summary::RunSummary& s) {
  if (!s.pipelining()) {
    return "pipelining is off (sparse_core.disable_full_embedding_pipelining), so host, "
           "SparseCore and TensorCore work could be pipelined, at the cost of stale lookups";
  }
  if (s.has_threads() && !s.threads().sparsecore_executor_thread()) {
    return "the pipelined schedule ran without a SparseCore thread (pipeline_without_threads: "
           "a rank owns fewer than 2 cores, or it was set); with 2 or more cores per rank its "
           "stages overlap";
  }
  return "the pipeline's stages waited for each other (see the stages' shares above)";
}

// Stages that did not overlap; steps split into many minibatches.
void DiagnoseSchedule(const summary::RunSummary& s, std::vector<std::string>* out) {
  if (s.has_overlap() && s.overlap().stage_sum_ms() > 0 &&
      s.overlap().fraction() < kNoOverlapFraction) {
    out->push_back(absl::StrFormat(
        "no overlap: the stages ran one after another (%.1f%% of stage time hidden): %s",
        100 * s.overlap().fraction(), NoOverlapCause(s)));
  }
  if (s.has_preprocess() && s.preprocess().mean_minibatches() >= kManyMinibatches) {
    out->push_back(absl::StrFormat(
        "many minibatches: steps needed %.2f minibatches on average (at most %d); the "
        "partition limits are tight for this data, and each minibatch is one more exchange",
        s.preprocess().mean_minibatches(), s.preprocess().max_minibatches()));
  }
}

// Ids dropped by the partition limits, per table.
void DiagnoseDrops(const summary::RunSummary& s, std::vector<std::string>* out) {
  if (s.has_preprocess()) {
    // In table order (map order is unspecified).
    const auto& dropped_per_table = s.preprocess().ids_dropped_per_table();
    for (const auto& t : s.tables()) {
      auto it = dropped_per_table.find(t.name());
      if (it == dropped_per_table.end() || it->second <= 0) continue;
      out->push_back(absl::StrFormat(
          "ids dropped: table '%s' dropped %.0f ids (%.2f%% of its ids after dedup); raise "
          "its limits or disable dropping",
          t.name(), it->second, 100 * it->second / std::max(1.0, t.ids_after_dedup())));
    }
  }
}

// Per table, padding far above the ids sent; then one line for the tables
// whose busiest SparseCore gets far more ids than the mean.
void DiagnoseTables(const summary::RunSummary& s, std::vector<std::string>* out) {
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
      out->push_back(absl::StrFormat(
          "padding overhead: table '%s' sends %.2fx its ids once padded; its partition "
          "limits are far above what the data needs",
          t.name(), t.padded_ids().number_value() / t.ids_after_dedup()));
    }
  }
  if (skewed_tables > 0) {
    out->push_back(absl::StrFormat(
        "partition skew on %d table(s), busiest SparseCore vs the mean ids per SparseCore: %s; "
        "hot ids make that SparseCore set the pace of the lookups; tables.hot_rows replicates "
        "a table's most frequent rows on every chip (lemrt_limits --hot_rows shows the skew "
        "without them)",
        skewed_tables, skewed));
  }
}

}  // namespace

std::vector<std::string> Diagnose(const summary::RunSummary& s) {
  std::vector<std::string> out;
  DiagnoseHost(s, &out);
  DiagnoseSchedule(s, &out);
  DiagnoseDrops(s, &out);
  DiagnoseTables(s, &out);
  return out;
}

}  // namespace lemrt::runtime
