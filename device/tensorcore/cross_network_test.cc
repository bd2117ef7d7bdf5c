#include "device/tensorcore/cross_network.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "device/tensorcore/gradient_check_test_util.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::ExpectGradientMatches;
using test_util::FloatSumErrorBound;
using test_util::NearestBf16;
using test_util::RandomVector;

// The cross layers as plain loops in double precision, straight from the
// formula in cross_network.h.
std::vector<double> ReferenceForward(const CrossNetwork& net, const std::vector<float>& params,
                                     int64_t batch, const std::vector<float>& x0) {
  const int w = net.width();
  const int r = net.shape().low_rank;
  std::vector<double> x(x0.begin(), x0.end());
  for (int l = 0; l < net.num_layers(); ++l) {
    const CrossNetwork::Layer& layer = net.layer(l);
    std::vector<double> next(x.size());
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<double> t(r);
      for (int j = 0; j < r; ++j) {
        for (int i = 0; i < w; ++i) t[j] += x[b * w + i] * params[layer.v_offset + i * r + j];
      }
      for (int o = 0; o < w; ++o) {
        double a = params[layer.bias_offset + o];
        if (r > 0) {
          for (int j = 0; j < r; ++j) a += t[j] * params[layer.u_offset + j * w + o];
        } else {
          for (int i = 0; i < w; ++i) a += x[b * w + i] * params[layer.v_offset + i * w + o];
        }
        next[b * w + o] = x0[b * w + o] * a + x[b * w + o];
      }
    }
    x = std::move(next);
  }
  return x;
}

struct Case {
  int width, layers, rank;
};

class CrossNetworkTest : public ::testing::TestWithParam<Case> {};

TEST_P(CrossNetworkTest, LayoutAndSizes) {
  const Case c = GetParam();
  const CrossNetworkShape shape{.width = c.width, .num_layers = c.layers, .low_rank = c.rank};
  CrossNetwork net(shape, 4);
  const int64_t per_layer = c.rank > 0 ? 2 * c.width * c.rank + c.width : c.width * (c.width + 1);
  EXPECT_EQ(net.num_params(), per_layer * c.layers);
  EXPECT_EQ(CrossNetwork::NumParams(shape), net.num_params());
  EXPECT_EQ(net.layer(c.layers - 1).bias_offset + c.width, net.num_params());
  if (c.rank > 0) {
    EXPECT_EQ(net.layer(0).u_offset, int64_t{c.width} * c.rank);
  } else {
    EXPECT_EQ(net.layer(0).u_offset, -1);
  }
}

TEST_P(CrossNetworkTest, ForwardMatchesPlainLoops) {
  const Case c = GetParam();
  const int64_t batch = 7;
  CrossNetwork net({.width = c.width, .num_layers = c.layers, .low_rank = c.rank}, 8);
  const std::vector<float> params = RandomVector(net.num_params(), 3, -0.5f, 0.5f);
  const std::vector<float> x0 = RandomVector(batch * c.width, 4);
  net.Forward(params, batch, x0.data());
  const std::vector<double> ref = ReferenceForward(net, params, batch, x0);
  for (int64_t i = 0; i < batch * c.width; ++i) {
    EXPECT_NEAR(net.output()[i], ref[i], 1e-5 * (1 + std::abs(ref[i]))) << i;
  }
  // A batch of 0 rows runs.
  net.Forward(params, 0, x0.data());
}

// The analytic gradients of the float kernel against central differences of
// the double-precision reference (gradient_check_test_util.h), for a loss
// sum_i c_i x_L,i with random c: every parameter and every x_0 coordinate.
TEST_P(CrossNetworkTest, GradientsMatchFiniteDifferencesOfTheReference) {
  const Case c = GetParam();
  const int64_t batch = 3;
  CrossNetwork net({.width = c.width, .num_layers = c.layers, .low_rank = c.rank}, batch);
  std::vector<float> params = RandomVector(net.num_params(), 5, -0.5f, 0.5f);
  std::vector<float> x0 = RandomVector(batch * c.width, 6);
  const std::vector<float> coef = RandomVector(batch * c.width, 7);
  auto loss = [&] {
    const std::vector<double> out = ReferenceForward(net, params, batch, x0);
    double sum = 0;
    for (size_t i = 0; i < out.size(); ++i) sum += coef[i] * out[i];
    return sum;
  };
  std::vector<float> grads(net.num_params(), -1.0f), d_x0(x0.size(), -1.0f);
  net.Forward(params, batch, x0.data());
  net.Backward(params, batch, x0.data(), coef.data(), grads, d_x0.data());
  ExpectGradientMatches(params, grads, loss, "params");
  ExpectGradientMatches(x0, d_x0, loss, "x0");
}

