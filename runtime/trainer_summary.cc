// Trainer::Summarise: the final evaluation and the run summary, from the
// step loop's totals and every component's statistics. One pass (Summarise)
// makes every collective, in the order trainer.h lists; the Fill* functions
// below only copy what it gathered into the summary's sections.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "device/plan/memory_plan.h"
#include "device/plan/memory_plan_report.h"
#include "device/tensorcore/dense_model.h"
#include "device/tensorcore/gemm.h"
#include "glog/logging.h"
#include "layout/stacking.h"
#include "runtime/checkpoint/checkpointer.h"
#include "runtime/eval/eval_summary.h"
#include "runtime/observability/model_stats.h"
#include "runtime/observability/placement_summary.h"
#include "runtime/trainer.h"

namespace lemrt::runtime {

// What the summary needs from all ranks, gathered by GatherSummaryTotals.
struct Trainer::SummaryTotals {
  ModelStats model;  // the whole model's L2 norm and checksum
  // Sums over ranks: ids before and after deduplication, unique per partition.
  int64_t ids_total = 0;
  int64_t ids_after_dedup = 0;
  int64_t unique_ids = 0;
  double slowest_train_sec = 0;  // the slowest rank's train_sec (the run's wall time)
  int64_t skipped_lines = 0;     // sum over ranks
  // Per feature, sums over ranks: values, oov, truncated (3 per feature;
  // empty when the data source counts none).
  std::vector<int64_t> feature_sums;
};

absl::StatusOr<summary::RunSummary> Trainer::Summarise(const LoopTotals& totals,
                                                       const EvalResult& eval) {
  // A stopped run (a preemption) has no final evaluation. An early stop
  // ends right after an evaluation of this same model (not recorded twice).
  const bool stopped = totals.stop_signal != 0;
  if (!stopped && totals.stopped_early_at == 0) {
    LEMRT_RETURN_IF_ERROR(RecordFinalEvaluation(totals.end_step, eval));
  }
  LEMRT_ASSIGN_OR_RETURN(const SummaryTotals all, GatherSummaryTotals(totals));
  summary::RunSummary s;
  FillRunShape(totals, all, &s);
  FillTrain(totals, all, &s);
  FillFeatureData(all, &s);
  FillEvalStats(eval, s.mutable_eval());  // a stopped run: samples 0, no metrics
  FillModel(all, &s);
  FillBestEval(&s);
  FillSetup(&s);
  FillBreakdown(totals, &s);
  LEMRT_RETURN_IF_ERROR(host_->Summarise(s.mutable_preprocess()));
  LEMRT_RETURN_IF_ERROR(recorder_->Finish(sparse_comm_, &s));
  LEMRT_RETURN_IF_ERROR(FillPlacement(sparse_comm_, placement_,
                                      recorder_->exchange_bytes_per_step(), s.mutable_placement()));
  for (const auto& stage : s.stages()) {
    // The exchange's mean over chips, known once the recorder has finished.
    if (stage.name() == "exchange") s.mutable_breakdown_ms()->set_exchange(stage.mean_ms());
  }
  return s;
}

absl::Status Trainer::RecordFinalEvaluation(int64_t steps_done, const EvalResult& eval) {
  recorder_->EvalDone(steps_done - 1, MetricsColumns(eval));
  if (sparse_comm_.rank() == 0) {
    LOG(INFO) << absl::StrFormat("eval at step %d: %s", steps_done, FormatEvalMetrics(eval));
  }
  if (config_.training().eval_every() > 0) {
    LEMRT_RETURN_IF_ERROR(AfterEvaluation(steps_done, eval, /*final=*/true).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<Trainer::SummaryTotals> Trainer::GatherSummaryTotals(const LoopTotals& totals) {
  SummaryTotals all;
  // The rows are read on the start-up's threads (every owned core): the
  // step's threads are idle by now, and the result is the same on any count.
  const auto t0 = std::chrono::steady_clock::now();
  LEMRT_ASSIGN_OR_RETURN(all.model, ComputeModelStats(sparse_comm_, *sparse_,
                                                      dense_->model().params(), startup_threads_));
  if (sparse_comm_.rank() == 0) {
    LOG(INFO) << absl::StrFormat(
        "model statistics (checksum, params L2) in %.2f s on %d threads",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
        startup_threads_);
  }
  int64_t ids[3] = {stats_.ids_total(), stats_.ids_after_dedup(), stats_.unique_ids()};
  LEMRT_RETURN_IF_ERROR(sparse_comm_.AllReduceSum(std::span<int64_t>(ids, 3)));
  all.ids_total = ids[0];
  all.ids_after_dedup = ids[1];
  all.unique_ids = ids[2];
  // The slowest rank defines the step time.
  all.slowest_train_sec = stats_.train_sec();
  std::vector<float> train_secs;
  LEMRT_RETURN_IF_ERROR(dense_comm_.AllGather(
      std::span<const float>(std::vector<float>{static_cast<float>(stats_.train_sec())}),
      &train_secs));
  for (float v : train_secs) all.slowest_train_sec = std::max<double>(all.slowest_train_sec, v);
  all.skipped_lines = data_->skipped_lines();
  LEMRT_RETURN_IF_ERROR(sparse_comm_.AllReduceSum(std::span<int64_t>(&all.skipped_lines, 1)));
  // The OOV counts per feature, over all ranks.
  for (const host::FeatureCounts& c : data_->feature_counts()) {
    all.feature_sums.insert(all.feature_sums.end(), {c.values, c.oov, c.truncated});
  }
  if (!all.feature_sums.empty()) {
    LEMRT_RETURN_IF_ERROR(sparse_comm_.AllReduceSum(std::span<int64_t>(all.feature_sums)));
  }
  return all;
}

// An early stop reports the steps (and epochs) it ran, not those planned.
int64_t Trainer::StepsReported(const LoopTotals& totals) const {
  return totals.stopped_early_at > 0 ? totals.end_step : config_.training().steps();
}

void Trainer::FillRunShape(const LoopTotals& totals, const SummaryTotals& all,
                           summary::RunSummary* s) const {
  const auto& tc = config_.training();
  s->set_world_size(sparse_comm_.size());
  s->set_sparse_cores_per_chip(config_.topology().sparse_cores_per_chip());
  s->set_global_batch(tc.global_batch());
  s->set_steps(StepsReported(totals));
  if (totals.stop_signal != 0) {
    s->mutable_stopped()->set_signal(totals.stop_signal_name);
    s->mutable_stopped()->set_steps_completed(totals.end_step);
    s->mutable_stopped()->set_checkpoint(checkpointer_->last_saved());
  }
  s->set_stopped_early_at_step(totals.stopped_early_at);
  const int64_t steps_run = totals.end_step - totals.first_step;
  const double slowest = all.slowest_train_sec;
  s->set_samples_per_sec(slowest > 0 ? steps_run * tc.global_batch() / slowest : 0);
  s->set_wall_time_sec(slowest);
  // This rank's step times: exact mean, percentiles within 0.39%
  // (base/quantile_sketch.h).
  s->mutable_step_time_ms()->set_mean(stats_.step_ms().mean());
  s->mutable_step_time_ms()->set_p50(stats_.step_ms().Quantile(0.5));
  s->mutable_step_time_ms()->set_p99(stats_.step_ms().Quantile(0.99));
}

void Trainer::FillTrain(const LoopTotals& totals, const SummaryTotals& all,
                        summary::RunSummary* s) const {
  summary::TrainStats* train = s->mutable_train();
  if (stats_.steps_run() > 0) {
    train->set_loss_last(stats_.loss_last());
    train->set_loss_mean_last_10(stats_.loss_mean_tail());
  }
  train->set_samples(static_cast<double>(stats_.samples()));
  if (const host::EpochSchedule* epochs = data_->train_schedule()) {
    train->set_rows(static_cast<double>(epochs->rows()));
    train->set_rows_per_epoch(static_cast<double>(epochs->rows_per_epoch()));
    train->set_steps_per_epoch(static_cast<double>(epochs->steps_per_epoch()));
    train->set_epochs(static_cast<double>(StepsReported(totals)) / epochs->steps_per_epoch());
  }
  train->set_skipped_rows(static_cast<double>(all.skipped_lines));
}

void Trainer::FillFeatureData(const SummaryTotals& all, summary::RunSummary* s) const {
  const std::vector<int64_t>& sums = all.feature_sums;
  for (size_t f = 0; f < sums.size() / 3; ++f) {
    summary::FeatureDataStats* out = s->mutable_data()->add_features();
    out->set_name(config_.features(static_cast<int>(f)).name());
    out->set_values(static_cast<double>(sums[3 * f]));
    out->set_oov(static_cast<double>(sums[3 * f + 1]));
    out->set_oov_rate(sums[3 * f] > 0 ? static_cast<double>(sums[3 * f + 1]) / sums[3 * f] : 0);
    out->set_truncated(static_cast<double>(sums[3 * f + 2]));
  }
}

void Trainer::FillModel(const SummaryTotals& all, summary::RunSummary* s) const {
  s->mutable_ids()->set_total(all.ids_total);
  s->mutable_ids()->set_after_dedup(all.ids_after_dedup);
  s->mutable_ids()->set_unique_per_partition(all.unique_ids);
  s->set_params_l2(all.model.params_l2);
  s->set_model_checksum(all.model.checksum);
  device::FillMemoryStats(memory_plan_, s->mutable_memory());
  s->mutable_model()->set_interaction(memory_plan_.dense_model);
  s->mutable_model()->set_params(static_cast<double>(dense_->model().num_params()));
}

void Trainer::FillBestEval(summary::RunSummary* s) const {
  const auto& best = eval_tracker_.best();
  if (!best.has_value()) return;
  const bool pinned = best_pinned_step_ == best->step;
  s->mutable_best_eval()->set_step(best->step);
  s->mutable_best_eval()->set_auc(best->auc);
  s->mutable_best_eval()->set_logloss(best->logloss);
  if (pinned) s->mutable_best_eval()->set_checkpoint(best_checkpoint_);
  if (sparse_comm_.rank() == 0 && config_.training().eval_every() > 0) {
    LOG(INFO) << absl::StrFormat(
        "best eval: step %d, auc %.4f  logloss %.5f%s", best->step, best->auc, best->logloss,
        pinned ? absl::StrCat(", kept in ", best_checkpoint_) : std::string());
  }
}

void Trainer::FillSetup(summary::RunSummary* s) const {
  layout::FillStackingStats(layout::StackingPlan::FromConfig(config_), config_,
                            s->mutable_stacking());
  s->mutable_startup()->set_table_init_mode(table_init_mode_);
  s->mutable_startup()->set_table_init_ms(table_init_ms_);
  FillStartupStats(startup_breakdown_, s->mutable_startup());
  s->mutable_startup()->set_threads(startup_threads_);
  s->set_pipelining(pipelining_);
  summary::ThreadStats* threads = s->mutable_threads();
  threads->set_gemm_threads(dense_->gemm_threads());
  threads->set_maximum_parallel_iterations(config_.sparse_core().maximum_parallel_iterations());
  // The workers that ran: none at depth 0 (host work inline), whatever the
  // configured count.
  threads->set_host_worker_threads(HostPrefetcher::WorkerThreads(
      host_worker_threads_, config_.sparse_core().maximum_parallel_iterations()));
  threads->set_gemm_backend(
      device::GemmBackendName(device::DenseModelSpecFromConfig(config_).precision));
  threads->set_sparsecore_executor_thread(executor_thread());
  threads->set_tile_threads(config_.sparse_core().tile_threads());
}

void Trainer::FillBreakdown(const LoopTotals& totals, summary::RunSummary* s) const {
  summary::StageBreakdown* b = s->mutable_breakdown_ms();
  const double n = std::max<double>(1, totals.end_step - totals.first_step);
  b->set_host(stats_.stage_ms(RunStats::kHost) / n);
  b->set_sc_forward(stats_.stage_ms(RunStats::kScForward) / n);
  b->set_tc(stats_.stage_ms(RunStats::kTc) / n);
  b->set_sc_backward(stats_.stage_ms(RunStats::kScBackward) / n);
  b->set_wait(stats_.wait_ms() / n);
  // This rank's own ids (not the sum over ranks).
  const double ids_per_step = static_cast<double>(stats_.ids_after_dedup()) / n;
  if (ids_per_step > 0) {
    s->mutable_ns_per_id()->set_host(b->host() * 1e6 / ids_per_step);
    s->mutable_ns_per_id()->set_sc_forward(b->sc_forward() * 1e6 / ids_per_step);
    s->mutable_ns_per_id()->set_sc_backward(b->sc_backward() * 1e6 / ids_per_step);
  }
}

}  // namespace lemrt::runtime
