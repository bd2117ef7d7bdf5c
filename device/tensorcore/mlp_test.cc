#include "device/tensorcore/mlp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "base/bf16.h"
#include "device/tensorcore/gemm.h"
#include "device/tensorcore/gradient_check_test_util.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::ExpectGradientMatches;
using test_util::RandomVector;

// Plain triple-loop forward in double, following the layout in mlp.h; with
// `dropout`, hidden layer l's unit o of row b is kept by DropoutKeeps(*dropout,
// dropout_layer + l, b, o, p) and scaled by 1 / (1 - p).
std::vector<double> ReferenceForward(const Mlp& mlp, bool relu_last,
                                     const std::vector<float>& params,
                                     int64_t batch,
                                     const std::vector<float>& in,
                                     const DropoutKey* dropout = nullptr, float p = 0.0f,
                                     int dropout_layer = 0) {
  std::vector<double> x(in.begin(), in.end());
  for (int l = 0; l < mlp.num_layers(); ++l) {
    const Mlp::Layer& layer = mlp.layer(l);
    std::vector<double> y(static_cast<size_t>(batch * layer.out));
    for (int64_t b = 0; b < batch; ++b) {
      for (int o = 0; o < layer.out; ++o) {
        double sum = params[layer.bias_offset + o];
        for (int i = 0; i < layer.in; ++i) {
          sum += x[b * layer.in + i] *
                 params[layer.weight_offset + i * layer.out + o];
        }
        const bool relu = l + 1 < mlp.num_layers() || relu_last;
        y[b * layer.out + o] = relu ? std::max(sum, 0.0) : sum;
        if (dropout != nullptr && l + 1 < mlp.num_layers()) {
          y[b * layer.out + o] = DropoutKeeps(*dropout, dropout_layer + l, b, o, p)
                                     ? y[b * layer.out + o] / (1.0 - static_cast<double>(p))
                                     : 0.0;
        }
      }
    }
    x = std::move(y);
  }
  return x;
}

double RoundedToBf16(float x) { return base::Bf16ToFloat(base::FloatToBf16Nearest(x)); }

