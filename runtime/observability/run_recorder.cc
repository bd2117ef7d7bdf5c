#include "runtime/observability/run_recorder.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "device/optimizers/lr_schedule.h"
#include "device/sparsecore/sparse_core.h"
#include "glog/logging.h"
#include "proto/config_loader.h"
#include "runtime/observability/stage_stats.h"

namespace lemrt::runtime {
namespace {

constexpr const char* kStageNames[] = {"host", "sc_forward", "tc", "sc_backward"};
constexpr int kAllStages = (1 << RunRecorder::kNumStages) - 1;
// The SparseCore stage's all-to-alls, in the order it issues them (per minibatch).
constexpr const char* kForwardExchanges[] = {"alltoall counts", "alltoallv ids",
                                             "alltoallv partials"};

}  // namespace

absl::StatusOr<std::unique_ptr<RunRecorder>> RunRecorder::Create(const config::RunConfig& config,
                                                                 int rank, int world_size) {
  std::unique_ptr<RunRecorder> r(new RunRecorder(config, rank, world_size));
  const auto& o = config.observability();
  if (rank == 0 && o.has_metrics_csv()) {
    std::vector<std::string> tasks;
    for (const config::TaskConfig& task : config.model().tasks()) tasks.push_back(task.name());
    LEMRT_ASSIGN_OR_RETURN(r->csv_, MetricsCsv::Open(o.metrics_csv(), tasks));
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
  slots_.resize(kStepSlots);
  series_.resize(kNumSeries);
  table_ids_.assign(num_tables_, 0);
  table_unique_.assign(num_tables_, 0);
  table_max_partition_.assign(num_tables_, 0);
  partition_ids_.assign(num_tables_ * total_sparse_cores_, 0);
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

RunRecorder::StepTimes* RunRecorder::SlotLocked(int64_t step) {
  if (step < 0) return nullptr;
  StepTimes& t = slots_[step % kStepSlots];
  if (t.step == step) return t.retired ? nullptr : &t;
  if (t.step > step) return nullptr;
  if (t.step >= 0) RetireIfCompleteLocked(t, /*final=*/true);  // else dropped
  t = StepTimes{};
  t.step = step;
  return &t;
}

void RunRecorder::RetireIfCompleteLocked(StepTimes& t, bool final) {
  if (t.retired || t.step < 0 || t.stages_mask != kAllStages || !(t.step_done || final)) return;
  t.retired = true;
  ++retired_steps_;
  for (int k = 0; k < kNumStages; ++k) {
    series_[k].Add(t.dur_ms[k]);
    stage_sum_ms_ += t.dur_ms[k];
    window_stage_ms_[k] += t.dur_ms[k];
  }
  series_[kExchange].Add(t.exchange_ms);
  retired_within_host_ += t.sent_within_host;
  retired_between_hosts_ += t.sent_between_hosts;
  series_[kHostWait].Add(t.host_wait_ms);
  series_[kStep].Add(t.step_ms);
  window_stage_ms_[kNumStages] += t.exchange_ms;
  ++window_complete_;
  if (Traced(t.step)) traced_handovers_.emplace_back(t.end_ms[kScForward], t.begin_ms[kTc]);
}

void RunRecorder::StageLocked(int64_t step, Stage stage, Clock::time_point begin,
                              Clock::time_point end) {
  StepTimes* slot = SlotLocked(step);
  if (slot == nullptr) return;
  StepTimes& t = *slot;
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
  busy_.Add(b, e);
  RetireIfCompleteLocked(t, /*final=*/false);
}

void RunRecorder::HostDone(int64_t step, Clock::time_point begin, Clock::time_point end,
                           const host::Batch& batch, const layout::PartitionedCoo& coo) {
  TimedLock lock(*this);
  StageLocked(step, kHost, begin, end);
  for (int f = 0; f < batch.num_features() && f < static_cast<int>(feature_table_.size()); ++f) {
    table_ids_[feature_table_[f]] += static_cast<int64_t>(batch.ids[f].size());
  }
  if (Traced(step)) {
    trace_->AddSpan(TraceThreads{sparse_cores_per_chip_}.host(), "host", step + 1, begin, end,
                    {{"samples", batch.num_samples},
                     {"ids", coo.ids_total},
                     {"ids_after_dedup", coo.ids_after_dedup}});
  }
}

void RunRecorder::AddPartitionCounts(std::span<const int64_t> segment_table_counts,
                                     int local_sparse_cores) {
  TimedLock lock(*this);
  // A partition is (source local SC, destination SC, table): segment
  // d * S + s holds the entries from local SC s to SC d.
  const int S = std::max(1, local_sparse_cores);
  const size_t segs = segment_table_counts.size() / std::max(1, num_tables_);
  for (size_t k = 0; k < segs; ++k) {
    const int64_t dest = static_cast<int64_t>(k) / S;
    for (int t = 0; t < num_tables_; ++t) {
      const int64_t count = segment_table_counts[k * num_tables_ + t];
      table_max_partition_[t] = std::max(table_max_partition_[t], count);
      partition_ids_[t * total_sparse_cores_ + dest] += count;
    }
  }
}

void RunRecorder::SparseDone(int64_t step, Stage stage, Clock::time_point begin,
                             Clock::time_point end,
                             std::span<const SparseStepBuffers> minibatches) {
  TimedLock lock(*this);
  const bool backward = stage == kScBackward;
  const bool traced = Traced(step);
  const TraceThreads threads{sparse_cores_per_chip_};
  // The exchanges count before the stage, which may complete the step.
  StepTimes* slot = SlotLocked(step);
  int ordinal = 0;
  for (const Exchange& x : pending_exchanges_) {
    if (x.begin < begin) continue;  // an earlier evaluation's exchange
    if (slot != nullptr) {
      slot->exchange_ms += std::chrono::duration<double, std::milli>(x.end - x.begin).count();
      slot->sent_within_host += x.bytes.sent_within_host;
      slot->sent_between_hosts += x.bytes.sent_between_hosts;
    }
    if (traced) {
      const char* name = backward ? "alltoallv gradients" : kForwardExchanges[ordinal % 3];
      const int64_t minibatch = backward ? ordinal : ordinal / 3;
      trace_->AddSpan(threads.exchange(), name, step + 1, x.begin, x.end,
                      {{"minibatch", minibatch},
                       {"bytes_sent", x.bytes.sent},
                       {"bytes_received", x.bytes.received}});
    }
    ++ordinal;
  }
  pending_exchanges_.clear();
  StageLocked(step, stage, begin, end);
  for (size_t m = 0; m < minibatches.size(); ++m) {
    if (!backward) {
      for (const auto& state : minibatches[m].sc_states) {
        for (uint64_t key : state.unique_keys) ++table_unique_[device::UniqueKeyTable(key)];
      }
    }
    if (!traced) continue;
    for (const SparseCoreSpan& span : minibatches[m].sc_spans) {
      if (span.backward != backward) continue;
      trace_->AddSpan(threads.sparse_core(span.local_sc),
                      span.numbering ? "sc_dedup" : kStageNames[stage], step + 1,
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
  StepTimes* t = SlotLocked(step);
  if (t != nullptr) t->host_wait_ms += wait_ms;
}

void RunRecorder::OnHostQueueDepth(int64_t step, Clock::time_point t, int64_t ready) {
  if (!Traced(step)) return;
  TimedLock lock(*this);
  trace_->AddCounter("host queue", "steps", t, ready);
}

void RunRecorder::OnExchange(Clock::time_point begin, Clock::time_point end,
                             const ExchangeBytes& bytes) {
  TimedLock lock(*this);
  pending_exchanges_.push_back({begin, end, bytes});
}

HostBytesPerStep RunRecorder::exchange_bytes_per_step() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (retired_steps_ == 0) return {};
  return {static_cast<double>(retired_within_host_) / retired_steps_,
          static_cast<double>(retired_between_hosts_) / retired_steps_};
}

MetricsRow RunRecorder::WindowRowLocked(int64_t step, double loss) const {
  MetricsRow row;
  row.step = step + 1;
  row.loss = loss;
  const int64_t n = window_steps_;
  if (n > 0) row.step_ms = window_step_ms_ / n;
  if (window_step_ms_ > 0) {
    row.samples_per_sec = n * config_.training().global_batch() / (window_step_ms_ / 1e3);
  }
  const auto& tc = config_.training();
  row.dense_lr = device::LearningRateSchedule::ForDense(tc).Rate(
      tc.dense_optimizer().has_learning_rate() ? tc.dense_optimizer().learning_rate()
                                               : tc.dense_learning_rate(),
      step);
  row.embedding_lr =
      device::LearningRateSchedule::ForEmbeddings(tc).Rate(tc.embedding_learning_rate(), step);
  if (window_complete_ > 0) {
    const double c = static_cast<double>(window_complete_);
    row.host_ms = window_stage_ms_[kHost] / c;
    row.sc_forward_ms = window_stage_ms_[kScForward] / c;
    row.tc_ms = window_stage_ms_[kTc] / c;
    row.sc_backward_ms = window_stage_ms_[kScBackward] / c;
    row.exchange_ms = window_stage_ms_[kNumStages] / c;
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
  StepTimes* t = SlotLocked(step);
  if (t == nullptr) return;
  t->step_ms = std::chrono::duration<double, std::milli>(end - begin).count();
  t->step_done = true;
  ++window_steps_;
  window_step_ms_ += t->step_ms;
  RetireIfCompleteLocked(*t, /*final=*/false);
  const auto& tc = config_.training();
  const bool log_now = tc.log_every() > 0 && (step + 1) % tc.log_every() == 0;
  const bool eval_step =
      step + 1 == tc.steps() || (tc.eval_every() > 0 && (step + 1) % tc.eval_every() == 0);
  if (!log_now && !(csv_ != nullptr && eval_step)) return;
  const MetricsRow row = WindowRowLocked(step, loss);
  window_steps_ = 0;
  window_step_ms_ = 0;
  window_complete_ = 0;
  window_stage_ms_.fill(0);
  if (log_now && rank_ == 0) {
    LOG(INFO) << ProgressLine(row.step, tc.steps(), loss, row.samples_per_sec, row.step_ms / 1e3);
  }
  if (csv_ == nullptr) return;
  (void)FlushRowLocked();
  pending_row_ = row;
  if (!eval_step) (void)FlushRowLocked();  // else EvalDone adds the eval columns
}

void RunRecorder::EvalDone(int64_t step, const EvalColumns& eval) {
  TimedLock lock(*this);
  if (!pending_row_.has_value() || pending_row_->step != step + 1) return;
  pending_row_->eval_auc = eval.auc;
  pending_row_->eval_logloss = eval.logloss;
  auto defined = [](double x) { return std::isnan(x) ? std::nullopt : std::optional<double>(x); };
  pending_row_->eval_ne = defined(eval.ne);
  pending_row_->eval_calibration = defined(eval.calibration);
  pending_row_->eval_gauc = defined(eval.gauc);
  pending_row_->eval_tasks.clear();
  for (const EvalColumns& t : eval.tasks) {
    for (double x : {t.auc, t.logloss, t.ne, t.calibration, t.gauc}) {
      pending_row_->eval_tasks.push_back(defined(x));
    }
  }
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

RunRecorder::TimedLock::TimedLock(RunRecorder& r) : r_(r), begin_(Clock::now()) { r_.mu_.lock(); }

RunRecorder::TimedLock::~TimedLock() {
  r_.self_ms_ += std::chrono::duration<double, std::milli>(Clock::now() - begin_).count();
  r_.mu_.unlock();
}

}  // namespace lemrt::runtime
