#include "device/tensorcore/interaction.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "device/tensorcore/gradient_check_test_util.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::ExpectGradientMatches;
using test_util::FloatSumErrorBound;
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

// The exact gradient of sum_o g[o] * out[o] for sample b, in double:
// d z_i = [i == 0] g[0:d] + sum_{j != i} g_ij z_j. Also returns, per
// coordinate, the sum of the terms' absolute values (for the rounding bound).
void ReferenceBackward(int n, int d, int64_t batch, const std::vector<float>& in,
                       const std::vector<float>& g, std::vector<double>* d_in,
                       std::vector<double>* abs_terms) {
  const int out_width = d + n * (n - 1) / 2;
  d_in->assign(in.size(), 0.0);
  abs_terms->assign(in.size(), 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    const float* z = in.data() + b * n * d;
    const float* gb = g.data() + b * out_width;
    double* dz = d_in->data() + b * n * d;
    double* abs_dz = abs_terms->data() + b * n * d;
    for (int k = 0; k < d; ++k) {
      dz[k] = gb[k];
      abs_dz[k] = std::abs(double{gb[k]});
    }
    int pair = d;
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j, ++pair) {
        for (int k = 0; k < d; ++k) {
          dz[i * d + k] += double{gb[pair]} * z[j * d + k];
          dz[j * d + k] += double{gb[pair]} * z[i * d + k];
          abs_dz[i * d + k] += std::abs(double{gb[pair]} * z[j * d + k]);
          abs_dz[j * d + k] += std::abs(double{gb[pair]} * z[i * d + k]);
        }
      }
    }
  }
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
    for (int64_t b = 0; b < batch; ++b) {
      const float* z = in.data() + b * n * d;
      const int64_t o = b * interaction.output_width();
      for (int k = 0; k < d; ++k) EXPECT_EQ(out[o + k], z[k]) << "n=" << n;
      int64_t pair = o + d;
      for (int i = 0; i < n; ++i) {
        for (int j = i + 1; j < n; ++j, ++pair) {
          double abs_sum = 0.0;
          for (int k = 0; k < d; ++k) abs_sum += std::abs(double{z[i * d + k]} * z[j * d + k]);
          // A d-term float dot product: one rounding per product, d - 1 in the sum.
          EXPECT_NEAR(out[pair], want[pair], FloatSumErrorBound(d, abs_sum))
              << "n=" << n << " pair output " << pair;
        }
      }
    }
  }
}

// The analytic gradient against the exact one (double), within the rounding
// bound of the kernel's float arithmetic: sound on every instruction set.
TEST_P(DotInteractionWidthTest, BackwardMatchesDoubleReference) {
  const int d = GetParam();
  for (int n : {1, 2, 4, 27}) {
    const int64_t batch = 3;
    const DotInteraction interaction(n, d);
    const std::vector<float> in = RandomVector(batch * n * d, 10);
    const std::vector<float> g = RandomVector(batch * interaction.output_width(), 11);
    std::vector<float> d_in(in.size(), 55.0f);  // Must be overwritten.
    interaction.Backward(batch, in.data(), g.data(), d_in.data());
    std::vector<double> want, abs_terms;
    ReferenceBackward(n, d, batch, in, g, &want, &abs_terms);
    int failures = 0;
    for (size_t i = 0; i < d_in.size(); ++i) {
      // Each coordinate sums at most n terms (g[k] and n - 1 products).
      const double bound = FloatSumErrorBound(n + 1, abs_terms[i]);
      if (std::abs(d_in[i] - want[i]) > bound && ++failures <= 10) {
        ADD_FAILURE() << "n=" << n << " d_in[" << i << "] = " << d_in[i] << ", exact "
                      << want[i] << ", rounding bound " << bound;
      }
    }
    EXPECT_EQ(failures, 0) << "n=" << n;
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
      // The loss from the double reference (gradient_check_test_util.h).
      auto loss = [&] {
        const std::vector<double> out = ReferenceForward(n, d, batch, in);
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