// One bf16 layer (y = ReLU(x W + b)) forward and backward against a plain
// reference of the rounded operands summed in double: y, dW = x^T dz,
// db = column sums of dz, dx = dz W^T, with dz = dy where y > 0. Tolerances
// are those of fp32 sums of `k` terms; the same layer in fp32 is farther
// from the reference than that (the rounding shows), and the bits do not
// depend on the team.
TEST(MlpBf16Test, LayerMatchesTheRoundedReference) {
  if (!CheckBf16Products().ok()) {
    GTEST_SKIP() << CheckBf16Products();
  }
  struct Case {
    int in, out;
    int64_t batch;
  };
  for (const Case c : {Case{37, 19, 300}, Case{256, 128, 400}, Case{5, 3, 1}, Case{5, 3, 0}}) {
    const MlpShape shape{.widths = {c.in, c.out}, .precision = GemmPrecision::kBf16};
    ThreadTeam team(3);
    Mlp mlp(shape, c.batch, &team);
    Mlp fp32(WithPrecision(shape, GemmPrecision::kFp32), c.batch);
    const std::vector<float> params = RandomVector(mlp.num_params(), 3);
    const std::vector<float> x = RandomVector(c.batch * c.in, 4);
    const std::vector<float> dy = RandomVector(c.batch * c.out, 5);
    const int64_t batch = c.batch;
    std::vector<float> y(batch * c.out), grads(mlp.num_params()), dx(batch * c.in);
    std::vector<float> y32(y.size()), grads32(grads.size()), dx32(dx.size());
    mlp.Forward(params, batch, x.data(), y.data());
    mlp.Backward(params, batch, x.data(), dy.data(), grads, dx.data());
    fp32.Forward(params, batch, x.data(), y32.data());
    fp32.Backward(params, batch, x.data(), dy.data(), grads32, dx32.data());
    const Mlp::Layer& layer = mlp.layer(0);
    auto w = [&](int i, int o) {
      return RoundedToBf16(params[layer.weight_offset + i * c.out + o]);
    };
    // The ReLU's mask from the layer's own output: a sum at 0 may fall either side.
    auto dz = [&](int64_t b, int o) -> float {
      return y[b * c.out + o] > 0 ? dy[b * c.out + o] : 0;
    };
    double off_fp32 = 0;
    auto expect = [&](float got, float got32, double want, int64_t k, const char* what) {
      const double tolerance = 2e-6 * static_cast<double>(1 + k);
      EXPECT_NEAR(got, want, tolerance)
          << what << " in " << c.in << "x" << c.out << " batch " << batch;
      off_fp32 = std::max(off_fp32, std::abs(static_cast<double>(got32) - want) / tolerance);
    };
    for (int64_t b = 0; b < batch; ++b) {
      for (int o = 0; o < c.out; ++o) {
        double sum = params[layer.bias_offset + o];
        for (int i = 0; i < c.in; ++i) sum += RoundedToBf16(x[b * c.in + i]) * w(i, o);
        expect(y[b * c.out + o], y32[b * c.out + o], std::max(sum, 0.0), c.in, "y");
      }
      for (int i = 0; i < c.in; ++i) {
        double sum = 0;
        for (int o = 0; o < c.out; ++o) sum += RoundedToBf16(dz(b, o)) * w(i, o);
        expect(dx[b * c.in + i], dx32[b * c.in + i], sum, c.out, "dx");
      }
    }
    for (int i = 0; i < c.in; ++i) {
      for (int o = 0; o < c.out; ++o) {
        double sum = 0;
        for (int64_t b = 0; b < batch; ++b) {
          sum += RoundedToBf16(x[b * c.in + i]) * RoundedToBf16(dz(b, o));
        }
        const int64_t at = layer.weight_offset + i * c.out + o;
        expect(grads[at], grads32[at], sum, batch, "dW");
      }
    }
    for (int o = 0; o < c.out; ++o) {
      double sum = 0;
      for (int64_t b = 0; b < batch; ++b) sum += dz(b, o);
      expect(grads[layer.bias_offset + o], grads[layer.bias_offset + o], sum, batch, "db");
    }
    if (batch >= 100) {
      EXPECT_GT(off_fp32, 5.0) << "the fp32 layer is as close to the bf16 reference";
    }
    // The same bits on the calling thread alone.
    Mlp alone(shape, c.batch);
    std::vector<float> y1(y.size()), grads1(grads.size()), dx1(dx.size());
    alone.Forward(params, batch, x.data(), y1.data());
    alone.Backward(params, batch, x.data(), dy.data(), grads1, dx1.data());
    EXPECT_EQ(y1, y);
    EXPECT_EQ(grads1, grads);
    EXPECT_EQ(dx1, dx);
  }
}

// A bf16 stack is its layers chained, bit for bit: three layers against three
// one-layer Mlps fed each other's outputs and deltas, and again with new
// params, inputs and deltas on the same stack (what its Forward rounds for
// Backward must be the round's own).
TEST(MlpBf16Test, StackIsItsLayersChained) {
  if (!CheckBf16Products().ok()) {
    GTEST_SKIP() << CheckBf16Products();
  }
  const std::vector<int> widths = {48, 300, 130, 20};
  const int64_t batch = 260;
  ThreadTeam team(3);
  Mlp stack(MlpShape{.widths = widths, .precision = GemmPrecision::kBf16}, batch, &team);
  for (uint32_t round = 0; round < 2; ++round) {
    // New layers each round: nothing of an earlier round to reuse.
    std::vector<std::unique_ptr<Mlp>> layers;
    for (size_t l = 1; l < widths.size(); ++l) {
      layers.push_back(std::make_unique<Mlp>(
          MlpShape{.widths = {widths[l - 1], widths[l]}, .precision = GemmPrecision::kBf16},
          batch, &team));
    }
    const std::vector<float> params = RandomVector(stack.num_params(), 10 + round);
    const std::vector<float> x = RandomVector(batch * widths[0], 20 + round);
    const std::vector<float> dy = RandomVector(batch * widths.back(), 30 + round);
    std::vector<float> y(batch * widths.back()), grads(stack.num_params()), dx(batch * widths[0]);
    stack.Forward(params, batch, x.data(), y.data());
    stack.Backward(params, batch, x.data(), dy.data(), grads, dx.data());
    // Layer l's params are the stack's slice from its weight offset.
    auto slice = [&](const std::vector<float>& v, int l) {
      const int64_t at = stack.layer(l).weight_offset;
      return std::span<const float>(v).subspan(at, layers[l]->num_params());
    };
    std::vector<std::vector<float>> ins = {x};
    for (int l = 0; l < stack.num_layers(); ++l) {
      ins.emplace_back(batch * widths[l + 1]);
      layers[l]->Forward(slice(params, l), batch, ins[l].data(), ins[l + 1].data());
    }
    EXPECT_EQ(ins.back(), y) << "round " << round;
    std::vector<float> d = dy;
    for (int l = stack.num_layers() - 1; l >= 0; --l) {
      std::vector<float> layer_grads(layers[l]->num_params()), d_in(batch * widths[l]);
      layers[l]->Backward(slice(params, l), batch, ins[l].data(), d.data(), layer_grads,
                          d_in.data());
      const std::span<const float> got = slice(grads, l);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), layer_grads.begin()))
          << "layer " << l << " round " << round;
      d = std::move(d_in);
    }
    EXPECT_EQ(d, dx) << "round " << round;
  }
}

