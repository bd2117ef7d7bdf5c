#include "base/auc.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

// The definition: pairs (positive, negative) ordered correctly, ties 1/2.
double NaiveAuc(const std::vector<float>& scores, const std::vector<float>& labels) {
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
    scores[i] = kind == 0   ? nan
                : kind == 1 ? -std::numeric_limits<float>::infinity()
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
      -(std::log(double{0.9f}) + std::log(1 - double{0.2f}) + std::log(double{0.5f})) / 3;
  EXPECT_NEAR(LogLoss(probs, labels), expected, 1e-12);
}

TEST(LogLossTest, ClampsCertainWrongPredictions) {
  std::vector<float> probs = {0.0f, 1.0f};
  std::vector<float> labels = {1, 0};
  EXPECT_NEAR(LogLoss(probs, labels), -std::log(1e-7), 1e-6);
  EXPECT_DOUBLE_EQ(LogLoss({}, {}), 0.0);
}

TEST(BaseRateEntropyTest, IsTheLogLossOfPredictingTheMean) {
  const std::vector<float> labels = {1, 0, 0, 0, 1, 0, 0, 0};  // p = 1/4
  EXPECT_NEAR(BaseRateEntropy(labels), -(0.25 * std::log(0.25) + 0.75 * std::log(0.75)), 1e-15);
  EXPECT_NEAR(BaseRateEntropy(labels), LogLoss(std::vector<float>(8, 0.25f), labels), 1e-7);
  const std::vector<float> soft = {0.5f, 0.5f};
  EXPECT_NEAR(BaseRateEntropy(soft), std::log(2.0), 1e-15);
  EXPECT_EQ(BaseRateEntropy(std::vector<float>{1, 1}), 0);
  EXPECT_EQ(BaseRateEntropy(std::vector<float>{0}), 0);
  EXPECT_EQ(BaseRateEntropy({}), 0);
}

// GAUC against a plain map of groups: each group's pair-count AUC weighted by
// its rows, one-class groups and keyless rows left out; the same value,
// bit for bit, for the rows in another order.
TEST(GroupAucTest, MatchesAPlainPerGroupAverageInAnyRowOrder) {
  CounterRng rng(7);
  const size_t n = 900;
  std::vector<float> scores(n), labels(n);
  std::vector<int64_t> groups(n);
  for (size_t i = 0; i < n; ++i) {
    groups[i] = rng.NextBelow(40) - 2;  // keys -2..37: -2 and -1 are in no group
    scores[i] = static_cast<float>(rng.NextBelow(10)) / 10;
    labels[i] = rng.NextDouble() < (groups[i] % 7 == 0 ? 0.0 : 0.2 + scores[i] * 0.5) ? 1 : 0;
  }
  std::map<int64_t, std::pair<std::vector<float>, std::vector<float>>> by_group;
  for (size_t i = 0; i < n; ++i) {
    if (groups[i] < 0) continue;
    by_group[groups[i]].first.push_back(scores[i]);
    by_group[groups[i]].second.push_back(labels[i]);
  }
  double weighted = 0, rows = 0;
  int64_t used = 0;
  for (const auto& [key, g] : by_group) {
    int positives = 0;
    for (float y : g.second) positives += y > 0.5f;
    if (positives == 0 || positives == static_cast<int>(g.second.size())) continue;
    weighted += g.second.size() * NaiveAuc(g.first, g.second);
    rows += g.second.size();
    ++used;
  }
  const GroupAucResult r = GroupAuc(scores, labels, groups);
  EXPECT_NEAR(r.gauc, weighted / rows, 1e-12);
  EXPECT_EQ(r.groups, used);
  EXPECT_EQ(r.rows, static_cast<int64_t>(rows));
  EXPECT_LT(used, 38);  // the groups with key % 7 == 0 have no positive
  // Reversed rows: exactly the same value.
  std::vector<float> rs(scores.rbegin(), scores.rend()), rl(labels.rbegin(), labels.rend());
  std::vector<int64_t> rg(groups.rbegin(), groups.rend());
  EXPECT_EQ(GroupAuc(rs, rl, rg).gauc, r.gauc);
}

TEST(GroupAucTest, NoGroupWithBothClassesIsNaN) {
  const std::vector<float> scores = {0.1f, 0.9f, 0.3f};
  const std::vector<float> labels = {0, 1, 1};
  const GroupAucResult r = GroupAuc(scores, labels, std::vector<int64_t>{1, 2, -1});
  EXPECT_TRUE(std::isnan(r.gauc));
  EXPECT_EQ(r.groups, 0);
  EXPECT_TRUE(std::isnan(GroupAuc({}, {}, {}).gauc));
  EXPECT_DOUBLE_EQ(GroupAuc(scores, labels, std::vector<int64_t>{4, 4, 4}).gauc,
                   Auc(scores, labels));
}

}  // namespace
}  // namespace lemrt::base
