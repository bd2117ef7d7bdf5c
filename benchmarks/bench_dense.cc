// Dense DLRM step (DlrmDense::ForwardBackward) against Eigen GEMMs of the
// same shapes, in one binary. Shape: the Criteo Kaggle DLRM (13 dense
// features, bottom 13-512-256-64-16, 26 sparse features of dim 16, dot
// interaction, top 367-512-256-1).
//
// BM_DlrmDense/batch reports GFLOPs of the model step and, measured in the
// same benchmark, ref_GFLOPs of the reference: for every layer (in, out) the
// three row-major Eigen GEMMs of a training step, Y = X W, dX = dY W^T,
// dW = X^T dY, plus the interaction's per-sample Z Z^T and dS Z products.
// Both use the same FLOP count (6 B in out per layer + 4 B (F+1)^2 d), so
// of_ref = ref time / model time (target: >= 0.8).
//
// BM_CrossDense/interaction/batch does the same for the other interactions
// (interaction 0 = dcn_v2 with 3 layers of rank 128, 1 = concat) on the same
// bottom MLP and features, with top 512-256-1 on x_0 = [z_0, embeddings]
// (width 432): the reference runs the three GEMMs of every linear map, the
// cross layers' V_l [432 x 128] and U_l [128 x 432] included; the
// elementwise products and additions are not counted.
#include <algorithm>
#include <ctime>
#include <memory>
#include <vector>

#include "Eigen/Core"
#include "benchmark/benchmark.h"
#include "benchmarks/thread_cpu_timer.h"
#include "device/tensorcore/cross_dense.h"
#include "device/tensorcore/dlrm_dense.h"

