// The Trainer's step loop: each step's stages (host + SparseCore forward,
// TensorCore, SparseCore backward) on the StepPipeline, evaluation, checkpoints
// and stop requests at drain points. Building it is in trainer_setup.cc, the
// summary in trainer_summary.cc.
#include "runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/checkpoint/checkpointer.h"

namespace lemrt::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The partition evidence of one finished step for the summary's tables: the
// most unique ids in one partition of the table's stack (the splitter's
// counts exist only when limits are set) and, for a table alone in its stack,
// the ids sent once every partition is padded to its max_ids_per_partition
// (per minibatch; a stack's padding is not split over its members).
void ReportPartitionEvidence(const host::MinibatchOptions& o, const HostWork& work,
                             int64_t minibatches, RunRecorder& recorder) {
  if (!o.limits.any_limited()) return;
  const std::vector<layout::PartitionCount>& counts = work.splitter.counts();
  const int64_t per_stack = int64_t{o.local_sparse_cores} * o.total_sparse_cores;
  const int num_tables =
      o.stacking.empty() ? static_cast<int>(o.limits.tables.size()) : static_cast<int>(o.stacking.size());
  auto stack_of = [&](int t) { return o.stacking.empty() ? t : o.stacking[t].stack; };
  for (int t = 0; t < num_tables; ++t) {
    const int k = stack_of(t);
    const layout::TableLimit& limit = o.limits.tables[k];
    if (!limit.limited() || static_cast<int64_t>(counts.size()) < (k + 1) * per_stack) continue;
    int64_t max_unique = 0;
    for (int64_t p = k * per_stack; p < (k + 1) * per_stack; ++p) {
      max_unique = std::max<int64_t>(max_unique, counts[p].unique_ids);
    }
    recorder.ReportMaxUniqueIdsPerPartition(t, max_unique);
    int members = 0;
    for (int u = 0; u < num_tables; ++u) members += stack_of(u) == k ? 1 : 0;
    if (members == 1 && limit.max_ids != layout::TableLimit::kUnlimited) {
      recorder.ReportPaddedIds(t, minibatches * per_stack * limit.max_ids);
    }
  }
}

// The mean training loss (binary cross-entropy, nats) above which training
// has diverged: 100 times that of the constant prediction 0.5 (ln 2). A mean
// that high needs the model to give the true labels e^-69 on average, which a
// model that learns never does; a learning rate far too high gets there within
// a few steps while the loss is still finite (dense_learning_rate 100: 1884 at
// step 2), and would train on to a finite, useless model.
constexpr double kDivergedLoss = 100 * std::numbers::ln2;

// OK for a loss a learning model can have; else why training stops. `step`
// counts from 0; the sentence counts from 1, as the progress log does.
absl::Status CheckLoss(int64_t step, double mean_loss) {
  if (!std::isfinite(mean_loss)) {
    return absl::InternalError(absl::StrFormat(
        "step %d: the training loss is %f; lower the learning rates", step + 1, mean_loss));
  }
  if (mean_loss > kDivergedLoss) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "step %d: the training loss is %g, more than 100 x ln 2 = %.1f (a constant prediction of "
        "0.5 has ln 2 = 0.693): training diverged; lower the learning rates",
        step + 1, mean_loss, kDivergedLoss));
  }
  return absl::OkStatus();
}

}  // namespace

void Trainer::WarnAboutOutOfVocabulary(const summary::RunSummary& summary) const {
  if (sparse_comm_.rank() != 0) return;
  for (const summary::FeatureDataStats& f : summary.data().features()) {
    if (f.values() > 0 && f.oov() >= f.values()) {
      LOG(WARNING) << absl::StrFormat(
          "feature '%s': every one of its %.0f values was out of its vocabulary, so it trained "
          "only the OOV rows; check that data.schema.sparse.vocabulary_file was made from this "
          "data (lemrt_vocab) and has the feature's type",
          f.name(), f.values());
    }
  }
}

