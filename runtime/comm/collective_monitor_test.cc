#include "runtime/comm/collective_monitor.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/comm/self_communicator.h"
#include "runtime/comm/watched_communicator.h"

namespace lemrt::runtime {
namespace {

using Monitor = CollectiveMonitor;

TEST(CollectiveMonitorTest, CountsCollectivesAndTracksTheStage) {
  Monitor m;
  Monitor::Snapshot s = m.Take();
  EXPECT_EQ(s.channels[Monitor::kSparseCore].entered, 0);
  EXPECT_EQ(s.channels[Monitor::kSparseCore].step, -1);
  EXPECT_STREQ(s.channels[Monitor::kSparseCore].stage, "start-up");
  m.SetStage(Monitor::kSparseCore, 7, "sc_forward", 2.5);
  m.Enter(Monitor::kSparseCore, "all-to-all-v");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  s = m.Take();
  const auto& c = s.channels[Monitor::kSparseCore];
  EXPECT_EQ(c.entered, 1);
  EXPECT_TRUE(c.in_collective);
  EXPECT_EQ(c.step, 7);
  EXPECT_STREQ(c.stage, "sc_forward");
  EXPECT_STREQ(c.op, "all-to-all-v");
  EXPECT_GE(c.seconds, 0.015);
  EXPECT_EQ(c.extra_timeout_s, 2.5);
  EXPECT_FALSE(s.channels[Monitor::kTensorCore].in_collective);  // channels are separate
  m.Exit(Monitor::kSparseCore);
  s = m.Take();
  EXPECT_FALSE(s.channels[Monitor::kSparseCore].in_collective);
  EXPECT_LT(s.channels[Monitor::kSparseCore].seconds, 0.015);
  m.StepDone(0.5);
  m.StepDone(0.2);
  EXPECT_EQ(m.Take().longest_step_s, 0.5);
}

// Every collective of a WatchedCommunicator counts once, enters and leaves.
TEST(CollectiveMonitorTest, WatchedCommunicatorReportsEveryCollective) {
  Monitor m;
  SelfCommunicator self;
  WatchedCommunicator w(self, m, Monitor::kTensorCore);
  std::vector<int64_t> a = {1}, b(1);
  std::vector<float> f = {1}, g;
  std::vector<double> d = {1};
  std::vector<uint64_t> u = {1};
  std::string bytes = "x";
  const int64_t sizes[] = {8}, offsets[] = {0};
  EXPECT_TRUE(w.AllToAll(a, b).ok());
  EXPECT_TRUE(w.AllToAllv(a.data(), sizes, offsets, b.data(), sizes, offsets).ok());
  EXPECT_TRUE(w.AllReduceSum(std::span<float>(f)).ok());
  EXPECT_TRUE(w.AllReduceSum(std::span<double>(d)).ok());
  EXPECT_TRUE(w.AllReduceSum(std::span<int64_t>(a)).ok());
  EXPECT_TRUE(w.AllReduceSum(std::span<uint64_t>(u)).ok());
  EXPECT_TRUE(w.AllReduceMax(std::span<int64_t>(a)).ok());
  EXPECT_TRUE(w.AllGather(f, &g).ok());
  EXPECT_TRUE(w.Broadcast(&bytes, 0).ok());
  const Monitor::Snapshot s = m.Take();
  EXPECT_EQ(s.channels[Monitor::kTensorCore].entered, 9);
  EXPECT_FALSE(s.channels[Monitor::kTensorCore].in_collective);
  EXPECT_STREQ(s.channels[Monitor::kTensorCore].op, "broadcast");
  EXPECT_EQ(s.channels[Monitor::kSparseCore].entered, 0);
}

}  // namespace
}  // namespace lemrt::runtime