INSTANTIATE_TEST_SUITE_P(Shapes, CrossNetworkTest,
                         ::testing::Values(Case{6, 1, 2}, Case{9, 3, 4}, Case{5, 2, 0},
                                           Case{17, 2, 1}, Case{4, 3, 8}));

// `n` floats of magnitude in [0.5, 1) with random signs and all 24 bits
// (rounding to bf16 changes almost every one).
// Rounded to bf16 they are multiples of 2^-8, so sums of up to 255 products
// of two are multiples of 2^-16 below 2^8: exact in fp32 in any order.
std::vector<float> HalfToOne(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> magnitude(0.5f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = (gen() % 2 == 0 ? 1.0f : -1.0f) * magnitude(gen);
  return v;
}

// One bf16 cross layer (x_1 = x_0 * (x_0 V U + b) + x_0, or full rank
// x_0 * (x_0 W + b) + x_0) forward and backward against a plain reference of
// the bf16-rounded operands summed in double: every product of Forward and
// Backward rounds both operands (gemm.h), the rest is fp32. Tolerances are
// those of fp32 sums (FloatSumErrorBound); the same layer in fp32 is far
// outside them (the rounding shows). The operands are HalfToOne, so the
// low-rank layer's inner products t = x_0 V and dt = da U^T (|da| in
// [0.25, 1): multiples of 2^-17 below 2^7 for width < 128) are exact in fp32
// and the reference rounds the same t and dt as the layer. The bits do not
// depend on the team.
TEST(CrossNetworkBf16Test, LayerMatchesTheRoundedReference) {
  if (!CheckBf16Products().ok()) {
    GTEST_SKIP() << CheckBf16Products();
  }
  struct Bf16Case {
    int width, rank;
    int64_t batch;
  };
  for (const Bf16Case c : {Bf16Case{64, 8, 300}, Bf16Case{48, 0, 200}, Bf16Case{100, 3, 130},
                           Bf16Case{5, 2, 1}, Bf16Case{5, 0, 0}}) {
    const int w = c.width, r = c.rank;
    const int64_t batch = c.batch;
    const CrossNetworkShape shape{
        .width = w, .num_layers = 1, .low_rank = r, .precision = GemmPrecision::kBf16};
    CrossNetworkShape shape32 = shape;
    shape32.precision = GemmPrecision::kFp32;
    ThreadTeam team(3);
    CrossNetwork net(shape, batch, &team);
    CrossNetwork fp32(shape32, batch);
    const CrossNetwork::Layer& layer = net.layer(0);
    // V, U (or W) HalfToOne; the bias (added in fp32) anything.
    std::vector<float> params = HalfToOne(net.num_params(), 11);
    const std::vector<float> bias = RandomVector(w, 12);
    std::copy(bias.begin(), bias.end(), params.begin() + layer.bias_offset);
    const std::vector<float> x0 = HalfToOne(batch * w, 13);
    const std::vector<float> g = HalfToOne(batch * w, 14);  // dLoss/d x_1
    std::vector<float> grads(net.num_params()), d_x0(batch * w);
    std::vector<float> grads32(grads.size()), d_x032(d_x0.size());
    net.Forward(params, batch, x0.data());
    const std::vector<float> y(net.output(), net.output() + batch * w);
    net.Backward(params, batch, x0.data(), g.data(), grads, d_x0.data());
    fp32.Forward(params, batch, x0.data());
    const std::vector<float> y32(fp32.output(), fp32.output() + batch * w);
    fp32.Backward(params, batch, x0.data(), g.data(), grads32, d_x032.data());

    auto rounded = [](float v) -> double { return NearestBf16(v); };
    auto p = [&](int64_t at) -> double { return rounded(params[at]); };
    // Row b of x_0 V (exact, as the layer has it; see above), [batch x r].
    std::vector<double> t(batch * r);
    for (int64_t b = 0; b < batch; ++b) {
      for (int j = 0; j < r; ++j) {
        for (int i = 0; i < w; ++i) {
          t[b * r + j] += rounded(x0[b * w + i]) * p(layer.v_offset + i * r + j);
        }
        ASSERT_EQ(static_cast<float>(t[b * r + j]), t[b * r + j]);
      }
    }
    // a = x V U + b (or x W + b), with the magnitude of its terms.
    std::vector<double> a(batch * w), a_abs(batch * w);
    for (int64_t b = 0; b < batch; ++b) {
      for (int o = 0; o < w; ++o) {
        double sum = bias[o], abs_sum = std::abs(bias[o]);
        for (int k = 0; k < (r > 0 ? r : w); ++k) {
          const double term =
              r > 0 ? rounded(static_cast<float>(t[b * r + k])) * p(layer.u_offset + k * w + o)
                    : rounded(x0[b * w + k]) * p(layer.v_offset + k * w + o);
          sum += term;
          abs_sum += std::abs(term);
        }
        a[b * w + o] = sum;
        a_abs[b * w + o] = abs_sum;
      }
    }
    double off_fp32 = 0;  // the fp32 layer's largest error in tolerances
    auto expect = [&](float got, float got32, double want, double tolerance, const char* what) {
      EXPECT_NEAR(got, want, tolerance) << what << ", width " << w << " rank " << r;
      off_fp32 = std::max(off_fp32, std::abs(got32 - want) / tolerance);
    };
    // The longest chain of fp32 roundings: a's sum (k + 1 terms), then the
    // element-wise products and sums (3).
    const int chain = (r > 0 ? r : w) + 4;
    for (int64_t i = 0; i < batch * w; ++i) {
      const double x = x0[i];
      expect(y[i], y32[i], x * a[i] + x,
             FloatSumErrorBound(chain, std::abs(x) * a_abs[i] + std::abs(x)), "x_1");
    }
    // Backward: da = g * x_0 (an fp32 product, then rounded for the GEMMs).
    std::vector<float> da(batch * w);
    for (int64_t i = 0; i < batch * w; ++i) da[i] = g[i] * x0[i];
    for (int o = 0; o < w; ++o) {
      double sum = 0, abs_sum = 0;
      for (int64_t b = 0; b < batch; ++b) {
        sum += da[b * w + o];
        abs_sum += std::abs(da[b * w + o]);
      }
      const int64_t at = layer.bias_offset + o;
      expect(grads[at], grads32[at], sum, FloatSumErrorBound(batch + 1, abs_sum), "db");
    }
    // dX = (the rows of) A^T B over the batch, for the weight gradients.
    auto expect_weight_grad = [&](int64_t offset, int rows, int cols, auto lhs, auto rhs,
                                  const char* what) {
      for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < cols; ++j) {
          double sum = 0, abs_sum = 0;
          for (int64_t b = 0; b < batch; ++b) {
            sum += lhs(b, i) * rhs(b, j);
            abs_sum += std::abs(lhs(b, i) * rhs(b, j));
          }
          const int64_t at = offset + int64_t{i} * cols + j;
          expect(grads[at], grads32[at], sum, FloatSumErrorBound(batch + 1, abs_sum), what);
        }
      }
    };
    auto x0_r = [&](int64_t b, int i) { return rounded(x0[b * w + i]); };
    auto da_r = [&](int64_t b, int o) { return rounded(da[b * w + o]); };
    // dx = d_x1's product term: dt V^T (dt = da U^T, exact) or da W^T.
    std::vector<double> dx(batch * w), dx_abs(batch * w);
    if (r > 0) {
      std::vector<double> dt(batch * r);
      for (int64_t b = 0; b < batch; ++b) {
        for (int j = 0; j < r; ++j) {
          for (int o = 0; o < w; ++o) dt[b * r + j] += da_r(b, o) * p(layer.u_offset + j * w + o);
          ASSERT_EQ(static_cast<float>(dt[b * r + j]), dt[b * r + j]);
        }
      }
      auto t_r = [&](int64_t b, int j) { return rounded(static_cast<float>(t[b * r + j])); };
      auto dt_r = [&](int64_t b, int j) { return rounded(static_cast<float>(dt[b * r + j])); };
      expect_weight_grad(layer.u_offset, r, w, t_r, da_r, "dU");
      expect_weight_grad(layer.v_offset, w, r, x0_r, dt_r, "dV");
      for (int64_t b = 0; b < batch; ++b) {
        for (int i = 0; i < w; ++i) {
          for (int j = 0; j < r; ++j) {
            const double term = dt_r(b, j) * p(layer.v_offset + i * r + j);
            dx[b * w + i] += term;
            dx_abs[b * w + i] += std::abs(term);
          }
        }
      }
    } else {
      expect_weight_grad(layer.v_offset, w, w, x0_r, da_r, "dW");
      for (int64_t b = 0; b < batch; ++b) {
        for (int i = 0; i < w; ++i) {
          for (int o = 0; o < w; ++o) {
            const double term = da_r(b, o) * p(layer.v_offset + i * w + o);
            dx[b * w + i] += term;
            dx_abs[b * w + i] += std::abs(term);
          }
        }
      }
    }
    // d_x0 = g * a (x_0's direct term) + dx + g (the residual).
    for (int64_t i = 0; i < batch * w; ++i) {
      const double gi = g[i];
      expect(d_x0[i], d_x032[i], gi * a[i] + dx[i] + gi,
             FloatSumErrorBound(chain, std::abs(gi) * a_abs[i] + dx_abs[i] + std::abs(gi)), "d_x0");
    }
    if (batch >= 100) {
      EXPECT_GT(off_fp32, 10.0) << "the fp32 layer is as close to the bf16 reference";
    }
    // The same bits on the calling thread alone.
    CrossNetwork alone(shape, batch);
    std::vector<float> grads1(grads.size()), d_x01(d_x0.size());
    alone.Forward(params, batch, x0.data());
    EXPECT_TRUE(std::equal(y.begin(), y.end(), alone.output()));
    alone.Backward(params, batch, x0.data(), g.data(), grads1, d_x01.data());
    EXPECT_EQ(grads1, grads);
    EXPECT_EQ(d_x01, d_x0);
  }
}

