#include "runtime/comm/placement.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/comm/self_communicator.h"

namespace lemrt::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PlacementTest, GroupsRanksByHostInOrderOfTheirLowestRank) {
  const std::vector<std::string> names = {"b", "a", "b", "c", "a", "b"};
  const Placement p = PlacementFromNames(names);
  EXPECT_THAT(p.hosts, ElementsAre("b", "a", "c"));
  EXPECT_THAT(p.host_of_rank, ElementsAre(0, 1, 0, 2, 1, 0));
  EXPECT_THAT(p.local_rank, ElementsAre(0, 0, 1, 0, 1, 2));
  EXPECT_THAT(p.ranks_on_host, ElementsAre(3, 2, 1));
  EXPECT_EQ(p.num_ranks(), 6);
  EXPECT_EQ(p.host_name(4), "a");
}

TEST(PlacementTest, DescribesHostsAndRankRanges) {
  const std::vector<std::string> names = {"a", "a", "b", "a", "b", "b", "c"};
  EXPECT_EQ(DescribePlacement(PlacementFromNames(names)),
            "7 ranks on 3 hosts: a (ranks 0-1, 3), b (ranks 2, 4-5), c (rank 6)");
  EXPECT_EQ(DescribePlacement(SingleHostPlacement(1, "h")), "1 rank on 1 host: h (rank 0)");
  EXPECT_EQ(RankRanges(std::vector<int>{0, 1, 2, 5, 7, 8}), "0-2, 5, 7-8");
  EXPECT_EQ(RankRanges(std::vector<int>{}), "");
}

TEST(PlacementTest, EmptyAndSingleHost) {
  const Placement none = PlacementFromNames({});
  EXPECT_EQ(none.num_ranks(), 0);
  EXPECT_TRUE(none.hosts.empty());
  const Placement one = SingleHostPlacement(3, "h");
  EXPECT_THAT(one.hosts, ElementsAre("h"));
  EXPECT_THAT(one.local_rank, ElementsAre(0, 1, 2));
  EXPECT_THAT(one.ranks_on_host, ElementsAre(3));
}

// The split by a plain reference: compare the hostnames themselves.
TEST(PlacementTest, SplitByHostMatchesAReferenceOnTheNames) {
  const std::vector<std::vector<std::string>> layouts = {
      {"a"}, {"a", "a"}, {"a", "b"}, {"a", "a", "b", "b"}, {"a", "b", "a", "b"},
      {"x", "y", "z"}, {"a", "b", "a", "c", "c", "a"}};
  for (const auto& names : layouts) {
    const Placement p = PlacementFromNames(names);
    const int n = static_cast<int>(names.size());
    for (int rank = 0; rank < n; ++rank) {
      std::vector<int64_t> bytes(n);
      for (int r = 0; r < n; ++r) bytes[r] = 1000 * (rank + 1) + 7 * r + (r == 3 ? 0 : 1);
      int64_t within = 0, between = 0;
      for (int r = 0; r < n; ++r) {
        if (r == rank) continue;
        (names[r] == names[rank] ? within : between) += bytes[r];
      }
      const HostBytes got = SplitByHost(p, rank, bytes);
      EXPECT_EQ(got.within_host, within) << names.size() << " ranks, rank " << rank;
      EXPECT_EQ(got.between_hosts, between) << names.size() << " ranks, rank " << rank;
    }
  }
}

TEST(PlacementTest, SplitLeavesOutTheOwnBlock) {
  const Placement p = SingleHostPlacement(1, "h");
  const std::vector<int64_t> bytes = {500};
  const HostBytes got = SplitByHost(p, 0, bytes);
  EXPECT_EQ(got.within_host, 0);
  EXPECT_EQ(got.between_hosts, 0);
}

TEST(PlacementTest, OneNameOnTwoHostsIsAnErrorNamingTheRanks) {
  const std::vector<HostIdentity> ranks = {
      {"node", "boot1 net:[1]"}, {"node", "boot1 net:[2]"}, {"node", "boot1 net:[1]"},
      {"spare", "boot2 net:[3]"}};
  const absl::Status st = CheckHostNamesDistinct(ranks);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(),
              HasSubstr("hostname \"node\" is shared by 2 different hosts (ranks 0, 2 on one, "
                        "rank 1 on another): Open MPI takes ranks with one hostname for one "
                        "host"));
  EXPECT_THAT(st.message(), HasSubstr("give every host its own hostname"));
  EXPECT_THAT(std::string(st.message()), ::testing::Not(HasSubstr("spare")));
}

TEST(PlacementTest, EveryNameSharedIsNamed) {
  const std::vector<HostIdentity> ranks = {{"a", "k1"}, {"a", "k2"}, {"b", "k3"}, {"b", "k4"}};
  const absl::Status st = CheckHostNamesDistinct(ranks);
  EXPECT_THAT(st.message(), HasSubstr("hostname \"a\" is shared by 2 different hosts (rank 0 on "
                                      "one, rank 1 on another); hostname \"b\" is shared by 2 "
                                      "different hosts (rank 2 on one, rank 3 on another)"));
}

TEST(PlacementTest, DistinctNamesOrOneHostAreFine) {
  // One machine known by two names (or faked names in a test) is no error.
  EXPECT_TRUE(CheckHostNamesDistinct(std::vector<HostIdentity>{{"a", "k"}, {"b", "k"}}).ok());
  EXPECT_TRUE(CheckHostNamesDistinct(std::vector<HostIdentity>{{"a", "k"}, {"a", "k"}}).ok());
  EXPECT_TRUE(CheckHostNamesDistinct(std::vector<HostIdentity>{}).ok());
}

TEST(PlacementTest, LocalIdentityNamesTheHostAndItsNamespaces) {
  const HostIdentity me = LocalHostIdentity();
  EXPECT_FALSE(me.name.empty());
  EXPECT_THAT(me.key, HasSubstr("net:["));
  EXPECT_THAT(me.key, HasSubstr("mnt:["));
  EXPECT_EQ(LocalHostIdentity().key, me.key);  // stable
}

TEST(PlacementTest, GatherInAWorldOfOne) {
  SelfCommunicator comm;
  const HostIdentity me{"host-1", "boot net:[5]"};
  auto all = GatherHostIdentities(comm, me);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].name, "host-1");
  EXPECT_EQ((*all)[0].key, "boot net:[5]");
  auto p = GatherPlacement(comm, me);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->hosts, ElementsAre("host-1"));
}

}  // namespace
}  // namespace lemrt::runtime
