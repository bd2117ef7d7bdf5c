// DlrmDense's embedding projections with bf16 products (model.dense_dtype:
// BF16) against a plain reference of the bf16-rounded operands: the model is
// built through CreateDenseModel and observed through its public outputs,
// with the layers around the projection set so that what reaches and leaves
// it is known exactly.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "device/tensorcore/dense_model.h"
#include "device/tensorcore/gemm.h"
#include "device/tensorcore/gradient_check_test_util.h"
#include "device/tensorcore/thread_team.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::FloatSumErrorBound;
using test_util::NearestBf16;
using test_util::RandomVector;

constexpr int kD = 8;     // bottom output width, the interaction's d
constexpr int kDim = 24;  // the one feature's width: projected (24 != d)
constexpr int64_t kBatch = 256;
// Parameter layout (dlrm_dense.h): | bottom W [d x d] | b [d] | P [dim x d] |
// top W [d + 1 x 1] | top b |; the top's input is [z_0, <z_0, z_1>].
constexpr int64_t kBottomBias = kD * kD;
constexpr int64_t kProjection = kBottomBias + kD;
constexpr int64_t kTopWeights = kProjection + kDim * kD;
constexpr int64_t kTopBias = kTopWeights + kD + 1;
// The top layer's weight of <z_0, z_1> (a bf16 number); its bias puts every
// logit below -20, so sigmoid(logit) - 1 is -1 in fp32 and d logit = -1.
constexpr float kPairWeight = 0x1p-4f;
constexpr float kTopBiasValue = -40.0f;

struct Outputs {
  std::vector<float> grads, d_emb, probs;
  // z_1 = emb P of rows [0, kSingleRows), each from a batch of that row
  // alone: there the bottom bias's gradient is -kPairWeight x z_1.
  std::vector<float> z1;
};
constexpr int64_t kSingleRows = 24;

// The model: bottom W = I and dense inputs that are bf16 numbers, so z_0 =
// fp32(dense + bottom b) exactly (b any float > 0, no ReLU cut); the top
// layer reads only <z_0, z_1> (kPairWeight), so d<z_0, z_1> = -kPairWeight
// and the interaction's backward gives the projection dz_1 = -kPairWeight x
// z_0 and the bottom MLP dz_0 = -kPairWeight x z_1, both exactly.
Outputs RunModel(GemmPrecision precision, const std::vector<float>& dense,
                 const std::vector<float>& emb, const std::vector<float>& bottom_bias,
                 const std::vector<float>& projection) {
  DenseModelSpec spec;
  spec.shape = {.num_dense = kD, .bottom = {kD}, .top = {1}, .feature_dims = {kDim}};
  spec.precision = precision;
  ThreadTeam team(3);
  auto created = CreateDenseModel(spec, kBatch, 1, &team);
  EXPECT_TRUE(created.ok()) << created.status();
  Outputs out;
  if (!created.ok()) return out;
  DenseModel& model = **created;
  EXPECT_EQ(model.num_params(), kTopBias + 1);
  std::span<float> p = model.params();
  std::fill(p.begin(), p.end(), 0.0f);
  for (int i = 0; i < kD; ++i) p[i * kD + i] = 1.0f;
  std::copy(bottom_bias.begin(), bottom_bias.end(), p.begin() + kBottomBias);
  std::copy(projection.begin(), projection.end(), p.begin() + kProjection);
  p[kTopWeights + kD] = kPairWeight;
  p[kTopBias] = kTopBiasValue;
  const std::vector<float> labels(kBatch, 1.0f);
  out.d_emb.resize(kBatch * kDim);
  model.ForwardBackward(kBatch, dense.data(), emb.data(), labels.data(), 1.0f, out.d_emb.data());
  out.grads.assign(model.grads().begin(), model.grads().end());
  out.probs.resize(kBatch);
  model.Predict(kBatch, dense.data(), emb.data(), out.probs.data());
  std::vector<float> d_emb_row(kDim);
  for (int64_t b = 0; b < kSingleRows; ++b) {
    model.ForwardBackward(1, dense.data() + b * kD, emb.data() + b * kDim, labels.data(), 1.0f,
                          d_emb_row.data());
    for (int c = 0; c < kD; ++c) out.z1.push_back(model.grads()[kBottomBias + c] / -kPairWeight);
  }
  return out;
}