absl::Status Trainer::HostAndForward(int64_t step, StepSlot& slot) {
  slot.step = step;
  Mark(CollectiveMonitor::kSparseCore, step, "sc_forward");
  stall_hook_.At(step);
  // The step's local host half ran on a worker (or runs inline in Take when
  // maximum_parallel_iterations is 0); its collective half runs here, in
  // step order. With workers the host stage is the worker's time and the
  // collective half counts in sc_forward.
  double wait_ms = 0;
  Clock::time_point t0 = Clock::now();
  HostWork& work = prefetcher_->Take(step, &wait_ms);
  const bool inline_host = prefetcher_->depth() == 0;
  if (!inline_host) t0 = Clock::now();
  if (work.status.ok()) {
    recorder_->AddPartitionCounts(work.partition_counts, work.coo.local_sparse_cores);
  }
  absl::Status st = host_->Finish(work, &slot.batch, &slot.minibatches, &slot.hot);
  if (st.ok()) {
    const Clock::time_point host_end = inline_host ? Clock::now() : work.end;
    stats_.AddStageMs(RunStats::kHost,
                      std::chrono::duration<double, std::milli>(host_end - work.begin).count());
    recorder_->HostDone(step, work.begin, host_end, slot.batch, work.coo);
    recorder_->HostQueueWait(step, wait_ms);
    ReportPartitionEvidence(host_->minibatch_options(), work,
                            static_cast<int64_t>(slot.minibatches.size()), *recorder_);
    slot.coo.ids_total = work.coo.ids_total;
    slot.coo.ids_after_dedup = work.coo.ids_after_dedup;
  }
  prefetcher_->Release(work);
  if (!st.ok()) return st;
  if (inline_host) t0 = Clock::now();
  slot.sc_coos = table_serializer_->Expand(slot.minibatches, &slot.table_groups);
  st = sparse_->Forward(slot.sc_coos, &slot.minibatch_sparse, slot.activations);
  if (!st.ok()) return st;
  sparse_->LookupHot(slot.hot, slot.activations);
  stats_.AddStageMs(RunStats::kScForward, MsSince(t0));
  const std::span<const SparseStepBuffers> mb_buffers(slot.minibatch_sparse.data(),
                                                      slot.sc_coos.size());
  recorder_->ForwardDone(step, t0, Clock::now(), mb_buffers);
  stats_.AddIds(slot.coo.ids_total, slot.coo.ids_after_dedup,
                sparse_->last_unique_ids(mb_buffers, slot.sc_coos.size()));
  return absl::OkStatus();
}

absl::Status Trainer::Dense(StepSlot& slot) {
  Mark(CollectiveMonitor::kTensorCore, slot.step, "tc");
  const Clock::time_point t0 = Clock::now();
  auto loss = dense_->Step(slot.step, slot.batch, slot.activations, slot.d_activations);
  if (!loss.ok()) return loss.status();
  slot.loss_sum = *loss;
  stats_.AddStageMs(RunStats::kTc, MsSince(t0));
  recorder_->DenseDone(slot.step, t0, Clock::now(), slot.batch.num_samples);
  return absl::OkStatus();
}

absl::Status Trainer::Backward(StepSlot& slot) {
  Mark(CollectiveMonitor::kSparseCore, slot.step, "sc_backward");
  const Clock::time_point t0 = Clock::now();
  absl::Status st =
      sparse_->Backward(slot.sc_coos, slot.d_activations, &slot.minibatch_sparse);
  if (st.ok()) st = sparse_->UpdateHot(slot.hot, slot.d_activations);
  stats_.AddStageMs(RunStats::kScBackward, MsSince(t0));
  recorder_->BackwardDone(slot.step, t0, Clock::now(),
                          std::span<const SparseStepBuffers>(slot.minibatch_sparse.data(),
                                                             slot.sc_coos.size()));
  return st;
}

bool Trainer::DrainAfter(int64_t step) const {
  const auto& tc = config_.training();
  return step + 1 >= tc.steps() || (tc.eval_every() > 0 && (step + 1) % tc.eval_every() == 0) ||
         checkpoint::Checkpointer::Due(config_, step + 1);
}

absl::StatusOr<EvalResult> Trainer::Evaluate(Predictions* predictions) {
  std::vector<float> chunk_probs;
  CHECK(pipeline_->drained()) << "Evaluate with a step in flight";
  StepSlot& slot = pipeline_->slots()[0];
  eval_scores_.Clear();
  const int64_t global_batch = config_.training().global_batch();
  const int64_t local_batch = global_batch / dense_comm_.size();
  for (int64_t c = 0; c < data_->num_eval_chunks(); ++c) {
    LEMRT_RETURN_IF_ERROR(AgreeOnEvalStop(c));
    absl::Status st = host_->PrepareEval(c, &slot.batch, /*coo=*/nullptr, &slot.minibatches,
                                         &slot.hot);
    if (!st.ok()) return st;
    slot.sc_coos = table_serializer_->Expand(slot.minibatches, &slot.table_groups);
    st = sparse_->Forward(slot.sc_coos, &slot.minibatch_sparse, slot.activations);
    if (!st.ok()) return st;
    sparse_->LookupHot(slot.hot, slot.activations);
    chunk_probs.resize(slot.batch.num_samples * eval_scores_.num_tasks());
    dense_->Predict(slot.batch, slot.activations, chunk_probs);
    eval_scores_.Add(slot.batch, chunk_probs, c * global_batch + dense_comm_.rank() * local_batch);
  }
  return eval_scores_.Finish(dense_comm_, data_->has_teacher(), predictions);
}

