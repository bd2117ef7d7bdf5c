#include "device/tensorcore/cross_dense.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "device/tensorcore/dense_init.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// Samples per task of the copies into and out of x_0.
constexpr int64_t kSamplesPerTask = 64;

int SumDims(const DlrmShape& shape) {
  int sum = 0;
  for (int dim : shape.feature_dims) sum += dim;
  return sum;
}

MlpShape BottomShape(const DlrmShape& shape, float dropout = 0.0f) {
  MlpShape mlp{.widths = {shape.num_dense}, .relu_last = true, .dropout = dropout};
  mlp.widths.insert(mlp.widths.end(), shape.bottom.begin(), shape.bottom.end());
  return mlp;
}

MlpShape TopShape(const DlrmShape& shape, float dropout = 0.0f) {
  MlpShape mlp{.widths = {shape.bottom.back() + SumDims(shape)},
               .relu_last = false,
               .dropout = dropout,
               .dropout_layer = kTopMlpDropoutLayer};
  mlp.widths.insert(mlp.widths.end(), shape.top.begin(), shape.top.end());
  return mlp;
}

CrossNetworkShape CrossShape(const DenseModelSpec& spec) {
  return {.width = spec.shape.bottom.back() + SumDims(spec.shape),
          .num_layers = spec.cross_layers,
          .low_rank = spec.cross_low_rank,
          .precision = spec.precision};
}

}  // namespace

int64_t CrossDense::NumParams(const DenseModelSpec& spec) {
  int64_t n = Mlp::NumParams(BottomShape(spec.shape).widths) +
              TaskHeads::NumParams(TopShape(spec.shape).widths,
                                   static_cast<int>(spec.shape.task_weights.size()));
  if (spec.interaction == Interaction::kDcnV2) n += CrossNetwork::NumParams(CrossShape(spec));
  return n;
}

absl::StatusOr<std::unique_ptr<CrossDense>> CrossDense::Create(const DenseModelSpec& spec,
                                                               int64_t max_batch, uint64_t seed,
                                                               ThreadTeam* team) {
  CHECK(spec.interaction == Interaction::kDcnV2 || spec.interaction == Interaction::kConcat);
  if (auto count = CountDenseParams(spec); !count.ok()) return count.status();
  if (max_batch < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch is ", max_batch, "; it must be >= 0."));
  }
  std::unique_ptr<CrossDense> model(new CrossDense(spec, max_batch, team));
  model->InitParams(seed);
  return model;
}

CrossDense::CrossDense(const DenseModelSpec& spec, int64_t max_batch, ThreadTeam* team)
    : spec_(spec),
      max_batch_(max_batch),
      embedding_width_(SumDims(spec.shape)),
      concat_width_(spec.shape.bottom.back() + embedding_width_),
      bottom_(WithPrecision(BottomShape(spec.shape, spec.dropout.bottom), spec.precision),
              max_batch, team),
      heads_(WithPrecision(TopShape(spec.shape, spec.dropout.top), spec.precision),
             spec.shape.task_weights, max_batch, team),
      team_(team) {
  cross_offset_ = bottom_.num_params();
  top_offset_ = cross_offset_;
  if (spec.interaction == Interaction::kDcnV2) {
    cross_.emplace(CrossShape(spec), max_batch, team);
    top_offset_ += cross_->num_params();
  }
  params_.assign(static_cast<size_t>(top_offset_ + heads_.num_params()), 0.0f);
  grads_.assign(params_.size(), 0.0f);
  const size_t rows = static_cast<size_t>(max_batch);
  x0_.resize(rows * concat_width_);
  dx_.resize(x0_.size());
  if (cross_.has_value()) dx0_.resize(x0_.size());
  d_bottom_.resize(rows * spec.shape.bottom.back());
}