TEST(DlrmDenseBf16Test, ProjectionMatchesTheRoundedReference) {
  if (!CheckBf16Products().ok()) {
    GTEST_SKIP() << CheckBf16Products();
  }
  // Dense inputs k / 256, k in [64, 256): bf16 numbers in [0.25, 1).
  std::mt19937 gen(5);
  std::vector<float> dense(kBatch * kD);
  for (float& x : dense) x = static_cast<float>(64 + gen() % 192) / 256.0f;
  const std::vector<float> bottom_bias = RandomVector(kD, 6, 0.1f, 1.0f);
  const std::vector<float> projection = RandomVector(kDim * kD, 7);
  const std::vector<float> emb = RandomVector(kBatch * kDim, 8);
  const Outputs got = RunModel(GemmPrecision::kBf16, dense, emb, bottom_bias, projection);
  const Outputs fp32 = RunModel(GemmPrecision::kFp32, dense, emb, bottom_bias, projection);
  ASSERT_EQ(got.grads.size(), static_cast<size_t>(kTopBias + 1));
  ASSERT_EQ(fp32.grads.size(), got.grads.size());
  // The construction holds: every d logit was -1.
  ASSERT_EQ(got.grads[kTopBias], -static_cast<float>(kBatch));
  for (float prob : got.probs) ASSERT_LT(prob, 0x1p-26f);

  auto rounded = [](float v) -> double { return NearestBf16(v); };
  auto dz1 = [&](int64_t b, int c) {  // exact: a power of two times a float
    return -kPairWeight * static_cast<float>(dense[b * kD + c] + bottom_bias[c]);
  };
  double off_fp32 = 0;  // the fp32 model's largest error in tolerances
  auto expect = [&](float value, float value32, double want, double tolerance, const char* what) {
    EXPECT_NEAR(value, want, tolerance) << what;
    off_fp32 = std::max(off_fp32, std::abs(value32 - want) / tolerance);
  };
  // Forward: z_1 = emb P, one row at a time.
  for (int64_t b = 0; b < kSingleRows; ++b) {
    for (int c = 0; c < kD; ++c) {
      double sum = 0, abs_sum = 0;
      for (int i = 0; i < kDim; ++i) {
        const double term = rounded(emb[b * kDim + i]) * rounded(projection[i * kD + c]);
        sum += term;
        abs_sum += std::abs(term);
      }
      expect(got.z1[b * kD + c], fp32.z1[b * kD + c], sum, FloatSumErrorBound(kDim + 1, abs_sum),
             "z_1");
    }
  }
  // Backward: dP = emb^T dz_1 and d emb = dz_1 P^T.
  for (int i = 0; i < kDim; ++i) {
    for (int c = 0; c < kD; ++c) {
      double sum = 0, abs_sum = 0;
      for (int64_t b = 0; b < kBatch; ++b) {
        const double term = rounded(emb[b * kDim + i]) * rounded(dz1(b, c));
        sum += term;
        abs_sum += std::abs(term);
      }
      const int64_t at = kProjection + i * kD + c;
      expect(got.grads[at], fp32.grads[at], sum, FloatSumErrorBound(kBatch + 1, abs_sum), "dP");
    }
  }
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int i = 0; i < kDim; ++i) {
      double sum = 0, abs_sum = 0;
      for (int c = 0; c < kD; ++c) {
        const double term = rounded(dz1(b, c)) * rounded(projection[i * kD + c]);
        sum += term;
        abs_sum += std::abs(term);
      }
      expect(got.d_emb[b * kDim + i], fp32.d_emb[b * kDim + i], sum,
             FloatSumErrorBound(kD + 1, abs_sum), "d_emb");
    }
  }
  EXPECT_GT(off_fp32, 10.0) << "the fp32 model is as close to the bf16 reference";
}

}  // namespace
}  // namespace lemrt::device
