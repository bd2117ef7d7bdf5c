#include "device/tensorcore/task_heads.h"

#include <cmath>

#include "device/tensorcore/dense_init.h"
#include "glog/logging.h"

namespace lemrt::device {
TaskHeads::TaskHeads(const MlpShape& shape, std::span<const float> loss_weights, int64_t max_batch,
                     ThreadTeam* team)
    : loss_weights_(loss_weights.begin(), loss_weights.end()),
      head_params_(Mlp::NumParams(shape.widths)) {
  CHECK(!loss_weights.empty());
  CHECK_EQ(shape.widths.back(), 1);
  for (size_t t = 0; t < loss_weights.size(); ++t) {
    CHECK(std::isfinite(loss_weights[t]) && loss_weights[t] >= 0) << loss_weights[t];
    MlpShape head = shape;
    head.dropout_layer = shape.dropout_layer + static_cast<int>(t) * kTaskDropoutLayerStride;
    heads_.push_back(std::make_unique<Mlp>(head, max_batch, team));
    d_logits_.emplace_back(static_cast<size_t>(max_batch));
  }
  if (heads_.size() > 1) dx_head_.resize(static_cast<size_t>(max_batch) * shape.widths.front());
}

int64_t TaskHeads::NumParams(std::span<const int> widths, int tasks) {
  return Mlp::NumParams(widths) * tasks;
}

void TaskHeads::Forward(std::span<const float> params, int64_t batch, const float* x,
                        const DropoutKey* dropout) {
  for (int t = 0; t < num_tasks(); ++t) {
    heads_[t]->Forward(params.subspan(t * head_params_, head_params_), batch, x, nullptr, dropout);
  }
}

double TaskHeads::LossAndGradient(int64_t batch, const float* labels, float loss_scale) {
  const int tasks = num_tasks();
  double total = 0.0;
  for (int t = 0; t < tasks; ++t) {
    const float* logits = heads_[t]->output();
    float* d_logits = d_logits_[t].data();
    const double weight = loss_weights_[t];
    double loss = 0.0;
    for (int64_t i = 0; i < batch; ++i) {
      const double y = labels[i * tasks + t];
      if (std::isnan(y)) {  // masked: this row holds no label of task t
        d_logits[i] = 0.0f;
        continue;
      }
      const double x = logits[i];
      loss += BinaryCrossEntropyWithLogit(x, y);
      // loss_scale x 1 is loss_scale exactly: one task of weight 1 gives
      // LogisticLossAndGradient's bits.
      d_logits[i] = static_cast<float>(loss_scale * weight * (Sigmoid(x) - y));
    }
    total += weight * loss;
  }
  return total;
}

void TaskHeads::Backward(std::span<const float> params, int64_t batch, const float* x,
                         std::span<float> grads, float* dx) {
  for (int t = 0; t < num_tasks(); ++t) {
    float* out = t == 0 ? dx : dx_head_.data();
    heads_[t]->Backward(params.subspan(t * head_params_, head_params_), batch, x,
                        d_logits_[t].data(), grads.subspan(t * head_params_, head_params_), out);
    if (t == 0) continue;
    const int64_t width = heads_[t]->in_width();
    // Heads add in task order, so the sum does not depend on the team.
    for (int64_t k = 0; k < batch * width; ++k) dx[k] += dx_head_[k];
  }
}

void TaskHeads::Probabilities(int64_t batch, float* probs) const {
  const int tasks = num_tasks();
  for (int t = 0; t < tasks; ++t) {
    const float* logits = heads_[t]->output();
    for (int64_t i = 0; i < batch; ++i) {
      probs[i * tasks + t] = static_cast<float>(Sigmoid(logits[i]));
    }
  }
}

}  // namespace lemrt::device