class MlpTest : public ::testing::TestWithParam<bool> {};

TEST_P(MlpTest, LayoutAndSizes) {
  Mlp mlp(MlpShape{.widths = {5, 7, 3}, .relu_last = GetParam()}, 4);
  EXPECT_EQ(mlp.num_params(), 5 * 7 + 7 + 7 * 3 + 3);
  EXPECT_EQ(Mlp::NumParams(std::vector<int>{5, 7, 3}), mlp.num_params());
  EXPECT_EQ(mlp.num_layers(), 2);
  EXPECT_EQ(mlp.in_width(), 5);
  EXPECT_EQ(mlp.out_width(), 3);
  EXPECT_EQ(mlp.layer(1).weight_offset, 5 * 7 + 7);
  EXPECT_EQ(mlp.layer(1).bias_offset, 5 * 7 + 7 + 7 * 3);
}

TEST_P(MlpTest, ForwardMatchesNaiveReference) {
  const bool relu_last = GetParam();
  const int64_t batch = 9;
  Mlp mlp(MlpShape{.widths = {6, 11, 8, 4}, .relu_last = relu_last}, 16);
  const std::vector<float> params = RandomVector(mlp.num_params(), 1);
  const std::vector<float> in = RandomVector(batch * 6, 2, -2.0f, 2.0f);
  std::vector<float> out(batch * 4, -7.0f);
  mlp.Forward(params, batch, in.data(), out.data());
  const std::vector<double> want =
      ReferenceForward(mlp, relu_last, params, batch, in);
  ASSERT_EQ(want.size(), out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_NEAR(out[i], want[i], 1e-5) << i;
    EXPECT_EQ(mlp.output()[i], out[i]) << i;
  }
}

// Loss = sum c .* output, so dLoss/d output = c. The finite differences
// differentiate the double reference (gradient_check_test_util.h).
void CheckGradients(bool relu_last, int64_t batch) {
  const int64_t max_batch = 8;
  Mlp mlp(MlpShape{.widths = {4, 6, 5, 3}, .relu_last = relu_last}, max_batch);
  std::vector<float> params = RandomVector(mlp.num_params(), 3);
  std::vector<float> in = RandomVector(batch * 4, 4, -2.0f, 2.0f);
  const std::vector<float> c = RandomVector(batch * 3, 5);
  auto loss = [&] {
    const std::vector<double> out = ReferenceForward(mlp, relu_last, params, batch, in);
    double sum = 0.0;
    for (int64_t i = 0; i < batch * 3; ++i) sum += c[i] * out[i];
    return sum;
  };
  mlp.Forward(params, batch, in.data(), nullptr);
  std::vector<float> grads(mlp.num_params(), 123.0f);  // Must be overwritten.
  std::vector<float> d_in(batch * 4, 456.0f);
  mlp.Backward(params, batch, in.data(), c.data(), grads, d_in.data());
  ExpectGradientMatches(params, grads, loss, "params");
  ExpectGradientMatches(in, d_in, loss, "d_in");

  // A second Backward overwrites rather than accumulates.
  mlp.Forward(params, batch, in.data(), nullptr);
  std::vector<float> again(grads.size(), -5.0f);
  mlp.Backward(params, batch, in.data(), c.data(), again, nullptr);
  EXPECT_EQ(again, grads);
}