absl::Status Trainer::AgreeOnEvalStop(int64_t chunk) {
  if (stop_signal_ == nullptr) return absl::OkStatus();
  int64_t stop = *stop_signal_ != 0 ? 1 : 0;
  LEMRT_RETURN_IF_ERROR(dense_comm_.AllReduceMax(std::span<int64_t>(&stop, 1)));
  if (stop == 0) return absl::OkStatus();
  return absl::CancelledError(absl::StrFormat(
      "a stop signal ended the evaluation before its chunk %d of %d", chunk + 1,
      data_->num_eval_chunks()));
}

absl::StatusOr<int64_t> Trainer::Restore(const std::string& dir) {
  CHECK(pipeline_->drained()) << "Restore with a step in flight";
  LEMRT_ASSIGN_OR_RETURN(checkpoint::RestoreResult r,
                         checkpoint::RestoreCheckpoint(dir, config_, sparse_comm_, *sparse_, *dense_));
  LEMRT_RETURN_IF_ERROR(sparse_->RefreshHotRows());
  return r.manifest.step();
}

std::unique_ptr<StepPipeline> Trainer::NewPipeline() {
  PipelineOptions o;
  o.overlap = pipelining_;
  o.threads = executor_thread();
  o.warmup_steps = config_.sparse_core().pipeline_warmup_steps();
  o.end_step = config_.training().steps();
  StepStages stages;
  stages.host_and_forward = [this](int64_t step, StepSlot& slot) {
    return HostAndForward(step, slot);
  };
  stages.dense = [this](StepSlot& slot) { return Dense(slot); };
  stages.backward = [this](StepSlot& slot) { return Backward(slot); };
  return std::make_unique<StepPipeline>(o, std::move(stages));
}

