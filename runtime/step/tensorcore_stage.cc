#include "runtime/step/tensorcore_stage.h"

#include <algorithm>

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
  return std::unique_ptr<TensorCoreStage>(
      new TensorCoreStage(comm, std::move(team), std::move(*model), std::move(optimizer),
                          config.training().global_batch(), config.training().seed()));
}

TensorCoreStage::TensorCoreStage(Communicator& comm, std::unique_ptr<device::ThreadTeam> team,
                                 std::unique_ptr<device::DenseModel> model,
                                 std::unique_ptr<device::Optimizer> optimizer,
                                 int64_t global_batch, uint64_t seed)
    : comm_(comm),
      team_(std::move(team)),
      model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      slots_(optimizer_->SlotFloats(model_->num_params())),
      loss_scale_(1.0f / static_cast<float>(global_batch)),
      global_batch_(global_batch),
      seed_(seed) {
  optimizer_->InitSlots(slots_);
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
  int64_t real = 0;
  for (int64_t i = 0; i < batch.num_samples; ++i) real += batch.real(i) ? 1 : 0;
  double loss;
  if (real == batch.num_samples) {
    model_->set_dropout_key(key);
    loss = model_->ForwardBackward(batch.num_samples, batch.dense.data(), activations.data(),
                                   batch.labels.data(), loss_scale, d_activations.data());
  } else {
    loss = ForwardBackwardRealRows(key, batch, activations, d_activations, loss_scale);
  }
  absl::Status st = comm_.AllReduceSum(model_->mutable_grads());
  if (!st.ok()) return st;
  ++updates_;
  optimizer_->Apply(model_->params(), slots_, model_->grads(), updates_,
                    optimizer_->LearningRateAt(updates_));
  return loss;
}

double TensorCoreStage::ForwardBackwardRealRows(device::DropoutKey key, const host::Batch& batch,
                                                std::span<const float> activations,
                                                std::span<float> d_activations,
                                                float loss_scale) {
  const int64_t d = batch.num_dense;
  const int64_t w = model_->embedding_width();
  packed_dense_.resize(batch.num_samples * d);
  packed_emb_.resize(batch.num_samples * w);
  packed_labels_.resize(batch.num_samples);
  packed_d_emb_.resize(batch.num_samples * w);
  packed_rows_.resize(batch.num_samples);
  int64_t n = 0;
  for (int64_t i = 0; i < batch.num_samples; ++i) {
    if (!batch.real(i)) continue;
    std::copy_n(batch.dense.data() + i * d, d, packed_dense_.data() + n * d);
    std::copy_n(activations.data() + i * w, w, packed_emb_.data() + n * w);
    packed_labels_[n] = batch.labels[i];
    packed_rows_[n] = i;
    ++n;
  }
  // Each packed row keeps the dropout mask of its row in the batch.
  key.rows = packed_rows_.data();
  model_->set_dropout_key(key);
  const double loss =
      model_->ForwardBackward(n, packed_dense_.data(), packed_emb_.data(), packed_labels_.data(),
                              loss_scale, packed_d_emb_.data());
  // Scatter the real rows' gradients back; a masked row gets none.
  n = 0;
  for (int64_t i = 0; i < batch.num_samples; ++i) {
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