void CrossDense::InitParams(uint64_t seed) {
  // Biases stay at the zero they were assigned.
  auto fill_mlp = [&](const Mlp& mlp, int64_t base) {
    for (int l = 0; l < mlp.num_layers(); ++l) {
      const Mlp::Layer& layer = mlp.layer(l);
      XavierFill(params_, base + layer.weight_offset, int64_t{layer.in} * layer.out, layer.in,
                 layer.out, seed);
    }
  };
  fill_mlp(bottom_, 0);
  if (cross_.has_value()) {
    const int w = cross_->width();
    const int r = cross_->shape().low_rank;
    for (int l = 0; l < cross_->num_layers(); ++l) {
      const CrossNetwork::Layer& layer = cross_->layer(l);
      if (r > 0) {
        XavierFill(params_, cross_offset_ + layer.v_offset, int64_t{w} * r, w, r, seed);
        XavierFill(params_, cross_offset_ + layer.u_offset, int64_t{r} * w, r, w, seed);
      } else {
        XavierFill(params_, cross_offset_ + layer.v_offset, int64_t{w} * w, w, w, seed);
      }
    }
  }
  for (int t = 0; t < heads_.num_tasks(); ++t) {
    fill_mlp(heads_.head(t), top_offset_ + t * heads_.head_params());
  }
}

void CrossDense::Forward(int64_t batch, const float* dense, const float* emb,
                         const DropoutKey* dropout) {
  CHECK_GE(batch, 0);
  CHECK_LE(batch, max_batch_);
  const int d = spec_.shape.bottom.back();
  bottom_.Forward(Part(0, bottom_.num_params()), batch, dense, nullptr, dropout);
  const float* z0 = bottom_.output();
  ParallelRanges(team_, batch, kSamplesPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = x0_.data() + r * concat_width_;
      std::memcpy(row, z0 + r * d, sizeof(float) * d);
      std::memcpy(row + d, emb + r * embedding_width_, sizeof(float) * embedding_width_);
    }
  });
  const float* top_in = x0_.data();
  if (cross_.has_value()) {
    cross_->Forward(Part(cross_offset_, cross_->num_params()), batch, x0_.data());
    top_in = cross_->output();
  }
  heads_.Forward(Part(top_offset_, heads_.num_params()), batch, top_in, dropout);
}

double CrossDense::ForwardBackward(int64_t batch, const float* dense, const float* emb,
                                   const float* labels, float loss_scale, float* d_emb) {
  const ThreadTeam::Hold hold(team_);  // workers stay awake for the step
  Forward(batch, dense, emb, &dropout_key_);
  const double loss = heads_.LossAndGradient(batch, labels, loss_scale);
  std::span<float> grads(grads_);
  const float* top_in = cross_.has_value() ? cross_->output() : x0_.data();
  heads_.Backward(Part(top_offset_, heads_.num_params()), batch, top_in,
                  grads.subspan(top_offset_, heads_.num_params()), dx_.data());
  const float* dx0 = dx_.data();
  if (cross_.has_value()) {
    cross_->Backward(Part(cross_offset_, cross_->num_params()), batch, x0_.data(), dx_.data(),
                     grads.subspan(cross_offset_, cross_->num_params()), dx0_.data());
    dx0 = dx0_.data();
  }
  const int d = spec_.shape.bottom.back();
  ParallelRanges(team_, batch, kSamplesPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = dx0 + r * concat_width_;
      std::memcpy(d_bottom_.data() + r * d, row, sizeof(float) * d);
      std::memcpy(d_emb + r * embedding_width_, row + d, sizeof(float) * embedding_width_);
    }
  });
  bottom_.Backward(Part(0, bottom_.num_params()), batch, dense, d_bottom_.data(),
                   grads.subspan(0, bottom_.num_params()), /*d_in=*/nullptr);
  return loss;
}

void CrossDense::Predict(int64_t batch, const float* dense, const float* emb, float* probs) {
  const ThreadTeam::Hold hold(team_);  // workers stay awake for the step
  Forward(batch, dense, emb, /*dropout=*/nullptr);
  heads_.Probabilities(batch, probs);
}

}  // namespace lemrt::device
