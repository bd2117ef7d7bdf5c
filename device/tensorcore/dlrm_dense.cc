#include "device/tensorcore/dlrm_dense.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "device/tensorcore/dense_init.h"
#include "device/tensorcore/gemm.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// Samples per task of the interaction.
constexpr int64_t kSamplesPerTask = 64;

MlpShape BottomShape(const DlrmShape& shape, float dropout) {
  MlpShape mlp{.widths = {shape.num_dense}, .relu_last = true, .dropout = dropout};
  mlp.widths.insert(mlp.widths.end(), shape.bottom.begin(), shape.bottom.end());
  return mlp;
}

MlpShape TopShape(const DlrmShape& shape, float dropout) {
  const DotInteraction interaction(
      static_cast<int>(shape.feature_dims.size()) + 1, shape.bottom.back());
  MlpShape mlp{.widths = {interaction.output_width()},
               .relu_last = false,
               .dropout = dropout,
               .dropout_layer = kTopMlpDropoutLayer};
  mlp.widths.insert(mlp.widths.end(), shape.top.begin(), shape.top.end());
  return mlp;
}

// p + offset, or null for a null p: an empty batch's embeddings may be null,
// and an offset applied to a null pointer is undefined behaviour.
template <typename T>
T* OffsetOrNull(T* p, int64_t offset) {
  return p == nullptr ? nullptr : p + offset;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DlrmDense>> DlrmDense::Create(
    const DlrmShape& shape, int64_t max_batch, uint64_t seed, DropoutRates dropout,
    ThreadTeam* team, GemmPrecision precision) {
  DenseModelSpec spec;
  spec.shape = shape;
  spec.dropout = dropout;
  if (absl::Status s = ValidateDenseModelSpec(spec); !s.ok()) return s;
  if (max_batch < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("max_batch is %d; it must be >= 0.", max_batch));
  }
  std::unique_ptr<DlrmDense> model(new DlrmDense(shape, max_batch, dropout, team, precision));
  model->InitParams(seed);
  return model;
}

DlrmDense::DlrmDense(const DlrmShape& shape, int64_t max_batch, DropoutRates dropout,
                     ThreadTeam* team, GemmPrecision precision)
    : shape_(shape),
      max_batch_(max_batch),
      team_(team),
      precision_(precision),
      bottom_(WithPrecision(BottomShape(shape, dropout.bottom), precision), max_batch, team),
      interaction_(static_cast<int>(shape.feature_dims.size()) + 1,
                   shape.bottom.back()),
      heads_(WithPrecision(TopShape(shape, dropout.top), precision), shape.task_weights, max_batch,
             team) {
  const int d = interaction_dim();
  int64_t offset = bottom_.num_params();
  for (int dim : shape.feature_dims) {
    Feature feature{.dim = dim, .emb_offset = embedding_width_};
    if (dim != d) {
      feature.proj_offset = offset;
      offset += static_cast<int64_t>(dim) * d;
    }
    features_.push_back(feature);
    embedding_width_ += dim;
  }
  top_offset_ = offset;
  params_.assign(static_cast<size_t>(top_offset_ + heads_.num_params()), 0.0f);
  grads_.assign(params_.size(), 0.0f);
  // Vector 0 (the bottom MLP's output) has rows of d floats; a projected
  // feature's rows are in z_ / dz_, an unprojected one's in emb / d_emb.
  z_stride_.push_back(d);
  for (const Feature& feature : features_) {
    z_stride_.push_back(feature.proj_offset >= 0 ? interaction_.input_width() : embedding_width_);
  }
  z_base_.resize(z_stride_.size());
  dz_base_.resize(z_stride_.size());
  proj_tasks_.reserve(2 * features_.size());
  proj_groups_.reserve(2 * features_.size());
  const size_t rows = static_cast<size_t>(max_batch);
  const bool any_projected = std::any_of(features_.begin(), features_.end(),
                                         [](const Feature& f) { return f.proj_offset >= 0; });
  if (any_projected) {  // else the interaction reads and writes in place
    z_.resize(rows * interaction_.input_width());
    dz_.resize(z_.size());
  }
  x_.resize(rows * interaction_.output_width());
  dx_.resize(x_.size());
  d_bottom_.resize(rows * d);
}

void DlrmDense::InitParams(uint64_t seed) {
  // Biases stay at the zero they were assigned.
  auto fill_mlp = [&](const Mlp& mlp, int64_t base) {
    for (int l = 0; l < mlp.num_layers(); ++l) {
      const Mlp::Layer& layer = mlp.layer(l);
      XavierFill(params_, base + layer.weight_offset,
                 static_cast<int64_t>(layer.in) * layer.out, layer.in,
                 layer.out, seed);
    }
  };
  fill_mlp(bottom_, bottom_offset_);
  const int d = interaction_dim();
  for (const Feature& f : features_) {
    if (f.proj_offset < 0) continue;
    XavierFill(params_, f.proj_offset, static_cast<int64_t>(f.dim) * d, f.dim,
               d, seed);
  }
  for (int t = 0; t < heads_.num_tasks(); ++t) {
    fill_mlp(heads_.head(t), top_offset_ + t * heads_.head_params());
  }
}

std::span<const float> DlrmDense::bottom_params() const {
  return std::span<const float>(params_).subspan(bottom_offset_,
                                                 bottom_.num_params());
}

