#include "runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_format.h"
#include "base/auc.h"
#include "glog/logging.h"
#include "base/status_macros.h"
#include "runtime/checkpoint/checkpointer.h"
#include "device/plan/memory_plan.h"
#include "runtime/model_stats.h"

namespace lemrt::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[k];
}

// Says, once at start-up, which configured knobs this build does not act on
// yet, so that nothing silently pretends to work.
void WarnAboutPendingKnobs(const config::RunConfig& config) {
  const auto& sc = config.sparse_core();
  if (!sc.disable_table_stacking() && config.tables_size() > 1) {
    LOG(WARNING) << "sparse_core.disable_table_stacking is false, but table stacking is not "
                    "implemented yet: every table is looked up on its own.";
  }
  if (!sc.disable_full_embedding_pipelining()) {
    LOG(WARNING) << "pipelining is on in the config (the default), but this build runs the "
                    "stages sequentially; set sparse_core.disable_full_embedding_pipelining "
                    "to silence this.";
  }
}

}  // namespace

Trainer::Trainer(const config::RunConfig& config, Communicator& comm)
    : config_(config), comm_(comm) {}

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const config::RunConfig& config,
                                                         Communicator& comm) {
  if (comm.rank() == 0) WarnAboutPendingKnobs(config);
  // "Compilation": every rank sizes the same plan, so a plan that does not
  // fit fails everywhere alike before any table is allocated.
  auto plan = device::BuildMemoryPlan(config);
  if (!plan.ok()) return plan.status();
  if (absl::Status fit = device::CheckMemoryPlan(*plan); !fit.ok()) return fit;
  std::unique_ptr<Trainer> t(new Trainer(config, comm));
  auto data = host::CreateDataSource(config, comm.rank(), comm.size());
  absl::Status st = AgreeOnStatus(comm, data.status());
  if (!st.ok()) return st;
  t->data_ = std::move(*data);
  t->memory_plan_ = std::move(*plan);
  auto limits = host::ResolveLimits(config);
  st = AgreeOnStatus(comm, limits.status());
  if (!st.ok()) return st;
  t->host_ = std::make_unique<HostStage>(config, comm, *t->data_, std::move(*limits));
  std::vector<const device::Optimizer*> optimizers;
  for (const auto& table : config.tables()) {
    t->table_optimizers_.push_back(
        device::CreateOptimizer(table.optimizer(), config.training().embedding_learning_rate()));
    optimizers.push_back(t->table_optimizers_.back().get());
  }
  auto recorder = RunRecorder::Create(config, comm.rank(), comm.size());
  st = AgreeOnStatus(comm, recorder.status());
  if (!st.ok()) return st;
  t->recorder_ = std::move(*recorder);
  t->timed_sparse_comm_ = std::make_unique<TimedCommunicator>(comm, *t->recorder_);
  t->sparse_ = std::make_unique<SparseCoreStage>(config, *t->timed_sparse_comm_, optimizers);
  auto dense = TensorCoreStage::Create(config, comm);
  if (!dense.ok()) return dense.status();
  t->tile_pool_ = std::make_unique<device::TilePool>(config.sparse_core().tile_threads());
  for (const auto& sc : t->sparse_->sparse_cores()) sc->set_tile_pool(t->tile_pool_.get());
  t->dense_ = std::move(*dense);
  const int64_t local_batch = config.training().global_batch() / comm.size();
  t->activations_.resize(local_batch * t->sparse_->activation_width());
  t->d_activations_.resize(t->activations_.size());
  return t;
}

