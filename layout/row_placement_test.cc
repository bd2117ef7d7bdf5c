// RowPlacement against a plain reference: the owner, chip, local SparseCore and
// local row of every row, at several topologies, with stacking on and off,
// with id shuffling on and off, and the hot rows the config names.
#include "layout/row_placement.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"
#include "proto/id_shuffle.h"

namespace lemrt::layout {
namespace {

// Three stackable tables (same dim, combiner, optimizer): a (37 rows,
// shuffled when `shuffle`), b (10 rows) and c (1 row), on `chips` chips of
// `sc_per_chip` SparseCores.
config::RunConfig Config(int chips, int sc_per_chip, const std::string& sparse_core, bool shuffle,
                         const std::string& hot = "") {
  const std::string text = absl::StrFormat(
      R"pb(
        topology { sparse_cores_per_chip: %d }
        tables { name: "a" vocab_size: 37 dim: 8 shuffle_ids: %s %s }
        tables { name: "b" vocab_size: 10 dim: 8 }
        tables { name: "c" vocab_size: 1 dim: 8 }
        features { name: "fa" table: "a" }
        features { name: "fb" table: "b" }
        features { name: "fc" table: "c" }
        model { num_dense_features: 1 bottom_mlp: 8 top_mlp: 1 }
        training { global_batch: 96 embedding_learning_rate: 0.05 }
        sparse_core { %s }
      )pb",
      sc_per_chip, shuffle ? "true" : "false", hot, sparse_core);
  auto c = config::ParseConfig(text, "row_placement_test", "", chips);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : config::RunConfig();
}

// The reference: member k of the one stack (tables in config order) is
// rotated by k x rotation SparseCores; alone (stacking off) by none. Row j
// of table t is placed at P_t(j), owned by SparseCore
// (P_t(j) % N + shift) % N at row P_t(j) / N.
struct Reference {
  int n, s;
  std::vector<int> shift;
  std::vector<base::IdPermutation> permutation;
  int64_t Placed(int t, int64_t j) const { return permutation[t].Forward(j); }
  int Owner(int t, int64_t j) const { return static_cast<int>((Placed(t, j) % n + shift[t]) % n); }
};

class RowPlacementReferenceTest : public ::testing::TestWithParam<std::tuple<int, int, int, bool>> {
};

TEST_P(RowPlacementReferenceTest, EveryRowHasTheReferenceHome) {
  const auto [chips, sc_per_chip, stacking, shuffle] = GetParam();
  // stacking: 0 off, 1 the default rotation (S), 2 rotation 1.
  const std::string options = stacking == 0   ? "disable_table_stacking: true"
                              : stacking == 1 ? ""
                                              : "table_stacking_rotation: 1";
  const config::RunConfig config = Config(chips, sc_per_chip, options, shuffle);
  const RowPlacement p = RowPlacement::FromConfig(config);
  const int n = chips * sc_per_chip;
  ASSERT_EQ(p.total_sparse_cores(), n);
  ASSERT_EQ(p.sparse_cores_per_chip(), sc_per_chip);
  ASSERT_EQ(p.num_chips(), chips);
  ASSERT_EQ(p.num_tables(), 3);
  Reference ref{n, sc_per_chip, {}, {}};
  const int rotation = stacking == 1 ? sc_per_chip : 1;
  for (int t = 0; t < 3; ++t) {
    ref.shift.push_back(stacking == 0 ? 0 : (t * rotation) % n);
    ref.permutation.push_back(config::TableIdPermutation(config, t));
  }
  EXPECT_EQ(p.shuffles(0), shuffle);
  EXPECT_FALSE(p.shuffles(1));
  for (int t = 0; t < 3; ++t) {
    const int64_t vocab = config.tables(t).vocab_size();
    std::vector<std::vector<int64_t>> shard(n);  // placed rows per owner, ascending
    for (int64_t j = 0; j < vocab; ++j) {
      const RowHome home = p.Home(t, j);
      SCOPED_TRACE(absl::StrFormat("table %d id %d", t, j));
      EXPECT_EQ(home.placed_row, ref.Placed(t, j));
      EXPECT_EQ(p.OriginalId(t, home.placed_row), j);
      EXPECT_EQ(home.global_sc, ref.Owner(t, j));
      EXPECT_EQ(home.chip, ref.Owner(t, j) / sc_per_chip);
      EXPECT_EQ(home.local_sc, ref.Owner(t, j) % sc_per_chip);
      EXPECT_EQ(home.local_row, ref.Placed(t, j) / n);
      EXPECT_EQ(p.OwnerSc(t, home.placed_row), home.global_sc);
      EXPECT_EQ(p.OwnerChip(t, home.placed_row), home.chip);
      shard[home.global_sc].push_back(home.placed_row);
    }
    // Each SparseCore's shard: its placed rows in ascending order, one
    // residue mod N, local rows 0, 1, ...; together every row once.
    int64_t rows = 0;
    for (int g = 0; g < n; ++g) {
      std::sort(shard[g].begin(), shard[g].end());
      ASSERT_EQ(p.ShardRows(t, g), static_cast<int64_t>(shard[g].size())) << t << " " << g;
      for (int64_t r = 0; r < p.ShardRows(t, g); ++r) {
        EXPECT_EQ(p.ShardPlacedRow(t, g, r), shard[g][r]) << t << " " << g << " " << r;
        EXPECT_EQ(p.LocalRow(shard[g][r]), r);
        EXPECT_EQ(shard[g][r] % n, p.ShardResidue(t, g));
      }
      rows += p.ShardRows(t, g);
    }
    EXPECT_EQ(rows, vocab);
    EXPECT_EQ(p.PaddedRows(t), (vocab + n - 1) / n * n);
    EXPECT_EQ(p.RowsPerChip(t), (vocab + n - 1) / n * sc_per_chip);
  }
}

INSTANTIATE_TEST_SUITE_P(Topologies, RowPlacementReferenceTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values(1, 2, 4), ::testing::Values(0, 1, 2),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return absl::StrFormat("chips%d_sc%d_stacking%d_%s",
                                                  std::get<0>(info.param), std::get<1>(info.param),
                                                  std::get<2>(info.param),
                                                  std::get<3>(info.param) ? "shuffled" : "plain");
                         });

