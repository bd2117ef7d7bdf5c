#include "device/tensorcore/cross_network.h"

#include <cmath>
#include <vector>

#include "device/tensorcore/gradient_check_test_util.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::ExpectGradientMatches;
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
