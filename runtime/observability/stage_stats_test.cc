#include "runtime/observability/stage_stats.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

bool Mentions(const std::vector<std::string>& lines, const std::string& what) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(what) != std::string::npos; });
}

TEST(BusyTimeAccumulatorTest, EqualsBusyTimeOfAllIntervals) {
  // A pipelined run's stage intervals: per step host, forward, tc and
  // backward, the next step's host and forward overlapping this step's tc,
  // reported when each ends (out of begin order), with idle gaps, over far
  // more busy periods than the accumulator keeps.
  std::mt19937 rng(9);
  std::vector<std::pair<double, double>> all;
  BusyTimeAccumulator acc;
  double t = 0;
  for (int step = 0; step < 5000; ++step) {
    auto len = [&] { return std::uniform_real_distribution<double>(0.1, 3)(rng); };
    const double host = len(), fwd = len(), tc = len(), bwd = len();
    const std::pair<double, double> iv[4] = {{t, t + host},
                                             {t + host, t + host + fwd},
                                             {t + host + fwd * 0.5, t + host + fwd + tc},
                                             {t + host + fwd + tc, t + host + fwd + tc + bwd}};
    for (int k : {0, 2, 1, 3}) {  // tc ends before forward is reported
      acc.Add(iv[k].first, iv[k].second);
      all.push_back(iv[k]);
    }
    // Idle gaps on every 3rd step, so the busy periods are many.
    t += host + fwd + (step % 3 == 0 ? tc + bwd + 0.5 : 0.25);
  }
  acc.Add(3, 3);  // empty
  const double exact = BusyTime(all);
  EXPECT_NEAR(acc.Total(), exact, 1e-9 * exact);
  EXPECT_GT(exact, 1000);
}

TEST(BusyTimeAccumulatorTest, SmallCasesMatchBusyTime) {
  const std::vector<std::vector<std::pair<double, double>>> cases = {
      {}, {{0, 1}, {2, 3}}, {{0, 4}, {1, 2}}, {{3, 6}, {0, 4}, {5, 7}}, {{0, 1}, {1, 2}},
      {{2, 2}, {5, 4}}, {{5, 6}, {0, 1}, {2, 3}, {0.5, 5.5}}};
  for (const auto& c : cases) {
    BusyTimeAccumulator acc;
    for (const auto& [b, e] : c) acc.Add(b, e);
    EXPECT_DOUBLE_EQ(acc.Total(), BusyTime(c));
  }
}

TEST(BusyTimeTest, UnionOfIntervals) {
  EXPECT_EQ(BusyTime({}), 0);
  EXPECT_EQ(BusyTime({{0, 1}, {2, 3}}), 2);          // disjoint
  EXPECT_EQ(BusyTime({{0, 4}, {1, 2}}), 4);          // nested
  EXPECT_EQ(BusyTime({{3, 6}, {0, 4}, {5, 7}}), 7);  // chained, unsorted
  EXPECT_EQ(BusyTime({{0, 1}, {1, 2}}), 2);          // touching
  EXPECT_EQ(BusyTime({{2, 2}, {5, 4}}), 0);          // empty and reversed
  // Against a fine grid.
  std::mt19937 rng(3);
  std::vector<std::pair<double, double>> iv;
  std::vector<bool> grid(1000, false);
  for (int i = 0; i < 40; ++i) {
    const int b = rng() % 950, len = rng() % 50;
    iv.emplace_back(b, b + len);
    for (int k = b; k < b + len; ++k) grid[k] = true;
  }
  EXPECT_EQ(BusyTime(iv), std::count(grid.begin(), grid.end(), true));
}

