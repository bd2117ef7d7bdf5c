#include "base/auc.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

// The definition: pairs (positive, negative) ordered correctly, ties 1/2.
double NaiveAuc(const std::vector<float>& scores,
                const std::vector<float>& labels) {
  double good = 0;
  int64_t pairs = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    for (size_t j = 0; j < scores.size(); ++j) {
      if (labels[i] > 0.5f && labels[j] <= 0.5f) {
        ++pairs;
        if (scores[i] > scores[j]) good += 1;
        if (scores[i] == scores[j]) good += 0.5;
      }
    }
  }
  return pairs == 0 ? 0.5 : good / static_cast<double>(pairs);
}

TEST(AucTest, PerfectRanking) {
  std::vector<float> scores = {0.1f, 0.2f, 0.8f, 0.9f};
  std::vector<float> labels = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(Auc(scores, labels), 1.0);
}

TEST(AucTest, ReversedRanking) {
  std::vector<float> scores = {0.9f, 0.8f, 0.2f, 0.1f};
  std::vector<float> labels = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(Auc(scores, labels), 0.0);
}

TEST(AucTest, AllTiedIsOneHalf) {
  std::vector<float> scores = {0.3f, 0.3f, 0.3f, 0.3f, 0.3f};
  std::vector<float> labels = {0, 1, 0, 1, 1};
  EXPECT_DOUBLE_EQ(Auc(scores, labels), 0.5);
}

TEST(AucTest, OneClassOrEmptyIsOneHalf) {
  std::vector<float> scores = {0.1f, 0.7f, 0.4f};
  std::vector<float> ones = {1, 1, 1};
  std::vector<float> zeros = {0, 0, 0};
  EXPECT_DOUBLE_EQ(Auc(scores, ones), 0.5);
  EXPECT_DOUBLE_EQ(Auc(scores, zeros), 0.5);
  EXPECT_DOUBLE_EQ(Auc({}, {}), 0.5);
}

TEST(AucTest, SmallMixedCaseByHand) {
  // Positives 0.8, 0.4, 0.4; negatives 0.4, 0.1.
  // Pairs: (0.8,0.4)=1 (0.8,0.1)=1 (0.4,0.4)=.5 (0.4,0.1)=1, twice -> 5 / 6.
  std::vector<float> scores = {0.8f, 0.4f, 0.4f, 0.4f, 0.1f};
  std::vector<float> labels = {1, 1, 0, 1, 0};
  EXPECT_DOUBLE_EQ(Auc(scores, labels), 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(NaiveAuc(scores, labels), 5.0 / 6.0);
}

TEST(AucTest, MatchesNaivePairCountWithTies) {
  CounterRng rng(42);
  std::vector<float> scores(500), labels(500);
  for (size_t i = 0; i < scores.size(); ++i) {
    scores[i] = static_cast<float>(rng.NextBelow(20)) / 20;  // Many ties.
    labels[i] = rng.NextDouble() < 0.3 + scores[i] * 0.4 ? 1 : 0;
  }
  EXPECT_NEAR(Auc(scores, labels), NaiveAuc(scores, labels), 1e-12);
}

// NaN scores rank below every number (-inf included) and tie with each
// other: the AUC equals that of the same scores with every NaN replaced by
// one value below all of them, whatever the input order.
TEST(AucTest, NanScoresRankLowestAndTie) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CounterRng rng(7);
  std::vector<float> scores(2000), labels(2000), replaced(2000);
  for (size_t i = 0; i < scores.size(); ++i) {
    const uint64_t kind = rng.NextBelow(8);
    scores[i] = kind == 0 ? nan : kind == 1 ? -std::numeric_limits<float>::infinity()
                                            : static_cast<float>(rng.NextBelow(50)) / 50;
    labels[i] = rng.NextDouble() < (kind == 0 ? 0.6 : 0.4) ? 1 : 0;
    replaced[i] = kind == 0 ? -std::numeric_limits<float>::max() : scores[i];
    if (kind == 1) replaced[i] = -1;  // above the NaNs' stand-in, below the scores
  }
  const double expected = NaiveAuc(replaced, labels);
  EXPECT_NEAR(Auc(scores, labels), expected, 1e-12);
  // Any order of the same samples gives the same AUC.
  for (int round = 0; round < 5; ++round) {
    for (size_t i = scores.size() - 1; i > 0; --i) {
      const size_t j = rng.NextBelow(i + 1);
      std::swap(scores[i], scores[j]);
      std::swap(labels[i], labels[j]);
    }
    EXPECT_NEAR(Auc(scores, labels), expected, 1e-12) << "round " << round;
  }
  std::vector<float> all_nan(10, nan), half = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0};
  EXPECT_DOUBLE_EQ(Auc(all_nan, half), 0.5);
}

TEST(LogLossTest, MatchesHandComputation) {
  std::vector<float> probs = {0.9f, 0.2f, 0.5f};
  std::vector<float> labels = {1, 0, 1};
  const double expected =
      -(std::log(double{0.9f}) + std::log(1 - double{0.2f}) +
        std::log(double{0.5f})) /
      3;
  EXPECT_NEAR(LogLoss(probs, labels), expected, 1e-12);
}

TEST(LogLossTest, ClampsCertainWrongPredictions) {
  std::vector<float> probs = {0.0f, 1.0f};
  std::vector<float> labels = {1, 0};
  EXPECT_NEAR(LogLoss(probs, labels), -std::log(1e-7), 1e-6);
  EXPECT_DOUBLE_EQ(LogLoss({}, {}), 0.0);
}

}  // namespace
}  // namespace lemrt::base
