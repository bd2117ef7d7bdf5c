#include "device/tensorcore/interaction.h"

#include <cstdint>
#include <string>
#include <vector>

#include "device/tensorcore/gradient_check_test_util.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::ExpectGradientMatches;
using test_util::RandomVector;

std::vector<double> ReferenceForward(int n, int d, int64_t batch,
                                     const std::vector<float>& in) {
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b) {
    const float* z = in.data() + b * n * d;
    for (int k = 0; k < d; ++k) out.push_back(z[k]);
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        double dot = 0.0;
        for (int k = 0; k < d; ++k) dot += double{z[i * d + k]} * z[j * d + k];
        out.push_back(dot);
      }
    }
  }
  return out;
}

TEST(DotInteractionTest, Widths) {
  const DotInteraction interaction(27, 16);
  EXPECT_EQ(interaction.num_pairs(), 351);
  EXPECT_EQ(interaction.input_width(), 27 * 16);
  EXPECT_EQ(interaction.output_width(), 367);
}

// Widths with a compile-time kernel (8, 16, ..., 128) and without (3, 5).
class DotInteractionWidthTest : public ::testing::TestWithParam<int> {};

TEST_P(DotInteractionWidthTest, ForwardMatchesNaiveReference) {
  const int d = GetParam();
  for (int n : {1, 2, 5}) {
    const int64_t batch = 4;
    const DotInteraction interaction(n, d);
    const std::vector<float> in = RandomVector(batch * n * d, 7);
    std::vector<float> out(batch * interaction.output_width(), -9.0f);
    interaction.Forward(batch, in.data(), out.data());
    const std::vector<double> want = ReferenceForward(n, d, batch, in);
    ASSERT_EQ(want.size(), out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_NEAR(out[i], want[i], 1e-5) << "n=" << n << " i=" << i;
    }
  }
}

TEST_P(DotInteractionWidthTest, BackwardMatchesFiniteDifferences) {
  const int d = GetParam();
  for (int n : {1, 4}) {
    for (int64_t batch : {1, 3}) {
      const DotInteraction interaction(n, d);
      std::vector<float> in = RandomVector(batch * n * d, 8);
      const std::vector<float> c =
          RandomVector(batch * interaction.output_width(), 9);
      std::vector<float> out(c.size());
      auto loss = [&] {
        interaction.Forward(batch, in.data(), out.data());
        double sum = 0.0;
        for (size_t i = 0; i < out.size(); ++i) sum += double{c[i]} * out[i];
        return sum;
      };
      std::vector<float> d_in(in.size(), 77.0f);  // Must be overwritten.
      interaction.Backward(batch, in.data(), c.data(), d_in.data());
      ExpectGradientMatches(
          in, d_in, loss,
          "d_in n=" + std::to_string(n) + " batch=" + std::to_string(batch));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Widths, DotInteractionWidthTest,
                         ::testing::Values(1, 3, 5, 8, 16, 32, 64, 128));

TEST(DotInteractionTest, EmptyBatch) {
  const DotInteraction interaction(3, 2);
  interaction.Forward(0, nullptr, nullptr);
  interaction.Backward(0, nullptr, nullptr, nullptr);
}

}  // namespace
}  // namespace lemrt::device