summary::RunSummary Healthy() {
  summary::RunSummary s;
  s.set_steps(10);
  auto stage = [&](const char* name, double mean, double share) {
    auto* st = s.add_stages();
    st->set_name(name);
    st->set_mean_ms(mean);
    st->set_share(share);
  };
  stage("host", 1, 0.1);
  stage("tc", 5, 0.5);
  stage("step", 10, 1.0);
  s.mutable_overlap()->set_stage_sum_ms(100);
  s.mutable_overlap()->set_busy_ms(70);
  s.mutable_overlap()->set_fraction(0.3);
  auto* t = s.add_tables();
  t->set_name("user");
  t->set_ids_after_dedup(400);
  for (int k = 0; k < 4; ++k) t->add_partition_ids(100);
  t->set_partition_skew(1.0);
  return s;
}

TEST(DiagnoseTest, HealthyRunHasNoDiagnosis) { EXPECT_TRUE(Diagnose(Healthy()).empty()); }

TEST(DiagnoseTest, DetectsEachBottleneck) {
  summary::RunSummary s = Healthy();
  s.mutable_stages(0)->set_share(0.45);
  s.mutable_overlap()->set_fraction(0.0);
  auto* t = s.mutable_tables(0);
  t->set_partition_ids(2, 250);
  t->set_partition_skew(2.5);
  t->mutable_padded_ids()->set_number_value(800);
  s.mutable_preprocess()->set_mean_minibatches(3);
  s.mutable_preprocess()->set_max_minibatches(4);
  (*s.mutable_preprocess()->mutable_ids_dropped_per_table())["user"] = 12;
  const std::vector<std::string> d = Diagnose(s);
  EXPECT_EQ(d.size(), 6u);
  EXPECT_TRUE(Mentions(d, "host-bound: host preprocessing takes 45%"));
  EXPECT_TRUE(Mentions(d, "no overlap"));
  EXPECT_TRUE(Mentions(d, "many minibatches: steps needed 3.00"));
  EXPECT_TRUE(Mentions(d, "ids dropped: table 'user' dropped 12 ids (3.00%"));
  EXPECT_TRUE(Mentions(d, "partition skew on 1 table(s), busiest SparseCore vs the mean ids "
                         "per SparseCore: 'user' SparseCore 2 2.50x"));
  EXPECT_TRUE(Mentions(d, "padding overhead: table 'user' sends 2.00x"));
}

// "no overlap" names its cause: the schedule, the threads it ran on, or
// stages that waited on each other.
TEST(DiagnoseTest, NoOverlapNamesItsCause) {
  summary::RunSummary s = Healthy();
  s.mutable_overlap()->set_fraction(0.01);
  s.set_pipelining(false);
  EXPECT_TRUE(Mentions(Diagnose(s), "no overlap: the stages ran one after another (1.0% of stage "
                                    "time hidden): pipelining is off"));
  s.set_pipelining(true);
  s.mutable_threads()->set_sparsecore_executor_thread(false);
  EXPECT_TRUE(Mentions(Diagnose(s), "the pipelined schedule ran without a SparseCore thread"));
  s.mutable_threads()->set_sparsecore_executor_thread(true);
  EXPECT_TRUE(Mentions(Diagnose(s), "the pipeline's stages waited for each other"));
}

// With a host_wait stage (host workers), host-bound means the SparseCores
// waited for the host queue, whatever the host stage's own share.
TEST(DiagnoseTest, HostBoundFollowsTheHostQueueWait) {
  summary::RunSummary s = Healthy();
  s.mutable_stages(0)->set_share(0.9);  // busy workers alone are not host-bound
  auto* wait = s.add_stages();
  wait->set_name("host_wait");
  wait->set_mean_ms(0.5);
  wait->set_share(0.05);
  EXPECT_FALSE(Mentions(Diagnose(s), "host-bound"));
  wait->set_mean_ms(2);
  wait->set_share(0.2);
  EXPECT_TRUE(Mentions(Diagnose(s), "host-bound: the SparseCores waited for the host queue 20% "
                                    "of the step (2.00 ms of 10.00 ms"));
}

}  // namespace
}  // namespace lemrt::runtime
