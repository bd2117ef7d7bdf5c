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

// The packed layout: sample b's vector i at data + (b * n + i) * d.
template <typename T>
class PackedVectors {
 public:
  PackedVectors(T* data, int n, int d) : stride_(n, int64_t{n} * d) {
    for (int i = 0; i < n; ++i) base_.push_back(data + int64_t{i} * d);
  }
  InteractionVectors<T> get() const { return {base_.data(), stride_.data()}; }

 private:
  std::vector<T*> base_;
  std::vector<int64_t> stride_;
};

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
  // n = 9, 16, 17, 27: whole blocks of 8 pairs and a remainder.
  for (int n : {1, 2, 5, 9, 16, 17, 27}) {
    const int64_t batch = 4;
    const DotInteraction interaction(n, d);
    const std::vector<float> in = RandomVector(batch * n * d, 7);
    std::vector<float> out(batch * interaction.output_width(), -9.0f);
    interaction.Forward(0, batch, PackedVectors<const float>(in.data(), n, d).get(), out.data());
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
  for (int n : {1, 2, 4, 9, 27}) {
    const int64_t batch = 3;
    const DotInteraction interaction(n, d);
    const std::vector<float> in = RandomVector(batch * n * d, 10);
    const std::vector<float> g = RandomVector(batch * interaction.output_width(), 11);
    std::vector<float> d_in(in.size(), 55.0f);  // Must be overwritten.
    interaction.Backward(0, batch, PackedVectors<const float>(in.data(), n, d).get(), g.data(),
                         PackedVectors<float>(d_in.data(), n, d).get());
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
      interaction.Backward(0, batch, PackedVectors<const float>(in.data(), n, d).get(), c.data(),
                           PackedVectors<float>(d_in.data(), n, d).get());
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
  interaction.Forward(0, 0, {}, nullptr);
  interaction.Backward(5, 5, {}, nullptr, {});
}

// Vectors in buffers of their own (vector 0 in a [batch x d] buffer, the
// others as columns of a wider buffer, as DlrmDense passes the bottom MLP's
// output and the embeddings) give the packed layout's bits, sample by
// sample, and a range [begin, end) touches only its samples' rows.
TEST_P(DotInteractionWidthTest, StridedVectorsMatchPacked) {
  const int d = GetParam();
  const int n = 11;
  const int64_t batch = 5, begin = 1, end = 4;
  const int64_t wide = int64_t{n - 1} * d + 3;  // padding after the columns
  const DotInteraction interaction(n, d);
  const std::vector<float> packed = RandomVector(batch * n * d, 12);
  const std::vector<float> g = RandomVector(batch * interaction.output_width(), 13);
  std::vector<float> first(batch * d), rest(batch * wide, 0.0f);
  for (int64_t b = 0; b < batch; ++b) {
    for (int k = 0; k < d; ++k) first[b * d + k] = packed[b * n * d + k];
    for (int64_t k = 0; k < int64_t{n - 1} * d; ++k) rest[b * wide + k] = packed[b * n * d + d + k];
  }
  std::vector<const float*> base = {first.data()};
  std::vector<int64_t> stride = {d};
  for (int i = 1; i < n; ++i) {
    base.push_back(rest.data() + int64_t{i - 1} * d);
    stride.push_back(wide);
  }
  const InteractionVectors<const float> strided{base.data(), stride.data()};
  const PackedVectors<const float> packed_in(packed.data(), n, d);

  std::vector<float> out_packed(batch * interaction.output_width(), 0.0f);
  std::vector<float> out_strided(out_packed.size(), -7.0f);
  interaction.Forward(0, batch, packed_in.get(), out_packed.data());
  interaction.Forward(begin, end, strided, out_strided.data());
  for (int64_t b = 0; b < batch; ++b) {
    for (int o = 0; o < interaction.output_width(); ++o) {
      const size_t k = b * interaction.output_width() + o;
      if (b >= begin && b < end) {
        ASSERT_EQ(out_strided[k], out_packed[k]) << "sample " << b << " output " << o;
      } else {
        ASSERT_EQ(out_strided[k], -7.0f) << "sample " << b << " outside the range was written";
      }
    }
  }

  std::vector<float> d_packed(packed.size(), 0.0f);
  std::vector<float> d_first(first.size(), -7.0f), d_rest(rest.size(), -7.0f);
  std::vector<float*> d_base = {d_first.data()};
  for (int i = 1; i < n; ++i) d_base.push_back(d_rest.data() + int64_t{i - 1} * d);
  interaction.Backward(0, batch, packed_in.get(), g.data(),
                       PackedVectors<float>(d_packed.data(), n, d).get());
  interaction.Backward(begin, end, strided, g.data(), {d_base.data(), stride.data()});
  for (int64_t b = 0; b < batch; ++b) {
    const bool in_range = b >= begin && b < end;
    for (int k = 0; k < d; ++k) {
      ASSERT_EQ(d_first[b * d + k], in_range ? d_packed[b * n * d + k] : -7.0f)
          << "sample " << b << " d z_0[" << k << "]";
    }
    for (int64_t k = 0; k < wide; ++k) {
      const bool column = k < int64_t{n - 1} * d;
      ASSERT_EQ(d_rest[b * wide + k], in_range && column ? d_packed[b * n * d + d + k] : -7.0f)
          << "sample " << b << " column " << k;
    }
  }
}

}  // namespace
}  // namespace lemrt::device
