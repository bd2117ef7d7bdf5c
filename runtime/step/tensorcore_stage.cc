#include "runtime/step/tensorcore_stage.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "base/block_sum.h"
#include "base/exact_sum.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "proto/config_loader.h"
#include "runtime/threads/thread_budget.h"

namespace lemrt::runtime {

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
  const int64_t block = config::GradientBlockSamples(config.training());
  if (block > 0 && local_batch % block != 0) {  // the config check reports it first
    return absl::InvalidArgumentError(absl::StrFormat(
        "training.gradient_block_samples: the local batch of %d samples is not a whole number "
        "of %d-sample blocks",
        local_batch, block));
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
  if (block_ > 0) {
    const int64_t params = model_->num_params();
    const int64_t local_blocks = global_batch_ / comm_.size() / block_;
    headroom_bits_ = base::BlockSumHeadroomBits(global_batch_ / block_);
    fixed_.resize(params + base::ExactSlots(1));
    exponents_.resize(base::BlockSumExponentSlots(params));
    block_grads_.resize((local_blocks - 1) * params);
    block_ran_.resize(local_blocks);
  }
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
  const int64_t blocks = batch.num_samples / block_;
  const std::span<int64_t> fixed_grads(fixed_.data(), params);
  const std::span<int64_t> exact_loss(fixed_.data() + params, base::ExactSlots(1));
  std::fill(fixed_.begin(), fixed_.end(), 0);
  std::fill(exponents_.begin(), exponents_.end(), base::kBlockSumNoExponent);
  // Every block's gradients, kept until the exponents are agreed: the last
  // block's stay in the model's grads, the others are copied aside.
  auto block_grads = [&](int64_t b) -> std::span<const float> {
    if (b + 1 == blocks) return model_->grads();
    return {block_grads_.data() + b * params, static_cast<size_t>(params)};
  };
  for (int64_t b = 0; b < blocks; ++b) {
    bool ran;
    const double loss = ForwardBackwardRows(key, batch, b * block_, (b + 1) * block_, activations,
                                            d_activations, loss_scale, &ran);
    block_ran_[b] = ran ? 1 : 0;
    if (!ran) continue;
    if (b + 1 < blocks) {
      std::copy(model_->grads().begin(), model_->grads().end(), block_grads_.begin() + b * params);
    }
    base::BlockSumExponents(model_->grads(), exponents_);
    exact_loss.back() += base::AddExact(loss, exact_loss.data()) ? 0 : 1;
  }
  LEMRT_RETURN_IF_ERROR(comm_.AllReduceMax(std::span<int64_t>(exponents_)));
  for (int64_t b = 0; b < blocks; ++b) {
    if (block_ran_[b]) base::AddBlockSum(block_grads(b), exponents_, headroom_bits_, fixed_grads);
  }
  LEMRT_RETURN_IF_ERROR(comm_.AllReduceSum(std::span<int64_t>(fixed_)));
  base::BlockSumValues(fixed_grads, exponents_, headroom_bits_, model_->mutable_grads());
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
