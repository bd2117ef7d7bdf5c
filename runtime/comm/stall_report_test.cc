#include "runtime/comm/stall_report.h"

#include <cstring>
#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Monitor = CollectiveMonitor;
using Snapshot = Monitor::Snapshot;

Snapshot State(int64_t sparse_entered, bool sparse_in, double seconds, int64_t step,
               const char* stage, const char* op = "all-to-all-v") {
  Snapshot s;
  auto& c = s.channels[Monitor::kSparseCore];
  c.entered = sparse_entered;
  c.in_collective = sparse_in;
  c.seconds = seconds;
  c.step = step;
  std::strcpy(c.stage, stage);
  std::strcpy(c.op, op);
  return s;
}

TEST(StallReportTest, TimeoutGrowsWithTheLongestStepAndTheStageAllowance) {
  Snapshot s = State(1, true, 10, 3, "sc_forward");
  EXPECT_EQ(CollectiveTimeout(s, Monitor::kSparseCore, 300), 300);
  s.longest_step_s = 20;  // 20 steps of 20 s
  EXPECT_EQ(CollectiveTimeout(s, Monitor::kSparseCore, 300), 400);
  s.channels[Monitor::kSparseCore].extra_timeout_s = 50;
  EXPECT_EQ(CollectiveTimeout(s, Monitor::kSparseCore, 300), 450);
  EXPECT_EQ(StalledChannel(s, 300), -1);
  s.channels[Monitor::kSparseCore].seconds = 451;
  EXPECT_EQ(StalledChannel(s, 300), Monitor::kSparseCore);
  s.channels[Monitor::kSparseCore].in_collective = false;  // busy, not waiting
  EXPECT_EQ(StalledChannel(s, 300), -1);
}

TEST(StallReportTest, StillStalledOnlyWhileTheSameCollectiveWaits) {
  const Snapshot before = State(12, true, 31, 5, "sc_forward");
  EXPECT_TRUE(StillStalled(before, State(12, true, 31, 7, "sc_forward"), Monitor::kSparseCore));
  // Completed and in the next one (the case a loaded machine produced).
  EXPECT_FALSE(StillStalled(before, State(13, true, 31, 0, "sc_forward"), Monitor::kSparseCore));
  // Completed, now computing.
  EXPECT_FALSE(StillStalled(before, State(12, false, 31, 0, "sc_forward"), Monitor::kSparseCore));
}

// Rank 0 waits in its 12th SparseCore collective; rank 1 answered from
// there too (arrived), rank 2 did not answer (SIGSTOPped), rank 3 is still
// computing an earlier step, rank 4 waits in a TensorCore collective.
TEST(StallReportTest, NamesTheStepStageAndTheRanksThatDidNotArrive) {
  const Snapshot mine = State(12, true, 31, 56, "sc_forward");
  std::vector<std::optional<Snapshot>> peers(5);
  peers[1] = State(12, true, 31, 56, "sc_forward");
  peers[3] = State(11, false, 40, 55, "sc_backward");
  peers[4] = State(11, false, 2, 55, "sc_backward");
  auto& tc = peers[4]->channels[Monitor::kTensorCore];
  tc.in_collective = true;
  tc.seconds = 33;
  tc.step = 55;
  std::strcpy(tc.stage, "loss all-reduce");
  std::strcpy(tc.op, "all-reduce");
  const std::string r = StallReport(0, Monitor::kSparseCore, mine, 30, peers, 5);
  EXPECT_THAT(r, HasSubstr("watchdog: rank 0 has waited 31 s (timeout 30 s) in the all-to-all-v "
                           "on the SparseCore communicator (its collective #12), in step 57, "
                           "stage sc_forward: ranks 2, 3, 4 did not arrive"));
  EXPECT_THAT(r, HasSubstr("rank 2: no answer within 5 s (stopped, hung or dead)"));
  EXPECT_THAT(r, HasSubstr("rank 3: busy for 40 s outside any collective, in step 56, stage "
                           "sc_backward"));
  EXPECT_THAT(r, HasSubstr("rank 4: waiting 33 s in the all-reduce on the TensorCore "
                           "communicator in step 56, stage loss all-reduce"));
  EXPECT_THAT(r, Not(HasSubstr("rank 1:")));
  EXPECT_THAT(r, HasSubstr("; aborting the job."));
}

// A peer waiting in the same collective (step, stage, operation) has
// arrived even when it has entered fewer collectives.
TEST(StallReportTest, APeerInTheSameCollectiveHasArrived) {
  const Snapshot mine = State(208, true, 4, 40, "sc_forward");
  std::vector<std::optional<Snapshot>> peers(3);
  peers[0] = State(205, true, 3, 40, "sc_forward");
  peers[2] = State(205, true, 3, 39, "sc_forward");  // an earlier step's
  const std::string r = StallReport(1, Monitor::kSparseCore, mine, 2, peers, 1);
  EXPECT_THAT(r, HasSubstr(": rank 2 did not arrive (rank 2: waiting 3 s"));
  EXPECT_THAT(r, Not(HasSubstr("rank 0:")));
}

