// RunRecorder::Finish: the end-of-run stage statistics, overlap, per-table
// counters and diagnosis, merged over all ranks with fixed-size reductions
// (nothing here grows with the number of steps).
#include <algorithm>
#include <bit>
#include <cmath>

#include "base/status_macros.h"
#include "runtime/observability/run_recorder.h"
#include "runtime/observability/stage_stats.h"

namespace lemrt::runtime {
namespace {


google::protobuf::Value NumberOrNull(int64_t v) {
  google::protobuf::Value out;
  if (v < 0) {
    out.set_null_value(google::protobuf::NULL_VALUE);
  } else {
    out.set_number_value(static_cast<double>(v));
  }
  return out;
}

// The bit pattern of a value >= 0 orders as an integer like the value does,
// so a max reduction over int64 finds the largest double.
int64_t OrderedBits(double v) { return std::bit_cast<int64_t>(std::max(0.0, v)); }
double FromOrderedBits(int64_t b) { return std::bit_cast<double>(b); }

// Collective: each rank's `sketches` become the sketches of all ranks' values
// (counts and sums added, extremes maximised). The result does not depend on
// which rank holds which value.
absl::Status MergeOverRanks(Communicator& comm, std::vector<base::QuantileSketch>& sketches) {
  const int n = static_cast<int>(sketches.size());
  const int B = base::QuantileSketch::kBuckets;
  std::vector<int64_t> counts(static_cast<size_t>(n) * B);
  std::vector<double> sums(n);
  std::vector<int64_t> extremes(2 * n);  // max, then -min (as ordered bits)
  for (int k = 0; k < n; ++k) {
    std::copy(sketches[k].counts().begin(), sketches[k].counts().end(), counts.begin() + k * B);
    sums[k] = sketches[k].sum();
    const bool empty = sketches[k].count() == 0;
    extremes[k] = empty ? 0 : OrderedBits(sketches[k].max());
    extremes[n + k] = empty ? -OrderedBits(HUGE_VAL) : -OrderedBits(sketches[k].min());
  }
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(counts)));
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<double>(sums)));
  LEMRT_RETURN_IF_ERROR(comm.AllReduceMax(std::span<int64_t>(extremes)));
  for (int k = 0; k < n; ++k) {
    sketches[k] = base::QuantileSketch::FromParts(
        std::span<const int64_t>(counts).subspan(static_cast<size_t>(k) * B, B), sums[k],
        FromOrderedBits(extremes[k]), FromOrderedBits(-extremes[n + k]));
  }
  return absl::OkStatus();
}

}  // namespace

void RunRecorder::AddQueueCounters() {
  // Steps whose lookup is done and whose TensorCore work has not started: the
  // hand-over queue between the SparseCore executor and the TensorCore.
  std::vector<std::pair<double, int>> changes;
  for (const auto& [forward_end, tc_begin] : traced_handovers_) {
    changes.emplace_back(forward_end, +1);
    changes.emplace_back(tc_begin, -1);
  }
  std::sort(changes.begin(), changes.end());
  int64_t depth = 0;
  for (const auto& [ms, delta] : changes) {
    depth = std::max<int64_t>(0, depth + delta);
    const auto t = origin_ + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double, std::milli>(ms));
    trace_->AddCounter("lookup queue", "steps", t, depth);
  }
}

absl::Status RunRecorder::FinishStages(Communicator& comm, summary::RunSummary* s) {
  // Steps this run completed (a resumed run starts later; every rank runs the
  // same steps).
  double overlap[2] = {stage_sum_ms_, busy_.Total()};
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<double>(overlap, 2)));
  std::vector<base::QuantileSketch> all = series_;
  LEMRT_RETURN_IF_ERROR(MergeOverRanks(comm, all));
  const double step_mean = all[kStep].mean();
  const char* names[kNumSeries] = {"host",     "sc_forward", "tc",  "sc_backward",
                                   "exchange", "host_wait",  "step"};
  for (int k = 0; k < kNumSeries; ++k) {
    auto* st = s->add_stages();
    st->set_name(names[k]);
    st->set_mean_ms(all[k].mean());
    st->set_p50_ms(all[k].Quantile(0.5));
    st->set_p99_ms(all[k].Quantile(0.99));
    st->set_share(step_mean > 0 ? all[k].mean() / step_mean : 0);
  }
  auto* o = s->mutable_overlap();
  o->set_stage_sum_ms(overlap[0]);
  o->set_busy_ms(overlap[1]);
  o->set_fraction(overlap[0] > 0 ? std::max(0.0, 1 - overlap[1] / overlap[0]) : 0);
  return absl::OkStatus();
}

