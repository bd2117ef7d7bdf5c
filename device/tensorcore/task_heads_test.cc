// A two-task dense model against two single-task models: the multi-task
// model's loss, gradients, embedding gradients and probabilities equal those
// of two plain one-head models that share its bottom (and interaction)
// parameters, each run on only the rows holding its task's label and with
// its loss weight folded into the loss scale. The masking, the weights, the
// heads' parameter layout and the sum of the heads' input gradients can each
// make it fail.
#include "device/tensorcore/task_heads.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "device/tensorcore/dense_model.h"
#include "device/tensorcore/gradient_check_test_util.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::RandomVector;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

DenseModelSpec Spec(Interaction interaction) {
  DenseModelSpec spec;
  spec.shape = DlrmShape{.num_dense = 3, .bottom = {5, 4}, .top = {6, 1}, .feature_dims = {4, 3}};
  spec.interaction = interaction;
  spec.cross_layers = 2;
  spec.cross_low_rank = 3;
  return spec;
}

void ExpectClose(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-6 + 1e-5 * std::abs(want)) << what;
}

// The rows of a [rows x width] array listed in `rows`.
std::vector<float> Rows(const std::vector<float>& v, int64_t width,
                        const std::vector<int64_t>& rows) {
  std::vector<float> out;
  for (int64_t r : rows) out.insert(out.end(), v.begin() + r * width, v.begin() + (r + 1) * width);
  return out;
}

class TwoTaskTest : public testing::TestWithParam<Interaction> {};

