#include "runtime/tensorcore_stage.h"

#include "proto/config_loader.h"

namespace lemrt::runtime {

absl::StatusOr<std::unique_ptr<TensorCoreStage>> TensorCoreStage::Create(
    const config::RunConfig& config, Communicator& comm) {
  const int64_t local_batch = config.training().global_batch() / comm.size();
  auto model = device::CreateDenseModel(device::DenseModelSpecFromConfig(config), local_batch,
                                        config.training().seed());
  if (!model.ok()) return model.status();
  auto optimizer = device::CreateDenseOptimizer(config);
  return std::unique_ptr<TensorCoreStage>(new TensorCoreStage(
      comm, std::move(*model), std::move(optimizer), config.training().global_batch(),
      config.training().seed()));
}

TensorCoreStage::TensorCoreStage(Communicator& comm, std::unique_ptr<device::DenseModel> model,
                                 std::unique_ptr<device::Optimizer> optimizer,
                                 int64_t global_batch, uint64_t seed)
    : comm_(comm),
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
  model_->set_dropout_key({.seed = seed_,
                           .step = step,
                           .first_sample = step * global_batch_ + comm_.rank() * local_batch});
  const double loss =
      model_->ForwardBackward(batch.num_samples, batch.dense.data(), activations.data(),
                              batch.labels.data(), loss_scale_, d_activations.data());
  absl::Status st = comm_.AllReduceSum(model_->mutable_grads());
  if (!st.ok()) return st;
  ++updates_;
  optimizer_->Apply(model_->params(), slots_, model_->grads(), updates_,
                    optimizer_->LearningRateAt(updates_));
  return loss;
}

void TensorCoreStage::Predict(const host::Batch& batch, std::span<const float> activations,
                              std::span<float> probs) {
  model_->Predict(batch.num_samples, batch.dense.data(), activations.data(), probs.data());
}

}  // namespace lemrt::runtime