absl::Status RunRecorder::FinishTables(Communicator& comm, summary::RunSummary* s) {
  const int T = num_tables_;
  const int64_t N = total_sparse_cores_;
  // Sums: ids [T], unique [T], padded [T], partition ids [T x N].
  std::vector<int64_t> sums;
  sums.insert(sums.end(), table_ids_.begin(), table_ids_.end());
  sums.insert(sums.end(), table_unique_.begin(), table_unique_.end());
  for (int64_t p : padded_) sums.push_back(std::max<int64_t>(p, 0));
  sums.insert(sums.end(), partition_ids_.begin(), partition_ids_.end());
  // Maxima (-1 = not reported anywhere): max partition, limits, max unique, padded reported.
  std::vector<int64_t> maxima;
  maxima.insert(maxima.end(), table_max_partition_.begin(), table_max_partition_.end());
  maxima.insert(maxima.end(), limit_ids_.begin(), limit_ids_.end());
  maxima.insert(maxima.end(), limit_unique_.begin(), limit_unique_.end());
  maxima.insert(maxima.end(), max_unique_.begin(), max_unique_.end());
  for (int64_t p : padded_) maxima.push_back(p < 0 ? -1 : 1);
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(sums)));
  LEMRT_RETURN_IF_ERROR(comm.AllReduceMax(std::span<int64_t>(maxima)));
  for (int t = 0; t < T; ++t) {
    auto* ts = s->add_tables();
    ts->set_name(config_.tables(t).name());
    ts->set_ids(static_cast<double>(sums[t]));
    ts->set_unique_ids(static_cast<double>(sums[T + t]));
    int64_t after_dedup = 0, busiest = 0;
    for (int64_t d = 0; d < N; ++d) {
      const int64_t v = sums[3 * T + t * N + d];
      ts->add_partition_ids(static_cast<double>(v));
      after_dedup += v;
      busiest = std::max(busiest, v);
    }
    ts->set_ids_after_dedup(static_cast<double>(after_dedup));
    ts->set_partition_skew(after_dedup > 0 ? static_cast<double>(busiest) * N / after_dedup : 0);
    ts->set_max_ids_per_partition(static_cast<double>(maxima[t]));
    *ts->mutable_max_ids_per_partition_limit() = NumberOrNull(maxima[T + t]);
    *ts->mutable_max_unique_ids_per_partition_limit() = NumberOrNull(maxima[2 * T + t]);
    *ts->mutable_max_unique_ids_per_partition() = NumberOrNull(maxima[3 * T + t]);
    *ts->mutable_padded_ids() = NumberOrNull(maxima[4 * T + t] < 0 ? -1 : sums[2 * T + t]);
  }
  return absl::OkStatus();
}

absl::Status RunRecorder::Finish(Communicator& comm, summary::RunSummary* s) {
  std::lock_guard<std::mutex> lock(mu_);
  (void)FlushRowLocked();
  // Steps still held with every stage in (their StepDone may be missing in
  // callers that time the stages only).
  for (StepTimes& t : slots_) RetireIfCompleteLocked(t, /*final=*/true);
  {
    double self[1] = {retired_steps_ > 0 ? self_ms_ / retired_steps_ : 0};
    LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<double>(self, 1)));
    s->set_recorder_ms_per_step(self[0] / comm.size());
  }
  if (trace_ != nullptr) AddQueueCounters();
  LEMRT_RETURN_IF_ERROR(FinishStages(comm, s));
  LEMRT_RETURN_IF_ERROR(FinishTables(comm, s));
  for (std::string& line : Diagnose(*s)) s->add_diagnosis(std::move(line));
  if (trace_ != nullptr) {
    LEMRT_RETURN_IF_ERROR(WriteMergedTrace(comm, *trace_, config_.observability().trace_json()));
  }
  csv_.reset();
  return AgreeOnStatus(comm, csv_status_);
}

}  // namespace lemrt::runtime