TEST_P(TwoTaskTest, EqualsTwoSingleTaskModelsOnTheirLabelledRows) {
  constexpr int64_t kBatch = 23;
  constexpr float kScale = 1.0f / 32;
  const std::vector<float> weights = {0.7f, 1.3f};
  DenseModelSpec two_spec = Spec(GetParam());
  two_spec.shape.task_weights = weights;
  auto two = CreateDenseModel(two_spec, kBatch, 5);
  auto one_a = CreateDenseModel(Spec(GetParam()), kBatch, 9);
  auto one_b = CreateDenseModel(Spec(GetParam()), kBatch, 11);
  ASSERT_TRUE(two.ok() && one_a.ok() && one_b.ok());
  DenseModel& m2 = **two;
  DenseModel* single[2] = {one_a->get(), one_b->get()};
  ASSERT_EQ(m2.num_tasks(), 2);
  ASSERT_EQ(single[0]->num_tasks(), 1);
  // Layout: | shared | head 0 | head 1 |, each single model | shared | head |.
  const int64_t head = m2.num_params() - single[0]->num_params();
  const int64_t shared = single[0]->num_params() - head;
  ASSERT_GT(head, 0);
  EXPECT_EQ(CountDenseParams(two_spec).value(), m2.num_params());
  for (int t = 0; t < 2; ++t) {
    std::span<float> p = single[t]->params();
    std::copy_n(m2.params().begin(), shared, p.begin());
    std::copy_n(m2.params().begin() + shared + t * head, head, p.begin() + shared);
  }
  // The heads start apart (Xavier by flat index).
  EXPECT_NE(m2.params()[shared], m2.params()[shared + head]);

  const int w = m2.embedding_width();
  const std::vector<float> dense = RandomVector(kBatch * 3, 3, -2, 2);
  const std::vector<float> emb = RandomVector(kBatch * w, 4);
  // Task 0 misses rows 4, 9, ...; task 1 has labels on every third row only
  // (a conversion seen only after a click). Row 4 has neither.
  std::vector<float> labels(kBatch * 2);
  std::vector<int64_t> rows[2];
  for (int64_t i = 0; i < kBatch; ++i) {
    labels[2 * i] = i % 5 == 4 ? kNaN : static_cast<float>(i % 2);
    labels[2 * i + 1] = i % 3 == 0 ? static_cast<float>(i % 4 == 0) : kNaN;
    if (i == 4) labels[2 * i + 1] = kNaN;
    for (int t = 0; t < 2; ++t) {
      if (!std::isnan(labels[2 * i + t])) rows[t].push_back(i);
    }
  }
  std::vector<float> d_emb(kBatch * w, 99.0f);
  const double loss =
      m2.ForwardBackward(kBatch, dense.data(), emb.data(), labels.data(), kScale, d_emb.data());

  double want_loss = 0;
  std::vector<float> want_grads(m2.num_params(), 0.0f);
  std::vector<float> want_d_emb(kBatch * w, 0.0f);
  for (int t = 0; t < 2; ++t) {
    const std::vector<int64_t>& r = rows[t];
    const int64_t n = static_cast<int64_t>(r.size());
    std::vector<float> task_labels;
    for (int64_t i : r) task_labels.push_back(labels[2 * i + t]);
    std::vector<float> d(n * w);
    const double task_loss =
        single[t]->ForwardBackward(n, Rows(dense, 3, r).data(), Rows(emb, w, r).data(),
                                   task_labels.data(), kScale * weights[t], d.data());
    want_loss += weights[t] * task_loss;
    std::span<const float> g = single[t]->grads();
    for (int64_t k = 0; k < shared; ++k) want_grads[k] += g[k];
    for (int64_t k = 0; k < head; ++k) want_grads[shared + t * head + k] = g[shared + k];
    for (int64_t j = 0; j < n; ++j) {
      for (int c = 0; c < w; ++c) want_d_emb[r[j] * w + c] += d[j * w + c];
    }
  }
  ExpectClose(loss, want_loss, "loss");
  for (int64_t k = 0; k < m2.num_params(); ++k) {
    ExpectClose(m2.grads()[k], want_grads[k], "grad " + std::to_string(k));
  }
  for (int64_t k = 0; k < kBatch * w; ++k) {
    ExpectClose(d_emb[k], want_d_emb[k], "d_emb " + std::to_string(k));
  }
  // Row 4 has no label at all: no gradient reaches its embeddings.
  for (int c = 0; c < w; ++c) EXPECT_EQ(d_emb[4 * w + c], 0.0f);

  std::vector<float> probs(kBatch * 2), single_probs(kBatch);
  m2.Predict(kBatch, dense.data(), emb.data(), probs.data());
  for (int t = 0; t < 2; ++t) {
    single[t]->Predict(kBatch, dense.data(), emb.data(), single_probs.data());
    for (int64_t i = 0; i < kBatch; ++i) {
      ExpectClose(probs[2 * i + t], single_probs[i], "probability of task " + std::to_string(t));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Interactions, TwoTaskTest,
                         testing::Values(Interaction::kDot, Interaction::kDcnV2,
                                         Interaction::kConcat));

// A weight of 0 trains nothing of its head, and the loss leaves the task out.
TEST(TaskHeadsTest, ZeroWeightTaskHasNoGradient) {
  MlpShape shape{.widths = {4, 3, 1}, .relu_last = false};
  const std::vector<float> weights = {1.0f, 0.0f};
  TaskHeads heads(shape, weights, 5, nullptr);
  ASSERT_EQ(heads.num_params(), 2 * heads.head_params());
  const std::vector<float> params = RandomVector(heads.num_params(), 1);
  const std::vector<float> x = RandomVector(5 * 4, 2);
  const std::vector<float> labels = {1, 1, 0, 0, 1, 0, 0, 1, 1, 0};
  heads.Forward(params, 5, x.data(), nullptr);
  std::vector<float> one_task_labels = {1, 0, 1, 0, 1};
  TaskHeads first(shape, std::vector<float>{1.0f}, 5, nullptr);
  first.Forward(std::span<const float>(params).first(first.num_params()), 5, x.data(), nullptr);
  EXPECT_EQ(heads.LossAndGradient(5, labels.data(), 0.5f),
            first.LossAndGradient(5, one_task_labels.data(), 0.5f));
  std::vector<float> grads(heads.num_params()), dx(5 * 4), first_dx(5 * 4);
  std::vector<float> first_grads(first.num_params());
  heads.Backward(params, 5, x.data(), grads, dx.data());
  first.Backward(std::span<const float>(params).first(first.num_params()), 5, x.data(), first_grads,
                 first_dx.data());
  for (int64_t k = heads.head_params(); k < heads.num_params(); ++k) EXPECT_EQ(grads[k], 0.0f);
  for (int64_t k = 0; k < first.num_params(); ++k) EXPECT_EQ(grads[k], first_grads[k]);
  for (size_t k = 0; k < dx.size(); ++k) EXPECT_EQ(dx[k], first_dx[k]);
}

TEST(TaskHeadsTest, BadWeightsAreRejected) {
  DenseModelSpec spec = Spec(Interaction::kDot);
  spec.shape.task_weights = {};
  EXPECT_EQ(CountDenseParams(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec.shape.task_weights = {1.0f, -0.5f};
  const absl::Status st = CountDenseParams(spec).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("task_weights[1] is -0.5"), std::string::npos) << st;
}

}  // namespace
}  // namespace lemrt::device
