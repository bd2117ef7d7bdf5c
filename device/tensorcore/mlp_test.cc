#include "device/tensorcore/mlp.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "device/tensorcore/gradient_check_test_util.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::ExpectGradientMatches;
using test_util::RandomVector;

// Plain triple-loop forward in double, following the layout in mlp.h.
std::vector<double> ReferenceForward(const Mlp& mlp, bool relu_last,
                                     const std::vector<float>& params,
                                     int64_t batch,
                                     const std::vector<float>& in) {
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
      }
    }
    x = std::move(y);
  }
  return x;
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

INSTANTIATE_TEST_SUITE_P(ReluLast, MlpTest, ::testing::Bool());

}  // namespace
}  // namespace lemrt::device
