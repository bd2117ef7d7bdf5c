#include "runtime/run_recorder.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "device/optimizers/lr_schedule.h"
#include "device/sparsecore/sparse_core.h"
#include "glog/logging.h"
#include "proto/config_loader.h"
#include "runtime/stage_stats.h"

namespace lemrt::runtime {
namespace {

constexpr const char* kStageNames[] = {"host", "sc_forward", "tc", "sc_backward"};
constexpr int kAllStages = (1 << RunRecorder::kNumStages) - 1;
// The SparseCore stage's all-to-alls, in the order it issues them (per minibatch).
constexpr const char* kForwardExchanges[] = {"alltoall counts", "alltoallv ids",
                                             "alltoallv partials"};

google::protobuf::Value NumberOrNull(int64_t v) {
  google::protobuf::Value out;
  if (v < 0) {
    out.set_null_value(google::protobuf::NULL_VALUE);
  } else {
    out.set_number_value(static_cast<double>(v));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RunRecorder>> RunRecorder::Create(const config::RunConfig& config,
                                                                 int rank, int world_size) {
  std::unique_ptr<RunRecorder> r(new RunRecorder(config, rank, world_size));
  const auto& o = config.observability();
  if (rank == 0 && o.has_metrics_csv()) {
    LEMRT_ASSIGN_OR_RETURN(r->csv_, MetricsCsv::Open(o.metrics_csv()));
  }
  return r;
}

RunRecorder::RunRecorder(const config::RunConfig& config, int rank, int world_size)
    : config_(config),
      rank_(rank),
      num_tables_(config.tables_size()),
      total_sparse_cores_(int64_t{world_size} * config.topology().sparse_cores_per_chip()),
      sparse_cores_per_chip_(config.topology().sparse_cores_per_chip()),
      origin_(Clock::now()) {
  for (const auto& f : config.features()) feature_table_.push_back(config::FindTable(config, f.table()));
  const int64_t steps = config.training().steps();
  const auto& o = config.observability();
  if (o.has_trace_json()) {
    trace_ = std::make_unique<TraceBuffer>(TraceThreads{sparse_cores_per_chip_});
    trace_first_ = o.trace_first_step() - 1;
    trace_last_ = std::min<int64_t>(o.trace_last_step(), steps) - 1;
  }
  steps_.resize(steps);
  intervals_.reserve(steps * kNumStages);
  table_ids_.assign(num_tables_, 0);
  table_unique_.assign(num_tables_, 0);
  table_max_partition_.assign(num_tables_, 0);
  partition_ids_.assign(num_tables_ * total_sparse_cores_, 0);
  scratch_counts_.assign(num_tables_, 0);
  limit_ids_.assign(num_tables_, -1);
  limit_unique_.assign(num_tables_, -1);
  max_unique_.assign(num_tables_, -1);
  padded_.assign(num_tables_, -1);
}

bool RunRecorder::Traced(int64_t step) const {
  return trace_ != nullptr && step >= trace_first_ && step <= trace_last_;
}

double RunRecorder::Ms(Clock::time_point t) const {
  return std::chrono::duration<double, std::milli>(t - origin_).count();
}

void RunRecorder::StageLocked(int64_t step, Stage stage, Clock::time_point begin,
                              Clock::time_point end) {
  if (step < 0 || step >= static_cast<int64_t>(steps_.size())) return;
  StepTimes& t = steps_[step];
  const double b = Ms(begin), e = Ms(end);
  if ((t.stages_mask & (1 << stage)) == 0) {
    t.begin_ms[stage] = b;
    t.end_ms[stage] = e;
  } else {
    t.begin_ms[stage] = std::min(t.begin_ms[stage], b);
    t.end_ms[stage] = std::max(t.end_ms[stage], e);
  }
  t.stages_mask |= 1 << stage;
  t.dur_ms[stage] += e - b;
  intervals_.emplace_back(b, e);
}

void RunRecorder::HostDone(int64_t step, Clock::time_point begin, Clock::time_point end,
                           const host::Batch& batch, const host::PartitionedCoo& coo) {
  TimedLock lock(*this);
  StageLocked(step, kHost, begin, end);
  for (int f = 0; f < batch.num_features() && f < static_cast<int>(feature_table_.size()); ++f) {
    table_ids_[feature_table_[f]] += static_cast<int64_t>(batch.ids[f].size());
  }
  // A partition is (source local SC, destination SC, table): segment
  // d * S + s holds the entries from local SC s to SC d.
  const int S = std::max(1, coo.local_sparse_cores);
  for (size_t k = 0; k + 1 < coo.segment_offsets.size(); ++k) {
    std::fill(scratch_counts_.begin(), scratch_counts_.end(), 0);
    for (int64_t i = coo.segment_offsets[k]; i < coo.segment_offsets[k + 1]; ++i) {
      ++scratch_counts_[coo.entries[i].table];
    }
    const int64_t dest = static_cast<int64_t>(k) / S;
    for (int t = 0; t < num_tables_; ++t) {
      table_max_partition_[t] = std::max(table_max_partition_[t], scratch_counts_[t]);
      partition_ids_[t * total_sparse_cores_ + dest] += scratch_counts_[t];
    }
  }
  if (Traced(step)) {
    trace_->AddSpan(TraceThreads{sparse_cores_per_chip_}.host(), "host", step + 1, begin, end,
                    {{"samples", batch.num_samples},
                     {"ids", coo.ids_total},
                     {"ids_after_dedup", coo.ids_after_dedup}});
  }
}

void RunRecorder::SparseDone(int64_t step, Stage stage, Clock::time_point begin,
                             Clock::time_point end,
                             std::span<const SparseStepBuffers> minibatches) {
  TimedLock lock(*this);
  StageLocked(step, stage, begin, end);
  const bool backward = stage == kScBackward;
  const bool traced = Traced(step);
  const TraceThreads threads{sparse_cores_per_chip_};
  int ordinal = 0;
  for (const Exchange& x : pending_exchanges_) {
    if (x.begin < begin) continue;  // an earlier evaluation's exchange
    if (step >= 0 && step < static_cast<int64_t>(steps_.size())) {
      steps_[step].exchange_ms += std::chrono::duration<double, std::milli>(x.end - x.begin).count();
    }
    if (traced) {
      const char* name = backward ? "alltoallv gradients" : kForwardExchanges[ordinal % 3];
      const int64_t minibatch = backward ? ordinal : ordinal / 3;
      trace_->AddSpan(threads.exchange(), name, step + 1, x.begin, x.end,
                      {{"minibatch", minibatch},
                       {"bytes_sent", x.bytes_sent},
                       {"bytes_received", x.bytes_received}});
    }
    ++ordinal;
  }
  pending_exchanges_.clear();
  for (size_t m = 0; m < minibatches.size(); ++m) {
    if (!backward) {
      for (const auto& state : minibatches[m].sc_states) {
        for (uint64_t key : state.unique_keys) ++table_unique_[device::UniqueKeyTable(key)];
      }
    }
    if (!traced) continue;
    for (const SparseCoreSpan& span : minibatches[m].sc_spans) {
      if (span.backward != backward) continue;
      trace_->AddSpan(threads.sparse_core(span.local_sc), kStageNames[stage], step + 1,
                      span.begin, span.end,
                      {{"minibatch", static_cast<int64_t>(m)},
                       {"ids", span.ids},
                       {"unique_ids", span.unique_ids}});
    }
  }
}

void RunRecorder::ForwardDone(int64_t step, Clock::time_point begin, Clock::time_point end,
                              std::span<const SparseStepBuffers> minibatches) {
  SparseDone(step, kScForward, begin, end, minibatches);
}

void RunRecorder::BackwardDone(int64_t step, Clock::time_point begin, Clock::time_point end,
                               std::span<const SparseStepBuffers> minibatches) {
  SparseDone(step, kScBackward, begin, end, minibatches);
}

void RunRecorder::DenseDone(int64_t step, Clock::time_point begin, Clock::time_point end,
                            int64_t samples) {
  TimedLock lock(*this);
  StageLocked(step, kTc, begin, end);
  if (Traced(step)) {
    trace_->AddSpan(TraceThreads{sparse_cores_per_chip_}.tensor_core(), "tc", step + 1, begin, end,
                    {{"samples", samples}});
  }
}

void RunRecorder::HostQueueWait(int64_t step, double wait_ms) {
  TimedLock lock(*this);
  if (step < 0 || step >= static_cast<int64_t>(steps_.size())) return;
  steps_[step].host_wait_ms += wait_ms;
}

void RunRecorder::OnHostQueueDepth(int64_t step, Clock::time_point t, int64_t ready) {
  if (!Traced(step)) return;
  TimedLock lock(*this);
  trace_->AddCounter("host queue", "steps", t, ready);
}

void RunRecorder::OnExchange(Clock::time_point begin, Clock::time_point end, int64_t bytes_sent,
                             int64_t bytes_received) {
  TimedLock lock(*this);
  pending_exchanges_.push_back({begin, end, bytes_sent, bytes_received});
}

MetricsRow RunRecorder::WindowRowLocked(int64_t step, double loss) const {
  MetricsRow row;
  row.step = step + 1;
  row.loss = loss;
  double step_sum = 0;
  int64_t n = 0, complete = 0;
  std::array<double, kNumStages> stage_sum{};
  double exchange_sum = 0;
  for (int64_t j = window_first_step_; j <= step; ++j) {
    const StepTimes& t = steps_[j];
    step_sum += t.step_ms;
    ++n;
    // With pipelining the update of the newest steps may still be running.
    if (t.stages_mask != kAllStages) continue;
    ++complete;
    for (int k = 0; k < kNumStages; ++k) stage_sum[k] += t.dur_ms[k];
    exchange_sum += t.exchange_ms;
  }
  if (n > 0) row.step_ms = step_sum / n;
  if (step_sum > 0) row.samples_per_sec = n * config_.training().global_batch() / (step_sum / 1e3);
  const auto& tc = config_.training();
  row.dense_lr = device::LearningRateSchedule::ForDense(tc).Rate(
      tc.dense_optimizer().has_learning_rate() ? tc.dense_optimizer().learning_rate()
                                               : tc.dense_learning_rate(),
      step);
  row.embedding_lr =
      device::LearningRateSchedule::ForEmbeddings(tc).Rate(tc.embedding_learning_rate(), step);
  if (complete > 0) {
    row.host_ms = stage_sum[kHost] / complete;
    row.sc_forward_ms = stage_sum[kScForward] / complete;
    row.tc_ms = stage_sum[kTc] / complete;
    row.sc_backward_ms = stage_sum[kScBackward] / complete;
    row.exchange_ms = exchange_sum / complete;
  }
  return row;
}

absl::Status RunRecorder::FlushRowLocked() {
  if (!pending_row_.has_value() || csv_ == nullptr) return absl::OkStatus();
  absl::Status st = csv_->Append(*pending_row_);
  pending_row_.reset();
  if (csv_status_.ok()) csv_status_ = st;
  return st;
}

void RunRecorder::StepDone(int64_t step, Clock::time_point begin, Clock::time_point end,
                           double loss) {
  TimedLock lock(*this);
  if (step < 0 || step >= static_cast<int64_t>(steps_.size())) return;
  steps_[step].step_ms = std::chrono::duration<double, std::milli>(end - begin).count();
  const auto& tc = config_.training();
  const bool log_now = tc.log_every() > 0 && (step + 1) % tc.log_every() == 0;
  const bool eval_step =
      step + 1 == tc.steps() || (tc.eval_every() > 0 && (step + 1) % tc.eval_every() == 0);
  if (!log_now && !(csv_ != nullptr && eval_step)) return;
  const MetricsRow row = WindowRowLocked(step, loss);
  window_first_step_ = step + 1;
  if (log_now && rank_ == 0) {
    LOG(INFO) << ProgressLine(row.step, tc.steps(), loss, row.samples_per_sec, row.step_ms / 1e3);
  }
  if (csv_ == nullptr) return;
  (void)FlushRowLocked();
  pending_row_ = row;
  if (!eval_step) (void)FlushRowLocked();  // else EvalDone adds the eval columns
}

void RunRecorder::EvalDone(int64_t step, double auc, double logloss) {
  TimedLock lock(*this);
  if (!pending_row_.has_value() || pending_row_->step != step + 1) return;
  pending_row_->eval_auc = auc;
  pending_row_->eval_logloss = logloss;
  (void)FlushRowLocked();
}

void RunRecorder::ReportPartitionLimits(int table, int64_t max_ids, int64_t max_unique_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_ids_[table] = max_ids;
  limit_unique_[table] = max_unique_ids;
}

void RunRecorder::ReportMaxUniqueIdsPerPartition(int table, int64_t unique_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  max_unique_[table] = std::max(max_unique_[table], unique_ids);
}

void RunRecorder::ReportPaddedIds(int table, int64_t ids) {
  std::lock_guard<std::mutex> lock(mu_);
  padded_[table] = std::max<int64_t>(padded_[table], 0) + ids;
}

void RunRecorder::ReportQueueDepth(const char* queue, Clock::time_point t, int64_t depth) {
  if (trace_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  trace_->AddCounter(queue, "depth", t, depth);
}

void RunRecorder::AddQueueCounters() {
  // Steps whose lookup is done and whose TensorCore work has not started: the
  // hand-over queue between the SparseCore executor and the TensorCore.
  std::vector<std::pair<double, int>> changes;
  for (int64_t j = trace_first_; j <= trace_last_ && j < static_cast<int64_t>(steps_.size()); ++j) {
    const StepTimes& t = steps_[j];
    const int need = (1 << kScForward) | (1 << kTc);
    if ((t.stages_mask & need) != need) continue;
    changes.emplace_back(t.end_ms[kScForward], +1);
    changes.emplace_back(t.begin_ms[kTc], -1);
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
  constexpr int kSeries = kNumStages + 3;  // + exchange, host_wait, step
  std::array<std::vector<float>, kSeries> mine;
  double overlap[2] = {0, 0};  // stage sum, busy
  for (const StepTimes& t : steps_) {
    if (t.stages_mask != kAllStages) continue;
    for (int k = 0; k < kNumStages; ++k) {
      mine[k].push_back(static_cast<float>(t.dur_ms[k]));
      overlap[0] += t.dur_ms[k];
    }
    mine[kNumStages].push_back(static_cast<float>(t.exchange_ms));
    mine[kNumStages + 1].push_back(static_cast<float>(t.host_wait_ms));
    mine[kNumStages + 2].push_back(static_cast<float>(t.step_ms));
  }
  overlap[1] = BusyTime(intervals_);
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<double>(overlap, 2)));
  std::array<Distribution, kSeries> dist;
  for (int k = 0; k < kSeries; ++k) {
    std::vector<float> all;
    LEMRT_RETURN_IF_ERROR(comm.AllGather(mine[k], &all));
    dist[k] = Distribute(std::vector<double>(all.begin(), all.end()));
  }
  const double step_mean = dist[kSeries - 1].mean;
  const char* names[kSeries] = {"host",     "sc_forward", "tc",  "sc_backward",
                                "exchange", "host_wait",  "step"};
  for (int k = 0; k < kSeries; ++k) {
    auto* st = s->add_stages();
    st->set_name(names[k]);
    st->set_mean_ms(dist[k].mean);
    st->set_p50_ms(dist[k].p50);
    st->set_p99_ms(dist[k].p99);
    st->set_share(step_mean > 0 ? dist[k].mean / step_mean : 0);
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

RunRecorder::TimedLock::TimedLock(RunRecorder& r) : r_(r), begin_(Clock::now()) { r_.mu_.lock(); }

RunRecorder::TimedLock::~TimedLock() {
  r_.self_ms_ += std::chrono::duration<double, std::milli>(Clock::now() - begin_).count();
  r_.mu_.unlock();
}

absl::Status RunRecorder::Finish(Communicator& comm, summary::RunSummary* s) {
  std::lock_guard<std::mutex> lock(mu_);
  (void)FlushRowLocked();
  {
    int64_t steps = 0;
    for (const StepTimes& t : steps_) steps += t.stages_mask == kAllStages ? 1 : 0;
    double self[1] = {steps > 0 ? self_ms_ / steps : 0};
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
