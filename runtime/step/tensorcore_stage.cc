#include "runtime/step/tensorcore_stage.h"

#include <algorithm>
#include <numeric>

#include "base/exact_sum.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "proto/config_loader.h"
#include "runtime/threads/thread_budget.h"

namespace lemrt::runtime {

int64_t GradientBlockSamples(const config::TrainingConfig& training, int world_size) {
  if (!training.world_size_independent()) return 0;
  const int64_t global = training.global_batch();
  int64_t block = training.gradient_block_samples();
  if (block == 0) {
    // Auto: the local batch of 4 ranks (of 2 or 1 where 4 does not divide
    // the batch): 1, 2 and 4 ranks agree, and no rank runs blocks smaller
    // than that (smaller blocks cost dense-stage time: docs/performance.md).
    block = global / std::gcd(global, int64_t{4});
  }
  const int64_t local = global / world_size;
  return local % block == 0 ? block : std::gcd(block, local);
}

absl::StatusOr<std::unique_ptr<TensorCoreStage>> TensorCoreStage::Create(
    const config::RunConfig& config, Communicator& comm) {
  const int64_t local_batch = config.training().global_batch() / comm.size();
  auto team = std::make_unique<device::ThreadTeam>(
      std::max(1, config.tensor_core().gemm_threads()), /*spin_us=*/50,
      /*polls_when_held=*/TensorCoreTeamPolls(config));
  auto model = device::CreateDenseModel(device::DenseModelSpecFromConfig(config), local_batch,
                                        config.training().seed(), team.get());
  if (!model.ok()) return model.status();
  auto optimizer = device::CreateDenseOptimizer(config);
  const int64_t block = GradientBlockSamples(config.training(), comm.size());
  if (comm.rank() == 0 && block != GradientBlockSamples(config.training(), 1)) {
    LOG(WARNING) << "training.world_size_independent: the local batch of " << local_batch
                 << " samples is not a whole number of " << GradientBlockSamples(config.training(), 1)
                 << "-sample blocks; this run sums blocks of " << block
                 << " samples, so its model differs from those of world sizes that use the "
                    "configured block (set training.gradient_block_samples to a divisor of "
                    "every local batch you compare)";
  }
  return std::unique_ptr<TensorCoreStage>(new TensorCoreStage(
      comm, std::move(team), std::move(*model), std::move(optimizer),
      config.training().global_batch(), config.training().seed(), block));
}

TensorCoreStage::TensorCoreStage(Communicator& comm, std::unique_ptr<device::ThreadTeam> team,
                                 std::unique_ptr<device::DenseModel> model,
                                 std::unique_ptr<device::Optimizer> optimizer,
                                 int64_t global_batch, uint64_t seed, int64_t block)
    : comm_(comm),
      team_(std::move(team)),
      model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      slots_(optimizer_->SlotFloats(model_->num_params())),
      loss_scale_(1.0f / static_cast<float>(global_batch)),
      global_batch_(global_batch),
      seed_(seed),
      block_(block) {
  optimizer_->InitSlots(slots_);
  if (block_ > 0) exact_.resize(base::ExactSlots(model_->num_params()) + base::ExactSlots(1));
}

absl::StatusOr<double> TensorCoreStage::Step(int64_t step, const host::Batch& batch,
                                             std::span<const float> activations,
                                             std::span<float> d_activations) {
  // Rank r's rows are rows [r * local_batch, (r + 1) * local_batch) of the
  // step's global batch.
  const int64_t local_batch = global_batch_ / comm_.size();
  const device::DropoutKey key{.seed = seed_,
                               .step = step,
                               .first_sample = step * global_batch_ + comm_.rank() * local_batch};
  // The loss is the mean over the global batch's real samples (all of them
  // but in an epoch's last, partial batch).
  const float loss_scale = batch.global_samples > 0
                               ? 1.0f / static_cast<float>(batch.global_samples)
                               : loss_scale_;
  double loss;
  if (block_ > 0) {
    LEMRT_ASSIGN_OR_RETURN(loss, BlockedForwardBackward(key, batch, activations, d_activations,
                                                        loss_scale));
  } else {
    bool ran;
    loss = ForwardBackwardRows(key, batch, 0, batch.num_samples, activations, d_activations,
                               loss_scale, &ran);
    if (!ran) std::fill(model_->mutable_grads().begin(), model_->mutable_grads().end(), 0.0f);
    LEMRT_RETURN_IF_ERROR(comm_.AllReduceSum(model_->mutable_grads()));
  }
  ++updates_;
  optimizer_->Apply(model_->params(), slots_, model_->grads(), updates_,
                    optimizer_->LearningRateAt(updates_));
  return loss;
}

absl::StatusOr<double> TensorCoreStage::BlockedForwardBackward(
    device::DropoutKey key, const host::Batch& batch, std::span<const float> activations,
    std::span<float> d_activations, float loss_scale) {
  const int64_t params = model_->num_params();
  const std::span<int64_t> exact_grads(exact_.data(), base::ExactSlots(params));
  const std::span<int64_t> exact_loss(exact_.data() + exact_grads.size(), base::ExactSlots(1));
  std::fill(exact_.begin(), exact_.end(), 0);
  for (int64_t begin = 0; begin < batch.num_samples; begin += block_) {
    bool ran;
    const double loss = ForwardBackwardRows(key, batch, begin, begin + block_, activations,
                                            d_activations, loss_scale, &ran);
    if (!ran) continue;
    base::AddExact(model_->grads(), exact_grads);
    exact_loss.back() += base::AddExact(loss, exact_loss.data()) ? 0 : 1;
  }
  LEMRT_RETURN_IF_ERROR(comm_.AllReduceSum(std::span<int64_t>(exact_)));
  base::ExactValues(exact_grads, model_->mutable_grads());
  return comm_.rank() == 0 ? base::ExactScalar(exact_loss) : 0.0;
}

double TensorCoreStage::ForwardBackwardRows(device::DropoutKey key, const host::Batch& batch,
                                            int64_t begin, int64_t end,
                                            std::span<const float> activations,
                                            std::span<float> d_activations, float loss_scale,
                                            bool* ran) {
  const int64_t d = batch.num_dense;
  const int64_t w = model_->embedding_width();
  const int64_t tasks = batch.num_tasks;
  int64_t real = 0;
  for (int64_t i = begin; i < end; ++i) real += batch.real(i) ? 1 : 0;
  *ran = real > 0;
  if (real == end - begin) {
    key.first_sample += begin;
    model_->set_dropout_key(key);
    return model_->ForwardBackward(end - begin, batch.dense.data() + begin * d,
                                   activations.data() + begin * w,
                                   batch.labels.data() + begin * tasks,
                                   loss_scale, d_activations.data() + begin * w);
  }
  packed_dense_.resize(real * d);
  packed_emb_.resize(real * w);
  packed_labels_.resize(real * tasks);
  packed_d_emb_.resize(real * w);
  packed_rows_.resize(real);
  int64_t n = 0;
  for (int64_t i = begin; i < end; ++i) {
    if (!batch.real(i)) continue;
    std::copy_n(batch.dense.data() + i * d, d, packed_dense_.data() + n * d);
    std::copy_n(activations.data() + i * w, w, packed_emb_.data() + n * w);
    std::copy_n(batch.labels.data() + i * tasks, tasks, packed_labels_.data() + n * tasks);
    packed_rows_[n] = i;
    ++n;
  }
  double loss = 0.0;
  if (real > 0) {
    // Each packed row keeps the dropout mask of its row in the batch.
    key.rows = packed_rows_.data();
    model_->set_dropout_key(key);
    loss = model_->ForwardBackward(n, packed_dense_.data(), packed_emb_.data(),
                                   packed_labels_.data(), loss_scale, packed_d_emb_.data());
  }
  // Scatter the real rows' gradients back; a masked row gets none.
  n = 0;
  for (int64_t i = begin; i < end; ++i) {
    float* row = d_activations.data() + i * w;
    if (batch.real(i)) {
      std::copy_n(packed_d_emb_.data() + n * w, w, row);
      ++n;
    } else {
      std::fill_n(row, w, 0.0f);
    }
  }
  return loss;
}

void TensorCoreStage::Predict(const host::Batch& batch, std::span<const float> activations,
                              std::span<float> probs) {
  model_->Predict(batch.num_samples, batch.dense.data(), activations.data(), probs.data());
}

}  // namespace lemrt::runtime