absl::Status Trainer::Stop(int64_t step, bool saved, LoopTotals* totals) {
  LEMRT_RETURN_IF_ERROR(pipeline_->Drain());
  Mark(CollectiveMonitor::kTensorCore, step, "stop");
  Mark(CollectiveMonitor::kSparseCore, step, "checkpoint save", checkpoint_io_allowance_s_);
  // Ranks may have caught different signals (or none): name the highest.
  int64_t signal = stop_signal_ != nullptr ? *stop_signal_ : 0;
  LEMRT_RETURN_IF_ERROR(dense_comm_.AllReduceMax(std::span<int64_t>(&signal, 1)));
  totals->stop_signal = static_cast<int>(signal);
  stopped_by_ = totals->stop_signal;
  const char* abbrev = sigabbrev_np(totals->stop_signal);
  totals->stop_signal_name =
      abbrev != nullptr ? absl::StrCat("SIG", abbrev) : absl::StrCat("signal ", signal);
  totals->end_step = step + 1;
  if (sparse_comm_.rank() == 0) {
    LOG(WARNING) << absl::StrFormat("%s: every rank stops after step %d of %d",
                                    totals->stop_signal_name, step + 1,
                                    config_.training().steps());
  }
  if (config_.checkpoint().has_dir() && !saved) {
    LEMRT_RETURN_IF_ERROR(checkpointer_->Save(step + 1, *sparse_, *dense_));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Trainer::AfterEvaluation(int64_t steps_done, const EvalResult& e,
                                              bool final) {
  checkpoint::Checkpointer& checkpointer = *checkpointer_;
  const EvalTracker::Verdict verdict = eval_tracker_.Record(steps_done, e.auc, e.logloss);
  const bool stop = !final && verdict.stop;
  const bool has_dir = config_.checkpoint().has_dir();
  const bool keep_best = config_.checkpoint().keep_best() && verdict.improved;
  const bool due = checkpoint::Checkpointer::Due(config_, steps_done) || (has_dir && stop);
  // The final step's checkpoint was saved before the final evaluation.
  if (!final && (due || keep_best)) {
    Mark(CollectiveMonitor::kSparseCore, steps_done - 1, "checkpoint save",
         checkpoint_io_allowance_s_);
    LEMRT_RETURN_IF_ERROR(checkpointer.Save(steps_done, *sparse_, *dense_));
  }
  if (keep_best) {
    if (best_pinned_step_ > 0) checkpointer.Unpin(best_pinned_step_);
    checkpointer.Pin(steps_done, absl::StrFormat("best eval auc %.6f", e.auc));
    best_pinned_step_ = steps_done;
    best_checkpoint_ = checkpointer.last_saved();
  }
  return stop;
}

absl::StatusOr<int64_t> Trainer::Resume() {
  const int64_t steps = config_.training().steps();
  Mark(CollectiveMonitor::kSparseCore, -1, "checkpoint restore", checkpoint_io_allowance_s_);
  LEMRT_ASSIGN_OR_RETURN(const int64_t first_step,
                         checkpointer_->RestoreIfConfigured(*sparse_, *dense_));
  LEMRT_RETURN_IF_ERROR(sparse_->RefreshHotRows());  // the replicas of the restored rows
  // Restored at the last step: saving re-shards the checkpoint to this world size.
  if (first_step == steps) {
    Mark(CollectiveMonitor::kSparseCore, first_step - 1, "checkpoint save",
         checkpoint_io_allowance_s_);
    LEMRT_RETURN_IF_ERROR(checkpointer_->SaveIfDue(first_step, *sparse_, *dense_));
  }
  prefetcher_ = std::make_unique<HostPrefetcher>(
      *host_, host_worker_threads_, config_.sparse_core().maximum_parallel_iterations(),
      first_step, steps, recorder_.get());
  return first_step;
}

absl::Status Trainer::ReportStartup() {
  startup_.Mark(StartupPhase::kRunStart);
  Mark(CollectiveMonitor::kSparseCore, -1, "start-up breakdown");
  LEMRT_ASSIGN_OR_RETURN(startup_breakdown_, SlowestStartup(sparse_comm_, startup_));
  if (sparse_comm_.rank() == 0) {
    LOG(INFO) << DescribeStartup(startup_breakdown_)
              << absl::StrFormat(" (table fill and step buffers on %d threads)", startup_threads_);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Trainer::FinishStep(int64_t step, const PipelineStep& done,
                                         Clock::time_point step_start) {
  // The stop request rides on the loss all-reduce: every rank learns of a
  // signal to any rank after the same step.
  Mark(CollectiveMonitor::kTensorCore, step, "loss all-reduce");
  double reduced[2] = {done.slot->loss_sum,
                       stop_signal_ != nullptr && *stop_signal_ != 0 ? 1.0 : 0.0};
  LEMRT_RETURN_IF_ERROR(dense_comm_.AllReduceSum(std::span<double>(reduced, 2)));
  const double loss = reduced[0];
  const double step_ms = MsSince(step_start);
  if (monitor_ != nullptr) monitor_->StepDone(step_ms / 1000.0);
  // The mean over the global batch's real samples (fewer in an epoch's last batch).
  const int64_t batch_samples = done.slot->batch.global_samples > 0
                                    ? done.slot->batch.global_samples
                                    : config_.training().global_batch();
  const double mean_loss = loss / batch_samples;
  stats_.StepDone({.ms = step_ms,
                   .forward_wait_ms = done.forward_wait_ms,
                   .samples = batch_samples,
                   .mean_loss = mean_loss});
  // Checked before this step's checkpoint: a diverged model is not saved.
  if (absl::Status diverged = CheckLoss(step, mean_loss); !diverged.ok()) {
    // An update in flight may have failed first, naming the cause (e.g.
    // the NaN check's table): that error wins.
    LEMRT_RETURN_IF_ERROR(pipeline_->Drain());
    return diverged;
  }
  recorder_->StepDone(step, step_start, Clock::now(), mean_loss);  // progress, CSV
  return reduced[1] > 0;
}

absl::StatusOr<bool> Trainer::AtDrainPoint(int64_t step, LoopTotals* totals) {
  const auto& tc = config_.training();
  const bool leader = sparse_comm_.rank() == 0;
  if (!(tc.eval_every() > 0 && (step + 1) % tc.eval_every() == 0 && step + 1 < tc.steps())) {
    Mark(CollectiveMonitor::kSparseCore, step, "checkpoint save", checkpoint_io_allowance_s_);
    LEMRT_RETURN_IF_ERROR(checkpointer_->SaveIfDue(step + 1, *sparse_, *dense_));
    return false;
  }
  Mark(CollectiveMonitor::kSparseCore, step, "eval");
  Mark(CollectiveMonitor::kTensorCore, step, "eval");
  absl::StatusOr<EvalResult> evaluated = Evaluate();
  if (absl::IsCancelled(evaluated.status())) {
    // A stop signal before or during the evaluation: it is skipped,
    // the model of this step saved.
    LEMRT_RETURN_IF_ERROR(Stop(step, /*saved=*/false, totals));
    return true;
  }
  if (!evaluated.ok()) return evaluated.status();
  const EvalResult& e = *evaluated;
  recorder_->EvalDone(step, MetricsColumns(e));
  if (leader) {
    LOG(INFO) << absl::StrFormat("eval at step %d: %s", step + 1, FormatEvalMetrics(e));
  }
  LEMRT_ASSIGN_OR_RETURN(const bool stop, AfterEvaluation(step + 1, e, /*final=*/false));
  if (!stop) return false;
  // Every rank saw the same evaluation, so every rank stops here.
  totals->stopped_early_at = step + 1;
  totals->end_step = step + 1;
  if (leader) {
    LOG(INFO) << absl::StrFormat(
        "early stop after step %d: no eval AUC above %.4f (step %d) for %d evaluations", step + 1,
        eval_tracker_.best()->auc, eval_tracker_.best()->step, tc.early_stop_evals());
  }
  return true;
}

absl::Status Trainer::TrainSteps(LoopTotals* totals) {
  const int64_t steps = config_.training().steps();
  // A step's time runs from the end of the previous step (or of the eval and
  // checkpoint after it) to the end of its TensorCore stage (and, when it
  // drains, of its update), so it includes the host work and lookup whether
  // they ran overlapped or inline.
  Clock::time_point step_start = Clock::now();
  for (int64_t step = totals->first_step; step < steps; ++step) {
    const bool drain = DrainAfter(step);
    LEMRT_ASSIGN_OR_RETURN(const PipelineStep done, pipeline_->Step(step, drain));
    LEMRT_ASSIGN_OR_RETURN(const bool stop_requested, FinishStep(step, done, step_start));
    if (drain) {
      // Drain point: no step is in flight and every update of steps <= step
      // is applied. Evaluation and checkpoints happen here only; a stop
      // (finish the step, save, exit) belongs here too.
      CHECK(done.drained);
      LEMRT_ASSIGN_OR_RETURN(const bool ended, AtDrainPoint(step, totals));
      if (ended) return absl::OkStatus();
    }
    if (stop_requested) {
      // A drain point may have saved this step already.
      const bool saved = drain && checkpoint::Checkpointer::Due(config_, step + 1);
      return Stop(step, saved, totals);
    }
    step_start = Clock::now();
  }
  totals->end_step = steps;
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> Trainer::FinalEvaluation(LoopTotals* totals) {
  // A stopped run skips it (the time left before the scheduler's kill is
  // better spent saving), a stop signal during it ends it.
  if (totals->stop_signal != 0) return EvalResult{};
  Mark(CollectiveMonitor::kSparseCore, totals->end_step - 1, "eval");
  Mark(CollectiveMonitor::kTensorCore, totals->end_step - 1, "eval");
  absl::StatusOr<EvalResult> evaluated = Evaluate();
  if (absl::IsCancelled(evaluated.status())) {
    // The last step's checkpoint (with a checkpoint directory) is saved.
    LEMRT_RETURN_IF_ERROR(Stop(totals->end_step - 1, /*saved=*/true, totals));
    return EvalResult{};
  }
  return evaluated;
}

absl::StatusOr<summary::RunSummary> Trainer::Run() {
  LoopTotals totals;
  LEMRT_ASSIGN_OR_RETURN(totals.first_step, Resume());
  LEMRT_RETURN_IF_ERROR(ReportStartup());
  LEMRT_RETURN_IF_ERROR(TrainSteps(&totals));
  LEMRT_RETURN_IF_ERROR(pipeline_->Drain());
  prefetcher_.reset();  // every training step was taken
  LEMRT_ASSIGN_OR_RETURN(const EvalResult final_eval, FinalEvaluation(&totals));
  Mark(CollectiveMonitor::kSparseCore, totals.end_step - 1, "summary");
  Mark(CollectiveMonitor::kTensorCore, totals.end_step - 1, "summary");
  LEMRT_ASSIGN_OR_RETURN(summary::RunSummary summary, Summarise(totals, final_eval));
  // The loss is checked each step before the update; the last updates can
  // still leave non-finite parameters (the same L2 on every rank).
  if (!std::isfinite(summary.params_l2())) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "after step %d the model's parameters are not finite (params L2 %f): training diverged; "
        "lower the learning rates",
        totals.end_step, summary.params_l2()));
  }
  WarnAboutOutOfVocabulary(summary);
  return summary;
}

}  // namespace lemrt::runtime
