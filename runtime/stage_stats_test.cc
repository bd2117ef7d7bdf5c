#include "runtime/stage_stats.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

bool Mentions(const std::vector<std::string>& lines, const std::string& what) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(what) != std::string::npos; });
}

TEST(DistributeTest, MatchesSortedReference) {
  for (int n : {0, 1, 2, 7, 100, 1001}) {
    std::mt19937 rng(n);
    std::vector<double> v(n);
    for (double& x : v) x = std::uniform_real_distribution<double>(0, 10)(rng);
    const Distribution d = Distribute(v);
    if (n == 0) {
      EXPECT_EQ(d.mean, 0);
      continue;
    }
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    double sum = 0;
    for (double x : v) sum += x;
    EXPECT_NEAR(d.mean, sum / n, 1e-9);
    EXPECT_EQ(d.p50, sorted[static_cast<size_t>(0.5 * (n - 1) + 0.5)]);
    EXPECT_EQ(d.p99, sorted[static_cast<size_t>(0.99 * (n - 1) + 0.5)]);
    EXPECT_LE(d.p50, d.p99);
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
