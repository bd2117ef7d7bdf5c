#include "device/optimizers/lr_schedule.h"

#include <cmath>
#include <numbers>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

config::LearningRateScheduleConfig Parse(const char* text) {
  config::LearningRateScheduleConfig c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &c)) << text;
  return c;
}

TEST(LearningRateScheduleTest, DefaultIsExactlyOne) {
  const LearningRateSchedule none;
  EXPECT_TRUE(none.constant());
  for (int64_t s : {0, 1, 1000}) EXPECT_EQ(none.Factor(s), 1.0);
  EXPECT_EQ(none.Rate(0.1f, 7), 0.1f);
  // A CONSTANT decay without warm-up is the same.
  EXPECT_TRUE(LearningRateSchedule(Parse("decay: CONSTANT"), 100).constant());
}

TEST(LearningRateScheduleTest, WarmupThenConstant) {
  const LearningRateSchedule s(Parse("warmup_steps: 4"), 100);
  EXPECT_FALSE(s.constant());
  EXPECT_DOUBLE_EQ(s.Factor(0), 0.25);
  EXPECT_DOUBLE_EQ(s.Factor(1), 0.5);
  EXPECT_DOUBLE_EQ(s.Factor(3), 1.0);
  EXPECT_EQ(s.Factor(4), 1.0);
  EXPECT_EQ(s.Factor(99), 1.0);
  EXPECT_EQ(s.Rate(0.3f, 50), 0.3f);  // constant phases run at the base rate bit for bit
  EXPECT_EQ(s.Rate(0.4f, 0), 0.1f);
}

// The decays of config.proto, with the unset fields resolved: the decay
// starts after the warm-up and lasts to the end of the run.
TEST(LearningRateScheduleTest, DecaysFollowTheirFormulas) {
  const int64_t total = 110;
  const LearningRateSchedule lin(Parse("warmup_steps: 10 decay: LINEAR"), total);
  const LearningRateSchedule poly(Parse("warmup_steps: 10 decay: POLYNOMIAL power: 2"), total);
  const LearningRateSchedule cos(Parse("warmup_steps: 10 decay: COSINE end_factor: 0.1"), total);
  for (int64_t s = 10; s < total; ++s) {
    const double p = (s - 10) / 100.0;
    EXPECT_NEAR(lin.Factor(s), 1.0 - p, 1e-12) << s;
    EXPECT_NEAR(poly.Factor(s), (1.0 - p) * (1.0 - p), 1e-12) << s;
    const double e = 0.1f;  // end_factor is a float field
    EXPECT_NEAR(cos.Factor(s), e + (1 - e) * 0.5 * (1.0 + std::cos(std::numbers::pi * p)), 1e-12)
        << s;
  }
  EXPECT_EQ(lin.Factor(10), 1.0);
  EXPECT_EQ(lin.Factor(total), 0.0);
  EXPECT_DOUBLE_EQ(cos.Factor(total + 5), 0.1f);  // past the end: end_factor
  EXPECT_DOUBLE_EQ(poly.Factor(5), 0.6);          // still warming up
}

// LINEAR to a non-zero end factor: from 1 at the decay's start down to e at
// its end, e held afterwards; the rate is base x factor rounded to float.
TEST(LearningRateScheduleTest, LinearDecaysToItsEndFactor) {
  const LearningRateSchedule s(
      Parse("decay: LINEAR decay_start_step: 3 decay_steps: 8 end_factor: 0.4"), 1000);
  EXPECT_FALSE(s.constant());
  const double e = 0.4f;  // end_factor is a float field
  for (int64_t step : {0, 2, 3}) EXPECT_EQ(s.Factor(step), 1.0) << step;
  // Hand-computed: f = 1 - (1 - e) (step - 3) / 8.
  EXPECT_NEAR(s.Factor(4), 1.0 - (1.0 - e) / 8, 1e-12);
  EXPECT_NEAR(s.Factor(5), 1.0 - (1.0 - e) * 2 / 8, 1e-12);
  EXPECT_NEAR(s.Factor(7), 1.0 - (1.0 - e) / 2, 1e-12);  // halfway: (1 + e) / 2
  EXPECT_NEAR(s.Factor(7), 0.7, 1e-7);
  EXPECT_NEAR(s.Factor(10), 1.0 - (1.0 - e) * 7 / 8, 1e-12);
  EXPECT_DOUBLE_EQ(s.Factor(11), e);  // the decay's end
  EXPECT_DOUBLE_EQ(s.Factor(500), e);
  for (int64_t step = 3; step < 11; ++step) {
    EXPECT_GT(s.Factor(step), s.Factor(step + 1)) << step;
    EXPECT_GT(s.Factor(step + 1), e - 1e-12) << step;
  }
  EXPECT_EQ(s.Rate(0.5f, 7), static_cast<float>(0.5 * (1.0 - (1.0 - e) / 2)));
  EXPECT_EQ(s.Rate(0.5f, 11), static_cast<float>(0.5 * e));
  EXPECT_EQ(s.Rate(0.5f, 1), 0.5f);
}

// MLPerf DLRM-v2's shape: warm-up, a constant plateau, then a polynomial
// decay of given length to an end factor, held afterwards.
TEST(LearningRateScheduleTest, ExplicitDecayWindow) {
  const LearningRateSchedule s(
      Parse("warmup_steps: 2 decay: POLYNOMIAL decay_start_step: 5 decay_steps: 4 power: 3 "
            "end_factor: 0.2"),
      1000);
  EXPECT_DOUBLE_EQ(s.Factor(0), 0.5);
  EXPECT_EQ(s.Factor(2), 1.0);
  EXPECT_EQ(s.Factor(4), 1.0);
  EXPECT_EQ(s.Factor(5), 1.0);  // p = 0
  const double e = 0.2f;
  EXPECT_NEAR(s.Factor(6), e + (1 - e) * std::pow(0.75, 3), 1e-12);
  EXPECT_NEAR(s.Factor(8), e + (1 - e) * std::pow(0.25, 3), 1e-12);
  EXPECT_DOUBLE_EQ(s.Factor(9), e);
  EXPECT_DOUBLE_EQ(s.Factor(999), e);
  // A window whose end overflows int64 still decays from its start.
  const LearningRateSchedule long_window(
      Parse("decay: LINEAR decay_start_step: 10 decay_steps: 9223372036854775807"), 1000);
  EXPECT_EQ(long_window.Factor(10), 1.0);
  EXPECT_GT(long_window.Factor(11), 0.999);
}

TEST(LearningRateScheduleTest, PerKindSchedulesReplaceTheShared) {
  config::TrainingConfig t;
  t.set_steps(100);
  EXPECT_TRUE(LearningRateSchedule::ForDense(t).constant());
  *t.mutable_learning_rate_schedule() = Parse("warmup_steps: 2");
  EXPECT_DOUBLE_EQ(LearningRateSchedule::ForDense(t).Factor(0), 0.5);
  EXPECT_DOUBLE_EQ(LearningRateSchedule::ForEmbeddings(t).Factor(0), 0.5);
  *t.mutable_embedding_learning_rate_schedule() = Parse("warmup_steps: 4");
  EXPECT_DOUBLE_EQ(LearningRateSchedule::ForDense(t).Factor(0), 0.5);
  EXPECT_DOUBLE_EQ(LearningRateSchedule::ForEmbeddings(t).Factor(0), 0.25);
  *t.mutable_dense_learning_rate_schedule() = Parse("decay: LINEAR");
  EXPECT_DOUBLE_EQ(LearningRateSchedule::ForDense(t).Factor(50), 0.5);
}

}  // namespace
}  // namespace lemrt::device
