#include "runtime/observability/placement_summary.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/comm/self_communicator.h"
#include "runtime/observability/run_report.h"

namespace lemrt::runtime {
namespace {

using ::testing::HasSubstr;

TEST(PlacementSummaryTest, FillsTheRankAndItsBytes) {
  SelfCommunicator comm;
  summary::PlacementStats out;
  ASSERT_TRUE(FillPlacement(comm, SingleHostPlacement(1, "node-1"), {1500, 0}, &out).ok());
  EXPECT_EQ(out.hosts(), 1);
  ASSERT_EQ(out.ranks_size(), 1);
  EXPECT_EQ(out.ranks(0).rank(), 0);
  EXPECT_EQ(out.ranks(0).host(), "node-1");
  EXPECT_EQ(out.ranks(0).local_rank(), 0);
  EXPECT_EQ(out.ranks(0).ranks_on_host(), 1);
  EXPECT_EQ(out.ranks(0).exchange_bytes_within_host_per_step(), 1500);
  EXPECT_EQ(out.exchange_bytes_within_host_per_step(), 1500);
  EXPECT_EQ(out.exchange_bytes_between_hosts_per_step(), 0);
}

// The report groups ranks by host and sums their bytes per host.
TEST(PlacementSummaryTest, TheReportListsEachHostsRanksAndBytes) {
  summary::RunSummary s;
  summary::PlacementStats* p = s.mutable_placement();
  p->set_hosts(2);
  const char* hosts[] = {"a", "a", "b", "b"};
  for (int r = 0; r < 4; ++r) {
    summary::RankPlacement* rank = p->add_ranks();
    rank->set_rank(r);
    rank->set_host(hosts[r]);
    rank->set_exchange_bytes_within_host_per_step(1e6 * (r + 1));
    rank->set_exchange_bytes_between_hosts_per_step(2e6);
  }
  p->set_exchange_bytes_within_host_per_step(10e6);
  p->set_exchange_bytes_between_hosts_per_step(8e6);
  const std::string report = RunReport(s);
  EXPECT_THAT(report, HasSubstr("placement: 4 ranks on 2 hosts; exchange sent per step: 10.000 MB "
                                "within hosts, 8.000 MB between hosts\n"));
  EXPECT_THAT(report, HasSubstr("  a                        0-1                       3.000"
                                "          4.000\n"));
  EXPECT_THAT(report, HasSubstr("  b                        2-3                       7.000"
                                "          4.000\n"));
}

}  // namespace
}  // namespace lemrt::runtime