absl::Status Trainer::TrainStep(int64_t step, double* loss_sum, double stage_ms[4]) {
  Clock::time_point t0 = Clock::now();
  absl::Status st = host_->PrepareTrain(step, &batch_, &coo_, &minibatches_);
  if (!st.ok()) return st;
  stage_ms[0] = MsSince(t0);
  recorder_->HostDone(step, t0, Clock::now(), batch_, coo_);

  t0 = Clock::now();
  st = sparse_->Forward(minibatches_, &minibatch_buffers_, activations_);
  if (!st.ok()) return st;
  stage_ms[1] = MsSince(t0);
  recorder_->ForwardDone(step, t0, Clock::now(),
                         std::span<const SparseStepBuffers>(minibatch_buffers_).first(minibatches_.size()));

  t0 = Clock::now();
  auto loss = dense_->Step(batch_, activations_, d_activations_);
  if (!loss.ok()) return loss.status();
  stage_ms[2] = MsSince(t0);
  recorder_->DenseDone(step, t0, Clock::now(), batch_.num_samples);

  t0 = Clock::now();
  st = sparse_->Backward(minibatches_, d_activations_, &minibatch_buffers_);
  if (!st.ok()) return st;
  stage_ms[3] = MsSince(t0);
  recorder_->BackwardDone(step, t0, Clock::now(),
                          std::span<const SparseStepBuffers>(minibatch_buffers_).first(minibatches_.size()));

  *loss_sum = *loss;
  ids_total_ += coo_.ids_total;
  ids_after_dedup_ += coo_.ids_after_dedup;
  unique_ids_ += sparse_->last_unique_ids(minibatch_buffers_, minibatches_.size());
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> Trainer::Evaluate() {
  std::vector<float> probs, labels, teacher;
  std::vector<float> chunk_probs;
  for (int64_t c = 0; c < data_->num_eval_chunks(); ++c) {
    absl::Status st = host_->PrepareEval(c, &batch_, &coo_, &minibatches_);
    if (!st.ok()) return st;
    st = sparse_->Forward(minibatches_, &minibatch_buffers_, activations_);
    if (!st.ok()) return st;
    chunk_probs.resize(batch_.num_samples);
    dense_->Predict(batch_, activations_, chunk_probs);
    probs.insert(probs.end(), chunk_probs.begin(), chunk_probs.end());
    labels.insert(labels.end(), batch_.labels.begin(), batch_.labels.end());
    teacher.insert(teacher.end(), batch_.teacher_prob.begin(), batch_.teacher_prob.end());
  }
  std::vector<float> all_probs, all_labels, all_teacher;
  LEMRT_RETURN_IF_ERROR(comm_.AllGather(probs, &all_probs));
  LEMRT_RETURN_IF_ERROR(comm_.AllGather(labels, &all_labels));
  LEMRT_RETURN_IF_ERROR(comm_.AllGather(teacher, &all_teacher));
  EvalResult r;
  r.samples = static_cast<int64_t>(all_probs.size());
  if (r.samples == 0) return r;
  r.auc = base::Auc(all_probs, all_labels);
  r.logloss = base::LogLoss(all_probs, all_labels);
  if (data_->has_teacher() && all_teacher.size() == all_labels.size()) {
    r.teacher_auc = base::Auc(all_teacher, all_labels);
  }
  return r;
}

absl::StatusOr<summary::RunSummary> Trainer::Run() {
  const auto& tc = config_.training();
  const bool leader = comm_.rank() == 0;
  std::vector<double> step_ms;
  std::vector<double> losses;
  double stage_total[4] = {0, 0, 0, 0};
  double train_sec = 0;
  checkpoint::Checkpointer checkpointer(config_, comm_, *sparse_, *dense_);
  LEMRT_ASSIGN_OR_RETURN(const int64_t first_step, checkpointer.RestoreIfConfigured());
  // Restored at the last step: saving re-shards the checkpoint to this world size.
  if (first_step == tc.steps()) LEMRT_RETURN_IF_ERROR(checkpointer.SaveIfDue(first_step));
  for (int64_t step = first_step; step < tc.steps(); ++step) {
    const Clock::time_point t0 = Clock::now();
    double stage_ms[4];
    double loss = 0;
    LEMRT_RETURN_IF_ERROR(TrainStep(step, &loss, stage_ms));
    LEMRT_RETURN_IF_ERROR(comm_.AllReduceSum(std::span<double>(&loss, 1)));
    step_ms.push_back(MsSince(t0));
    train_sec += step_ms.back() / 1000.0;
    for (int k = 0; k < 4; ++k) stage_total[k] += stage_ms[k];
    losses.push_back(loss / tc.global_batch());
    if (!std::isfinite(losses.back())) {
      return absl::InternalError(absl::StrFormat(
          "step %d: the training loss is %f; lower the learning rates", step, losses.back()));
    }
    recorder_->StepDone(step, t0, Clock::now(), losses.back());  // progress line, CSV
    if (tc.eval_every() > 0 && (step + 1) % tc.eval_every() == 0 && step + 1 < tc.steps()) {
      LEMRT_ASSIGN_OR_RETURN(EvalResult e, Evaluate());
      recorder_->EvalDone(step, e.auc, e.logloss);
      if (leader) {
        LOG(INFO) << absl::StrFormat("eval at step %d: auc %.4f  logloss %.5f  (%d samples)",
                                     step + 1, e.auc, e.logloss, e.samples);
      }
    }
    LEMRT_RETURN_IF_ERROR(checkpointer.SaveIfDue(step + 1));
  }
  LEMRT_ASSIGN_OR_RETURN(EvalResult eval, Evaluate());
  recorder_->EvalDone(tc.steps() - 1, eval.auc, eval.logloss);
  if (leader) {
    LOG(INFO) << absl::StrFormat("eval at step %d: auc %.4f  logloss %.5f  (%d samples)",
                                 tc.steps(), eval.auc, eval.logloss, eval.samples);
  }
  LEMRT_ASSIGN_OR_RETURN(ModelStats stats,
                         ComputeModelStats(comm_, *sparse_, dense_->model().params()));
  int64_t ids[3] = {ids_total_, ids_after_dedup_, unique_ids_};
  LEMRT_RETURN_IF_ERROR(comm_.AllReduceSum(std::span<int64_t>(ids, 3)));
  // The slowest rank defines the step time.
  double slowest = train_sec;
  {
    std::vector<float> all;
    LEMRT_RETURN_IF_ERROR(comm_.AllGather(std::span<const float>(
        std::vector<float>{static_cast<float>(train_sec)}), &all));
    for (float v : all) slowest = std::max<double>(slowest, v);
  }

  summary::RunSummary s;
  s.set_world_size(comm_.size());
  s.set_sparse_cores_per_chip(config_.topology().sparse_cores_per_chip());
  s.set_global_batch(tc.global_batch());
  s.set_steps(tc.steps());
  const int64_t steps_run = tc.steps() - first_step;
  s.set_samples_per_sec(slowest > 0 ? steps_run * tc.global_batch() / slowest : 0);
  double mean = 0;
  for (double v : step_ms) mean += v;
  s.mutable_step_time_ms()->set_mean(step_ms.empty() ? 0 : mean / step_ms.size());
  s.mutable_step_time_ms()->set_p50(Percentile(step_ms, 0.5));
  s.mutable_step_time_ms()->set_p99(Percentile(step_ms, 0.99));
  if (!losses.empty()) {
    s.mutable_train()->set_loss_last(losses.back());
    double tail = 0;
    const size_t n = std::min<size_t>(10, losses.size());
    for (size_t i = losses.size() - n; i < losses.size(); ++i) tail += losses[i];
    s.mutable_train()->set_loss_mean_last_10(tail / n);
  }
  s.mutable_eval()->set_auc(eval.auc);
  s.mutable_eval()->set_logloss(eval.logloss);
  s.mutable_eval()->set_samples(eval.samples);
  if (eval.teacher_auc >= 0) {
    s.mutable_eval()->mutable_teacher_auc()->set_number_value(eval.teacher_auc);
  } else {
    s.mutable_eval()->mutable_teacher_auc()->set_null_value(google::protobuf::NULL_VALUE);
  }
  s.mutable_ids()->set_total(ids[0]);
  s.mutable_ids()->set_after_dedup(ids[1]);
  s.mutable_ids()->set_unique_per_partition(ids[2]);
  s.set_params_l2(stats.params_l2);
  s.set_model_checksum(stats.checksum);
  device::FillMemoryStats(memory_plan_, s.mutable_memory());
  s.set_pipelining(false);
  s.set_wall_time_sec(slowest);
  LEMRT_RETURN_IF_ERROR(host_->Summarise(s.mutable_preprocess()));
  auto* b = s.mutable_breakdown_ms();
  const double n = std::max<double>(1, steps_run);
  b->set_host(stage_total[0] / n);
  b->set_sc_forward(stage_total[1] / n);
  b->set_tc(stage_total[2] / n);
  b->set_sc_backward(stage_total[3] / n);
  LEMRT_RETURN_IF_ERROR(recorder_->Finish(comm_, &s));
  return s;
}

}  // namespace lemrt::runtime