TEST_P(MlpTest, GradientsMatchFiniteDifferences) {
  CheckGradients(GetParam(), 7);
}

TEST_P(MlpTest, BatchOfOne) { CheckGradients(GetParam(), 1); }

TEST_P(MlpTest, BatchOfZeroGivesZeroGradients) {
  Mlp mlp(MlpShape{.widths = {4, 6, 3}, .relu_last = GetParam()}, 8);
  const std::vector<float> params = RandomVector(mlp.num_params(), 6);
  mlp.Forward(params, 0, nullptr, nullptr);
  std::vector<float> grads(mlp.num_params(), 1.0f);
  mlp.Backward(params, 0, nullptr, nullptr, grads, nullptr);
  for (float g : grads) EXPECT_EQ(g, 0.0f);
}

TEST(MlpZeroMaxBatchTest, Works) {
  Mlp mlp(MlpShape{.widths = {2, 3}}, 0);
  const std::vector<float> params(mlp.num_params(), 0.5f);
  std::vector<float> grads(mlp.num_params(), 1.0f);
  mlp.Forward(params, 0, nullptr, nullptr);
  mlp.Backward(params, 0, nullptr, nullptr, grads, nullptr);
  for (float g : grads) EXPECT_EQ(g, 0.0f);
}

// Dropout in training: the forward equals the reference with the same masks,
// and the gradients are its derivatives (the masks are fixed by the key).
TEST_P(MlpTest, DropoutMatchesMaskedReferenceAndItsGradients) {
  const bool relu_last = GetParam();
  const int64_t batch = 7;
  const float p = 0.4f;
  const int dropout_layer = 10;
  const DropoutKey key{.seed = 5, .step = 17, .first_sample = 300};
  Mlp mlp(MlpShape{.widths = {4, 9, 8, 3}, .relu_last = relu_last, .dropout = p,
                   .dropout_layer = dropout_layer},
          8);
  std::vector<float> params = RandomVector(mlp.num_params(), 13);
  std::vector<float> in = RandomVector(batch * 4, 14, -2.0f, 2.0f);
  const std::vector<float> c = RandomVector(batch * 3, 15);
  std::vector<float> out(batch * 3);
  mlp.Forward(params, batch, in.data(), out.data(), &key);
  const std::vector<double> want =
      ReferenceForward(mlp, relu_last, params, batch, in, &key, p, dropout_layer);
  const std::vector<double> plain = ReferenceForward(mlp, relu_last, params, batch, in);
  double changed = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_NEAR(out[i], want[i], 1e-5) << i;
    changed += std::abs(want[i] - plain[i]);
  }
  EXPECT_GT(changed, 1e-3);  // the masks did drop units
  auto loss = [&] {
    const std::vector<double> o =
        ReferenceForward(mlp, relu_last, params, batch, in, &key, p, dropout_layer);
    double sum = 0.0;
    for (int64_t i = 0; i < batch * 3; ++i) sum += c[i] * o[i];
    return sum;
  };
  std::vector<float> grads(mlp.num_params());
  std::vector<float> d_in(batch * 4);
  mlp.Backward(params, batch, in.data(), c.data(), grads, d_in.data());
  ExpectGradientMatches(params, grads, loss, "params");
  ExpectGradientMatches(in, d_in, loss, "d_in");

  // Without a key (evaluation) the same Mlp computes the plain model, bit for
  // bit what an Mlp without dropout computes.
  Mlp no_dropout(MlpShape{.widths = {4, 9, 8, 3}, .relu_last = relu_last}, 8);
  std::vector<float> eval(batch * 3), eval_plain(batch * 3);
  mlp.Forward(params, batch, in.data(), eval.data());
  no_dropout.Forward(params, batch, in.data(), eval_plain.data(), &key);
  EXPECT_EQ(eval, eval_plain);
}

INSTANTIATE_TEST_SUITE_P(ReluLast, MlpTest, ::testing::Bool());

}  // namespace
}  // namespace lemrt::device