// Without stacking and shuffling: the plain mod sharding, row j on
// SparseCore j % N at row j / N.
TEST(RowPlacementTest, PlainModSharding) {
  const RowPlacement p =
      RowPlacement::FromConfig(Config(3, 2, "disable_table_stacking: true", false));
  for (int64_t j = 0; j < 37; ++j) {
    const RowHome home = p.Home(0, j);
    EXPECT_EQ(home.placed_row, j);
    EXPECT_EQ(home.global_sc, j % 6);
    EXPECT_EQ(home.chip, j % 6 / 2);
    EXPECT_EQ(home.local_row, j / 6);
  }
  EXPECT_EQ(p.ShardRows(0, 0), 7);  // 0, 6, ..., 36
  EXPECT_EQ(p.ShardRows(0, 5), 6);  // 5, 11, ..., 35
  EXPECT_EQ(p.ShardRows(2, 0), 1);  // table c's one row
  EXPECT_EQ(p.ShardRows(2, 1), 0);
}

// Stacked: member b (k = 1) is rotated by S = 2, so its hot id 0 lives on
// SparseCore 2 (chip 1), not beside a's id 0 on SparseCore 0.
TEST(RowPlacementTest, StackingRotatesMembersOntoOtherChips) {
  const RowPlacement p = RowPlacement::FromConfig(Config(2, 2, "", false));
  EXPECT_EQ(p.Home(0, 0).global_sc, 0);
  EXPECT_EQ(p.Home(1, 0).global_sc, 2);
  EXPECT_EQ(p.Home(1, 0).chip, 1);
  EXPECT_EQ(p.Home(2, 0).global_sc, 0);  // k = 2: 4 % 4
  EXPECT_EQ(p.ShardResidue(1, 2), 0);
  EXPECT_EQ(p.ShardResidue(1, 0), 2);
}

TEST(RowPlacementTest, RowsOfResidueCountsSizesZeroAndOne) {
  EXPECT_EQ(RowsOfResidue(0, 0, 4), 0);
  EXPECT_EQ(RowsOfResidue(1, 0, 4), 1);
  EXPECT_EQ(RowsOfResidue(1, 1, 4), 0);
  EXPECT_EQ(RowsOfResidue(10, 1, 4), 3);  // 1, 5, 9
  EXPECT_EQ(RowsOfResidue(10, 2, 4), 2);  // 2, 6
  EXPECT_EQ(RowsOfResidue(10, 0, 1), 10);
}

// Listed ids win over the count; a count alone is counted; neither is none.
TEST(RowPlacementTest, HotRowsFollowTheRule) {
  const RowPlacement listed =
      RowPlacement::FromConfig(Config(1, 2, "", false, "hot_rows: 2 hot_row_ids: [ 5, 2 ]"));
  EXPECT_EQ(listed.hot_rows(0).source, config::HotRowSource::kListed);
  EXPECT_EQ(listed.HotRowCount(0), 2);
  EXPECT_EQ(listed.hot_rows(0).listed, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(listed.hot_rows(1).source, config::HotRowSource::kNone);
  EXPECT_EQ(listed.HotRowCount(1), 0);
  EXPECT_TRUE(listed.any_hot_rows());

  const RowPlacement only_ids =
      RowPlacement::FromConfig(Config(1, 2, "", false, "hot_row_ids: [ 7 ]"));
  EXPECT_EQ(only_ids.hot_rows(0).source, config::HotRowSource::kListed);
  EXPECT_EQ(only_ids.HotRowCount(0), 1);

  const RowPlacement counted = RowPlacement::FromConfig(Config(1, 2, "", false, "hot_rows: 3"));
  EXPECT_EQ(counted.hot_rows(0).source, config::HotRowSource::kCounted);
  EXPECT_EQ(counted.HotRowCount(0), 3);
  EXPECT_TRUE(counted.hot_rows(0).listed.empty());

  EXPECT_FALSE(RowPlacement::FromConfig(Config(1, 2, "", false)).any_hot_rows());
}

// The explicit constructor: a plan from groups, no shuffling or hot rows.
TEST(RowPlacementTest, ExplicitPlacement) {
  const RowPlacement p(StackingPlan::FromGroups({{0, 1}}, {10, 7}, 4, 2), 2, {10, 7}, {}, {});
  EXPECT_EQ(p.num_chips(), 2);
  EXPECT_FALSE(p.shuffles(0));
  EXPECT_FALSE(p.any_hot_rows());
  EXPECT_EQ(p.Home(1, 5).global_sc, 3);  // (5 % 4 + 2) % 4
  EXPECT_EQ(p.Home(1, 5).chip, 1);
  EXPECT_EQ(p.Home(1, 5).local_sc, 1);
  EXPECT_EQ(p.Home(1, 5).local_row, 1);
  EXPECT_EQ(p.PaddedRows(1), 8);
  EXPECT_EQ(p.RowsPerChip(1), 4);
}

}  // namespace
}  // namespace lemrt::layout