// Two layers form three-way products: with x_l V U = 0 except a planted
// path, x_2 holds x0_a * x0_b * x0_c terms (the crosses a dot interaction
// cannot form).
TEST(CrossNetworkTest, TwoLayersFormThreeWayProducts) {
  CrossNetwork net({.width = 3, .num_layers = 2, .low_rank = 0}, 1);
  std::vector<float> params(net.num_params(), 0.0f);
  // Layer 0: a_0[2] = x0[1]  ->  x_1[2] = x0[2] x0[1] + x0[2].
  params[net.layer(0).v_offset + 1 * 3 + 2] = 1.0f;
  // Layer 1: a_1[0] = x_1[2]  ->  x_2[0] = x0[0] (x0[2] x0[1] + x0[2]) + x0[0].
  params[net.layer(1).v_offset + 2 * 3 + 0] = 1.0f;
  const std::vector<float> x0 = {2.0f, 3.0f, 5.0f};
  net.Forward(params, 1, x0.data());
  EXPECT_FLOAT_EQ(net.output()[0], 2.0f * (5.0f * 3.0f + 5.0f) + 2.0f);
  EXPECT_FLOAT_EQ(net.output()[1], 3.0f);
  EXPECT_FLOAT_EQ(net.output()[2], 5.0f * 3.0f + 5.0f);
}

}  // namespace
}  // namespace lemrt::device
