// Trainer::Summarise: the final evaluation and the run summary, from the
// step loop's totals and every component's statistics.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "device/plan/memory_plan.h"
#include "device/plan/memory_plan_report.h"
#include "device/tensorcore/gemm.h"
#include "glog/logging.h"
#include "layout/stacking.h"
#include "runtime/checkpoint/checkpointer.h"
#include "runtime/observability/model_stats.h"
#include "runtime/observability/placement_summary.h"
#include "runtime/trainer.h"

namespace lemrt::runtime {

absl::StatusOr<summary::RunSummary> Trainer::Summarise(const LoopTotals& totals,
                                                       const EvalResult& eval) {
  const auto& tc = config_.training();
  const bool leader = sparse_comm_.rank() == 0;
  // A stopped run (a preemption) has no final evaluation. An early stop
  // ends right after an evaluation of this same model (not recorded twice).
  const bool stopped = totals.stop_signal != 0;
  const int64_t steps_done = totals.end_step;
  if (!stopped && totals.stopped_early_at == 0) {
    recorder_->EvalDone(steps_done - 1,
                        {eval.auc, eval.logloss, eval.ne, eval.calibration, eval.gauc});
    if (leader) {
      LOG(INFO) << absl::StrFormat("eval at step %d: %s", steps_done, FormatEvalMetrics(eval));
    }
    if (tc.eval_every() > 0) {
      LEMRT_RETURN_IF_ERROR(AfterEvaluation(steps_done, eval, /*final=*/true).status());
    }
  }
  LEMRT_ASSIGN_OR_RETURN(ModelStats stats,
                         ComputeModelStats(sparse_comm_, *sparse_, dense_->model().params()));
  int64_t ids[3] = {ids_total_, ids_after_dedup_, unique_ids_};
  LEMRT_RETURN_IF_ERROR(sparse_comm_.AllReduceSum(std::span<int64_t>(ids, 3)));
  // The slowest rank defines the step time.
  double slowest = totals.train_sec;
  {
    std::vector<float> all;
    LEMRT_RETURN_IF_ERROR(dense_comm_.AllGather(std::span<const float>(
        std::vector<float>{static_cast<float>(totals.train_sec)}), &all));
    for (float v : all) slowest = std::max<double>(slowest, v);
  }

  summary::RunSummary s;
  s.set_world_size(sparse_comm_.size());
  s.set_sparse_cores_per_chip(config_.topology().sparse_cores_per_chip());
  s.set_global_batch(tc.global_batch());
  // An early stop reports the steps (and epochs) it ran, not those planned.
  const int64_t steps_reported = totals.stopped_early_at > 0 ? totals.end_step : tc.steps();
  s.set_steps(steps_reported);
  const int64_t steps_run = totals.end_step - totals.first_step;
  if (stopped) {
    s.mutable_stopped()->set_signal(totals.stop_signal_name);
    s.mutable_stopped()->set_steps_completed(totals.end_step);
    s.mutable_stopped()->set_checkpoint(checkpointer_->last_saved());
  }
  s.set_samples_per_sec(slowest > 0 ? steps_run * tc.global_batch() / slowest : 0);
  // This rank's step times: exact mean, percentiles within 0.39%
  // (base/quantile_sketch.h).
  s.mutable_step_time_ms()->set_mean(totals.step_ms.mean());
  s.mutable_step_time_ms()->set_p50(totals.step_ms.Quantile(0.5));
  s.mutable_step_time_ms()->set_p99(totals.step_ms.Quantile(0.99));
  if (totals.steps_run > 0) {
    const int64_t kept = static_cast<int64_t>(totals.losses.size());
    s.mutable_train()->set_loss_last(totals.losses[(totals.steps_run - 1) % kept]);
    // Oldest first, as the losses were summed before.
    const int64_t n = std::min(kept, totals.steps_run);
    double tail = 0;
    for (int64_t j = totals.steps_run - n; j < totals.steps_run; ++j) tail += totals.losses[j % kept];
    s.mutable_train()->set_loss_mean_last_10(tail / n);
  }
  s.mutable_train()->set_samples(static_cast<double>(totals.samples));
  if (const host::EpochSchedule* epochs = data_->train_schedule()) {
    s.mutable_train()->set_rows(static_cast<double>(epochs->rows()));
    s.mutable_train()->set_rows_per_epoch(static_cast<double>(epochs->rows_per_epoch()));
    s.mutable_train()->set_steps_per_epoch(static_cast<double>(epochs->steps_per_epoch()));
    s.mutable_train()->set_epochs(static_cast<double>(steps_reported) / epochs->steps_per_epoch());
  }
  int64_t skipped = data_->skipped_lines();
  LEMRT_RETURN_IF_ERROR(sparse_comm_.AllReduceSum(std::span<int64_t>(&skipped, 1)));
  s.mutable_train()->set_skipped_rows(static_cast<double>(skipped));
  // The OOV rate per feature, over all ranks.
  if (const std::vector<host::FeatureCounts> counts = data_->feature_counts(); !counts.empty()) {
    std::vector<int64_t> sums;
    for (const host::FeatureCounts& c : counts) sums.insert(sums.end(), {c.values, c.oov, c.truncated});
    LEMRT_RETURN_IF_ERROR(sparse_comm_.AllReduceSum(std::span<int64_t>(sums)));
    for (size_t f = 0; f < counts.size(); ++f) {
      summary::FeatureDataStats* out = s.mutable_data()->add_features();
      out->set_name(config_.features(static_cast<int>(f)).name());
      out->set_values(static_cast<double>(sums[3 * f]));
      out->set_oov(static_cast<double>(sums[3 * f + 1]));
      out->set_oov_rate(sums[3 * f] > 0 ? static_cast<double>(sums[3 * f + 1]) / sums[3 * f] : 0);
      out->set_truncated(static_cast<double>(sums[3 * f + 2]));
    }
  }
  // Undefined metrics (no rows, one class) are absent, not 0.5 / 0.
  if (!std::isnan(eval.auc) || stopped) s.mutable_eval()->set_auc(eval.auc);
  if (!std::isnan(eval.logloss) || stopped) s.mutable_eval()->set_logloss(eval.logloss);
  s.mutable_eval()->set_samples(eval.samples);
  if (!std::isnan(eval.ne)) s.mutable_eval()->set_ne(eval.ne);
  if (!std::isnan(eval.calibration)) s.mutable_eval()->set_calibration(eval.calibration);
  if (!std::isnan(eval.gauc)) {
    s.mutable_eval()->set_gauc(eval.gauc);
    s.mutable_eval()->set_gauc_groups(static_cast<double>(eval.gauc_groups));
  }
  if (eval.teacher_auc >= 0) {
    s.mutable_eval()->mutable_teacher_auc()->set_number_value(eval.teacher_auc);
  } else {
    s.mutable_eval()->mutable_teacher_auc()->set_null_value(google::protobuf::NULL_VALUE);
  }
  if (eval.teacher_logloss >= 0) {
    s.mutable_eval()->mutable_teacher_logloss()->set_number_value(eval.teacher_logloss);
  } else {
    s.mutable_eval()->mutable_teacher_logloss()->set_null_value(google::protobuf::NULL_VALUE);
  }
  s.mutable_ids()->set_total(ids[0]);
  s.mutable_ids()->set_after_dedup(ids[1]);
  s.mutable_ids()->set_unique_per_partition(ids[2]);
  s.set_params_l2(stats.params_l2);
  s.set_model_checksum(stats.checksum);
  device::FillMemoryStats(memory_plan_, s.mutable_memory());
  s.mutable_model()->set_interaction(memory_plan_.dense_model);
  s.mutable_model()->set_params(static_cast<double>(dense_->model().num_params()));
  if (const auto& best = eval_tracker_.best(); best.has_value()) {
    s.mutable_best_eval()->set_step(best->step);
    s.mutable_best_eval()->set_auc(best->auc);
    s.mutable_best_eval()->set_logloss(best->logloss);
    if (best_pinned_step_ == best->step) s.mutable_best_eval()->set_checkpoint(best_checkpoint_);
    if (leader && tc.eval_every() > 0) {
      LOG(INFO) << absl::StrFormat("best eval: step %d, auc %.4f  logloss %.5f%s", best->step,
                                   best->auc, best->logloss,
                                   best_pinned_step_ == best->step
                                       ? absl::StrCat(", kept in ", best_checkpoint_)
                                       : std::string());
    }
  }
  s.set_stopped_early_at_step(totals.stopped_early_at);
  layout::FillStackingStats(layout::StackingPlan::FromConfig(config_), config_,
                            s.mutable_stacking());
  s.mutable_startup()->set_table_init_mode(table_init_mode_);
  s.mutable_startup()->set_table_init_ms(table_init_ms_);
  s.set_pipelining(pipelining_);
  s.mutable_threads()->set_gemm_threads(dense_->gemm_threads());
  s.mutable_threads()->set_maximum_parallel_iterations(
      config_.sparse_core().maximum_parallel_iterations());
  s.mutable_threads()->set_host_worker_threads(host_worker_threads_);
  s.mutable_threads()->set_gemm_backend(device::GemmBackendName());
  s.mutable_threads()->set_sparsecore_executor_thread(executor_thread());
  s.set_wall_time_sec(slowest);
  auto* b = s.mutable_breakdown_ms();
  const double n = std::max<double>(1, steps_run);
  b->set_host(stage_ms_total_[0] / n);
  b->set_sc_forward(stage_ms_total_[1] / n);
  b->set_tc(stage_ms_total_[2] / n);
  b->set_sc_backward(stage_ms_total_[3] / n);
  b->set_wait(totals.wait_ms / n);
  // Rank 0's own ids (ids_after_dedup_ before the all-reduce above).
  const double ids_per_step = static_cast<double>(ids_after_dedup_) / n;
  if (ids_per_step > 0) {
    s.mutable_ns_per_id()->set_host(b->host() * 1e6 / ids_per_step);
    s.mutable_ns_per_id()->set_sc_forward(b->sc_forward() * 1e6 / ids_per_step);
    s.mutable_ns_per_id()->set_sc_backward(b->sc_backward() * 1e6 / ids_per_step);
  }
  LEMRT_RETURN_IF_ERROR(host_->Summarise(s.mutable_preprocess()));
  LEMRT_RETURN_IF_ERROR(recorder_->Finish(sparse_comm_, &s));
  LEMRT_RETURN_IF_ERROR(FillPlacement(sparse_comm_, placement_,
                                      recorder_->exchange_bytes_per_step(), s.mutable_placement()));
  for (const auto& stage : s.stages()) {
    if (stage.name() == "exchange") b->set_exchange(stage.mean_ms());  // mean over chips
  }
  return s;
}

}  // namespace lemrt::runtime