std::span<const float> DlrmDense::top_params() const {
  return std::span<const float>(params_).subspan(top_offset_, heads_.num_params());
}

void DlrmDense::Forward(int64_t batch, const float* dense, const float* emb,
                        const DropoutKey* dropout) {
  CHECK_GE(batch, 0);
  CHECK_LE(batch, max_batch_);
  const int d = interaction_dim();
  const int64_t zw = interaction_.input_width();

  bottom_.Forward(bottom_params(), batch, dense, nullptr, dropout);
  // z_f = emb_f P_f, written into feature f's columns of z_.
  proj_tasks_.clear();
  for (size_t f = 0; f < features_.size(); ++f) {
    const Feature& feature = features_[f];
    if (feature.proj_offset < 0) continue;
    const float* emb_f = OffsetOrNull(emb, feature.emb_offset);
    proj_tasks_.emplace_back(false, false, batch, d, feature.dim, emb_f, embedding_width_,
                             params_.data() + feature.proj_offset, d,
                             z_.data() + (f + 1) * d, zw, GemmEpilogue{}, precision_);
  }
  RunProjections();
  // The interaction reads z_0 and the unprojected features where they are.
  z_base_[0] = bottom_.output();
  for (size_t f = 0; f < features_.size(); ++f) {
    const Feature& feature = features_[f];
    z_base_[f + 1] = feature.proj_offset >= 0 ? z_.data() + (f + 1) * d
                                              : OffsetOrNull(emb, feature.emb_offset);
  }
  const InteractionVectors<const float> z{z_base_.data(), z_stride_.data()};
  ParallelRanges(team_, batch, kSamplesPerTask, [&](int64_t begin, int64_t end) {
    interaction_.Forward(begin, end, z, x_.data());
  });
  heads_.Forward(top_params(), batch, x_.data(), dropout);
}

void DlrmDense::BackwardInteraction(int64_t batch, const float* emb, float* d_emb) {
  const int d = interaction_dim();
  const int64_t zw = interaction_.input_width();
  // d z_0 goes to d_bottom_, an unprojected feature's straight to d_emb, a
  // projected one's to dz_ (then through its projection below).
  dz_base_[0] = d_bottom_.data();
  for (size_t f = 0; f < features_.size(); ++f) {
    const Feature& feature = features_[f];
    dz_base_[f + 1] = feature.proj_offset >= 0 ? dz_.data() + (f + 1) * d
                                               : OffsetOrNull(d_emb, feature.emb_offset);
  }
  const InteractionVectors<const float> z{z_base_.data(), z_stride_.data()};
  const InteractionVectors<float> dz{dz_base_.data(), z_stride_.data()};
  ParallelRanges(team_, batch, kSamplesPerTask, [&](int64_t begin, int64_t end) {
    interaction_.Backward(begin, end, z, dx_.data(), dz);
  });
  proj_tasks_.clear();
  for (size_t f = 0; f < features_.size(); ++f) {
    const Feature& feature = features_[f];
    if (feature.proj_offset < 0) continue;
    const float* dzf = dz_.data() + (f + 1) * d;
    // dP_f = emb_f^T dz_f and d emb_f = dz_f P_f^T.
    const float* emb_f = OffsetOrNull(emb, feature.emb_offset);
    float* d_emb_f = OffsetOrNull(d_emb, feature.emb_offset);
    proj_tasks_.emplace_back(true, false, feature.dim, d, batch, emb_f, embedding_width_, dzf, zw,
                             grads_.data() + feature.proj_offset, d, GemmEpilogue{}, precision_);
    proj_tasks_.emplace_back(false, true, batch, feature.dim, d, dzf, zw,
                             params_.data() + feature.proj_offset, d, d_emb_f, embedding_width_,
                             GemmEpilogue{}, precision_);
  }
  RunProjections();
}

void DlrmDense::RunProjections() {
  // Every feature's products write their own outputs: one fork-join.
  proj_groups_.clear();
  for (const GemmTasks& tasks : proj_tasks_) proj_groups_.push_back(tasks.group());
  ParallelForGroups(team_, proj_groups_);
}

double DlrmDense::ForwardBackward(int64_t batch, const float* dense,
                                  const float* emb, const float* labels,
                                  float loss_scale, float* d_emb) {
  const ThreadTeam::Hold hold(team_);  // workers stay awake for the step
  Forward(batch, dense, emb, &dropout_key_);
  const double loss = heads_.LossAndGradient(batch, labels, loss_scale);
  std::span<float> grads(grads_);
  heads_.Backward(top_params(), batch, x_.data(), grads.subspan(top_offset_, heads_.num_params()),
                  dx_.data());
  BackwardInteraction(batch, emb, d_emb);
  bottom_.Backward(bottom_params(), batch, dense, d_bottom_.data(),
                   grads.subspan(bottom_offset_, bottom_.num_params()),
                   /*d_in=*/nullptr);
  return loss;
}

void DlrmDense::Predict(int64_t batch, const float* dense, const float* emb,
                        float* probs) {
  const ThreadTeam::Hold hold(team_);  // workers stay awake for the step
  Forward(batch, dense, emb, /*dropout=*/nullptr);
  heads_.Probabilities(batch, probs);
}

}  // namespace lemrt::device
