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
    fixed_.resize(params + base::ExactSlots(1) + 1);
    exponents_.resize(base::BlockSumExponentSlots(params));
    predicted_.reserve(exponents_.size());
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
  // With a prediction each block's gradients go into fixed point as soon as
  // they are formed; without one, every block's but the last are copied
  // aside for the measured exponents.
  const bool predicted = !predicted_.empty();
  bool fits = true;
  for (int64_t b = 0; b < blocks; ++b) {
    bool ran;
    const double loss = ForwardBackwardRows(key, batch, b * block_, (b + 1) * block_, activations,
                                            d_activations, loss_scale, &ran);
    block_ran_[b] = ran ? 1 : 0;
    if (!ran) continue;
    exact_loss.back() += base::AddExact(loss, exact_loss.data()) ? 0 : 1;
    if (!predicted) {
      if (b + 1 < blocks) KeepBlockGrads(b);
    } else if (fits) {
      fits = base::AddBlockSum(model_->grads(), predicted_, headroom_bits_, fixed_grads);
    }
  }
  if (predicted) {
    fixed_.back() = fits ? 0 : 1;  // blocks that did not fit, summed over the global batch
    LEMRT_RETURN_IF_ERROR(comm_.AllReduceSum(std::span<int64_t>(fixed_)));
  }
  if (!predicted || fixed_.back() != 0) {
    // Measured exponents: a MAX round, then the integers again (with the
    // loss's limbs when they were not summed yet).
    if (predicted) {
      ++remeasured_steps_;
      VLOG(1) << "step " << key.step << ": " << fixed_.back()
              << " gradient block(s) reached a predicted exponent; measuring them";
      RecomputeBlocks(key, batch, activations, d_activations, loss_scale);
    }
    LEMRT_RETURN_IF_ERROR(MeasuredSum(blocks, predicted ? params : fixed_.size()));
  } else {
    base::BlockSumValues(fixed_grads, predicted_, headroom_bits_, model_->mutable_grads());
  }
  predicted_.resize(exponents_.size());
  base::BlockSumNextExponents(model_->grads(), predicted_);
  return comm_.rank() == 0 ? base::ExactScalar(exact_loss) : 0.0;
}

std::span<const float> TensorCoreStage::BlockGrads(int64_t b, int64_t blocks) const {
  if (b + 1 == blocks) return model_->grads();
  const int64_t params = model_->num_params();
  return {block_grads_.data() + b * params, static_cast<size_t>(params)};
}

void TensorCoreStage::KeepBlockGrads(int64_t b) {
  std::copy(model_->grads().begin(), model_->grads().end(),
            block_grads_.begin() + b * model_->num_params());
}

void TensorCoreStage::RecomputeBlocks(device::DropoutKey key, const host::Batch& batch,
                                      std::span<const float> activations,
                                      std::span<float> d_activations, float loss_scale) {
  const int64_t blocks = batch.num_samples / block_;
  if (blocks == 1) return;  // the grads still hold the only block's
  // The same rows, key and weights: the same bits (and d_activations) again.
  for (int64_t b = 0; b < blocks; ++b) {
    if (!block_ran_[b]) continue;
    bool ran;
    ForwardBackwardRows(key, batch, b * block_, (b + 1) * block_, activations, d_activations,
                        loss_scale, &ran);
    if (b + 1 < blocks) KeepBlockGrads(b);
  }
}

absl::Status TensorCoreStage::MeasuredSum(int64_t blocks, size_t summed) {
  const int64_t params = model_->num_params();
  const std::span<int64_t> fixed_grads(fixed_.data(), params);
  std::fill(exponents_.begin(), exponents_.end(), base::kBlockSumNoExponent);
  for (int64_t b = 0; b < blocks; ++b) {
    if (block_ran_[b]) base::BlockSumExponents(BlockGrads(b, blocks), exponents_);
  }
  LEMRT_RETURN_IF_ERROR(comm_.AllReduceMax(std::span<int64_t>(exponents_)));
  std::fill(fixed_grads.begin(), fixed_grads.end(), 0);
  for (int64_t b = 0; b < blocks; ++b) {
    // Measured exponents bound every value; false only for a special value,
    // which BlockSumValues turns into NaN everywhere.
    if (block_ran_[b]) (void)base::AddBlockSum(BlockGrads(b, blocks), exponents_, headroom_bits_,
                                               fixed_grads);
  }
  LEMRT_RETURN_IF_ERROR(comm_.AllReduceSum(std::span<int64_t>(fixed_.data(), summed)));
  base::BlockSumValues(fixed_grads, exponents_, headroom_bits_, model_->mutable_grads());
  return absl::OkStatus();
}

absl::Status TensorCoreStage::set_predicted_exponents(std::span<const int64_t> exps) {
  if (exps.empty() || block_ == 0) {
    predicted_.clear();
    return absl::OkStatus();
  }
  if (exps.size() != exponents_.size() || !base::BlockSumExponentsValid(exps)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the dense gradients' predicted exponents: %d values, expected %d, each an exponent of "
        "base/block_sum.h",
        exps.size(), exponents_.size()));
  }
  predicted_.assign(exps.begin(), exps.end());
  return absl::OkStatus();
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