TEST(StallReportTest, EveryRankArrivedMeansTheCollectiveItselfIsStuck) {
  const Snapshot mine = State(3, true, 400, -1, "checkpoint restore", "broadcast");
  std::vector<std::optional<Snapshot>> peers(2);
  peers[1] = State(3, true, 400, -1, "checkpoint restore", "broadcast");
  const std::string r = StallReport(0, Monitor::kSparseCore, mine, 300, peers, 5);
  EXPECT_THAT(r, HasSubstr("in start-up, stage checkpoint restore"));
  EXPECT_THAT(r, HasSubstr("every rank has arrived but the collective does not complete"));
}

// With a placement the ranks that did not arrive are named with their hosts.
TEST(StallReportTest, NamesTheHostsOfTheRanksThatDidNotArrive) {
  const std::vector<std::string> names = {"a", "a", "b", "b", "c"};
  const Placement placement = PlacementFromNames(names);
  const Snapshot mine = State(12, true, 31, 56, "sc_forward");
  std::vector<std::optional<Snapshot>> peers(5);
  peers[1] = State(12, true, 31, 56, "sc_forward");
  peers[3] = State(11, false, 40, 55, "sc_backward");
  const std::string r = StallReport(0, Monitor::kSparseCore, mine, 30, peers, 5, &placement);
  EXPECT_THAT(r, HasSubstr("watchdog: rank 0 on host a has waited 31 s (timeout 30 s) in the "
                           "all-to-all-v on the SparseCore communicator (its collective #12), in "
                           "step 57, stage sc_forward: ranks 2, 3 on host b and rank 4 on host c "
                           "did not arrive (rank 2: no answer within 5 s (stopped, hung or dead); "
                           "rank 3: busy for 40 s"));
  EXPECT_THAT(r, HasSubstr("; aborting the job."));
}

// The decision of a rank whose host is cut off: no rank on another host
// answered. Ranks on its own host answering do not count.
TEST(StallReportTest, CutOffWhenNoRankOnAnotherHostAnswers) {
  const std::vector<std::string> two_hosts = {"a", "a", "b", "b"};
  const Placement p = PlacementFromNames(two_hosts);
  std::vector<std::optional<Snapshot>> peers(4);
  peers[1] = State(1, true, 1, 1, "sc_forward");  // same host
  EXPECT_TRUE(CutOff(0, p, peers));
  EXPECT_TRUE(CutOff(1, p, peers));
  peers[3] = State(1, true, 1, 1, "sc_forward");  // one rank of host b answered
  EXPECT_FALSE(CutOff(0, p, peers));
  // Three hosts, one of them silent: the others reach each other.
  const std::vector<std::string> three_hosts = {"a", "b", "c"};
  const Placement q = PlacementFromNames(three_hosts);
  std::vector<std::optional<Snapshot>> answers(3);
  answers[1] = State(1, true, 1, 1, "sc_forward");
  EXPECT_FALSE(CutOff(0, q, answers));
  EXPECT_TRUE(CutOff(2, q, std::vector<std::optional<Snapshot>>(3)));
  // One host: a silent rank is stalled, not cut off.
  const Placement one = SingleHostPlacement(3, "a");
  EXPECT_FALSE(CutOff(0, one, std::vector<std::optional<Snapshot>>(3)));
}

TEST(StallReportTest, TheCutOffSentenceNamesTheUnreachableRanksAndHosts) {
  const std::vector<std::string> names = {"a", "b", "b", "c"};
  const Placement p = PlacementFromNames(names);
  const Snapshot mine = State(7, true, 6, 20, "sc_backward");
  std::vector<std::optional<Snapshot>> peers(4);
  peers[1] = State(7, true, 6, 20, "sc_backward");  // its host's other rank: arrived
  EXPECT_EQ(CutOffReport(2, Monitor::kSparseCore, mine, 5, peers, 1, p),
            "watchdog: rank 2 on host b has waited 6 s (timeout 5 s) in the all-to-all-v on the "
            "SparseCore communicator (its collective #7), in step 21, stage sc_backward: rank 0 "
            "on host a and rank 3 on host c did not arrive (rank 0: no answer within 1 s "
            "(stopped, hung or dead); rank 3: no answer within 1 s (stopped, hung or dead)); "
            "rank 2 on host b cannot reach rank 0 on host a and rank 3 on host c (this host is "
            "cut off from the others, or every other host stopped); ending this rank.");
}

}  // namespace
}  // namespace lemrt::runtime