namespace lemrt::device {
namespace {

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using bench::SecondsPerCall;
using bench::ThreadCpuSeconds;

DlrmShape CriteoShape() {
  DlrmShape s;
  s.num_dense = 13;
  s.bottom = {512, 256, 64, 16};
  s.top = {512, 256, 1};
  s.feature_dims.assign(26, 16);
  return s;
}

// Layer (in, out) pairs of both MLPs.
std::vector<std::pair<int, int>> Layers(const DlrmShape& s) {
  std::vector<std::pair<int, int>> layers;
  int in = s.num_dense;
  for (int w : s.bottom) layers.push_back({in, w}), in = w;
  const int f1 = static_cast<int>(s.feature_dims.size()) + 1;
  in = s.bottom.back() + f1 * (f1 - 1) / 2;
  for (int w : s.top) layers.push_back({in, w}), in = w;
  return layers;
}


// The three GEMMs of a training step for every (in, out) linear map, as one
// callable, and their FLOPs (6 B in out each).
struct GemmReference {
  GemmReference(int64_t batch, const std::vector<std::pair<int, int>>& maps) : maps(maps) {
    for (auto [in, out] : maps) {
      x.push_back(Mat::Constant(batch, in, 0.1f));
      w.push_back(Mat::Constant(in, out, 0.01f));
      y.push_back(Mat(batch, out));
      dy.push_back(Mat::Constant(batch, out, 0.1f));
      dx.push_back(Mat(batch, in));
      dw.push_back(Mat(in, out));
      flops += 6.0 * batch * in * out;
    }
  }
  void Run() {
    for (size_t l = 0; l < maps.size(); ++l) {
      y[l].noalias() = x[l] * w[l];
      dx[l].noalias() = dy[l] * w[l].transpose();
      dw[l].noalias() = x[l].transpose() * dy[l];
    }
    benchmark::ClobberMemory();
  }
  std::vector<std::pair<int, int>> maps;
  std::vector<Mat> x, w, y, dy, dx, dw;
  double flops = 0;
};

void BM_CrossDense(benchmark::State& state) {
  const bool dcn = state.range(0) == 0;
  const int64_t batch = state.range(1);
  DenseModelSpec spec;
  spec.shape = CriteoShape();
  spec.interaction = dcn ? Interaction::kDcnV2 : Interaction::kConcat;
  spec.cross_layers = 3;
  spec.cross_low_rank = 128;
  auto model = CreateDenseModel(spec, batch, 1).value();
  std::vector<float> dense(batch * spec.shape.num_dense, 0.5f);
  std::vector<float> emb(batch * model->embedding_width(), 0.01f);
  std::vector<float> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<float>(i % 2);
  std::vector<float> d_emb(emb.size());
  auto run = [&] {
    benchmark::DoNotOptimize(model->ForwardBackward(batch, dense.data(), emb.data(),
                                                    labels.data(), 1.0f / batch, d_emb.data()));
  };
  for (auto _ : state) run();

  std::vector<std::pair<int, int>> maps;
  int in = spec.shape.num_dense;
  for (int w : spec.shape.bottom) maps.push_back({in, w}), in = w;
  const int width = in + model->embedding_width();
  if (dcn) {
    for (int l = 0; l < spec.cross_layers; ++l) {
      maps.push_back({width, spec.cross_low_rank});
      maps.push_back({spec.cross_low_rank, width});
    }
  }
  in = width;
  for (int w : spec.shape.top) maps.push_back({in, w}), in = w;
  GemmReference reference(batch, maps);
  const int reps = std::max<int>(1, static_cast<int>(state.iterations() / 5));
  const double model_s = SecondsPerCall(reps, run);
  const double ref_s = SecondsPerCall(reps, [&] { reference.Run(); });
  state.counters["GFLOPs"] = reference.flops / model_s * 1e-9;
  state.counters["ref_GFLOPs"] = reference.flops / ref_s * 1e-9;
  state.counters["of_ref"] = ref_s / model_s;
}
BENCHMARK(BM_CrossDense)
    ->ArgNames({"dcn0_concat1", "batch"})
    ->ArgsProduct({{0, 1}, {128, 1024}})
    ->Unit(benchmark::kMillisecond);

void BM_DlrmDense(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const DlrmShape shape = CriteoShape();
  auto model = DlrmDense::Create(shape, batch, 1).value();
  std::vector<float> dense(batch * shape.num_dense, 0.5f);
  std::vector<float> emb(batch * model->embedding_width(), 0.01f);
  std::vector<float> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<float>(i % 2);
  std::vector<float> d_emb(emb.size());
  auto run = [&] {
    benchmark::DoNotOptimize(model->ForwardBackward(batch, dense.data(), emb.data(),
                                                    labels.data(), 1.0f / batch, d_emb.data()));
  };
  for (auto _ : state) run();

  // The reference GEMMs.
  const auto layers = Layers(shape);
  std::vector<Mat> x, w, y, dy, dx, dw;
  for (auto [in, out] : layers) {
    x.push_back(Mat::Constant(batch, in, 0.1f));
    w.push_back(Mat::Constant(in, out, 0.01f));
    y.push_back(Mat(batch, out));
    dy.push_back(Mat::Constant(batch, out, 0.1f));
    dx.push_back(Mat(batch, in));
    dw.push_back(Mat(in, out));
  }
  const int f1 = static_cast<int>(shape.feature_dims.size()) + 1;
  const int d = shape.bottom.back();
  Mat z = Mat::Constant(f1, d, 0.1f), s(f1, f1), ds = Mat::Constant(f1, f1, 0.1f), dz(f1, d);
  auto reference = [&] {
    for (size_t l = 0; l < layers.size(); ++l) {
      y[l].noalias() = x[l] * w[l];
      dx[l].noalias() = dy[l] * w[l].transpose();
      dw[l].noalias() = x[l].transpose() * dy[l];
    }
    for (int64_t i = 0; i < batch; ++i) {
      s.noalias() = z * z.transpose();
      dz.noalias() = ds * z;
    }
    benchmark::ClobberMemory();
  };
  double flops = 4.0 * batch * f1 * f1 * d;
  for (auto [in, out] : layers) flops += 6.0 * batch * in * out;
  const int reps = std::max<int>(1, static_cast<int>(state.iterations() / 5));
  const double model_s = SecondsPerCall(reps, run);
  const double ref_s = SecondsPerCall(reps, reference);
  state.counters["GFLOPs"] = flops / model_s * 1e-9;
  state.counters["ref_GFLOPs"] = flops / ref_s * 1e-9;
  state.counters["of_ref"] = ref_s / model_s;
}
BENCHMARK(BM_DlrmDense)->Arg(128)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lemrt::device

BENCHMARK_MAIN();
