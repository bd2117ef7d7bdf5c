#include "layout/stacking.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::layout {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Golden layout: N = 4, rotation 2, stack {0, 1, 2} and stack {3}.
//   table 0: vocab 10 -> padded 12, offset 0,  shift 0
//   table 1: vocab 7  -> padded 8,  offset 12, shift 2
//   table 2: vocab 16 -> padded 16, offset 20, shift (2 x 2) % 4 = 0
//   table 3: vocab 5  -> padded 8,  offset 0,  shift 0 (alone)
TEST(StackingPlanTest, GoldenOffsetsAndRotation) {
  const StackingPlan plan = StackingPlan::FromGroups({{0, 1, 2}, {3}}, {10, 7, 16, 5}, 4, 2);
  ASSERT_EQ(plan.num_stacks(), 2);
  EXPECT_EQ(plan.stacks()[0].rows, 36);
  EXPECT_EQ(plan.stacks()[1].rows, 8);
  const std::vector<std::tuple<int, int, int64_t, int64_t, int>> golden = {
      // table, stack, row_offset, padded_rows, sc_shift
      {0, 0, 0, 12, 0}, {1, 0, 12, 8, 2}, {2, 0, 20, 16, 0}, {3, 1, 0, 8, 0}};
  for (const auto& [t, stack, offset, padded, shift] : golden) {
    EXPECT_EQ(plan.table(t).stack, stack) << t;
    EXPECT_EQ(plan.table(t).row_offset, offset) << t;
    EXPECT_EQ(plan.table(t).padded_rows, padded) << t;
    EXPECT_EQ(plan.table(t).sc_shift, shift) << t;
  }
  // Table 1, id 5: 5 % 4 = 1 rotated by 2 -> 3: row 12 + 4 + 3 = 19, SC 3,
  // local row 19 / 4 = 4 = 12 / 4 + 5 / 4. Id 6: 2 + 2 wraps to 0: row 16.
  EXPECT_EQ(plan.Stack(1, 5), std::make_pair(0, int64_t{19}));
  EXPECT_EQ(plan.Stack(1, 6), std::make_pair(0, int64_t{16}));
  EXPECT_EQ(plan.DestinationSc(1, 5), 3);
  EXPECT_EQ(plan.DestinationSc(1, 6), 0);
  EXPECT_EQ(plan.DestinationSc(1, 0), 2);  // the hot id 0 moves to SC 2
  EXPECT_EQ(plan.DestinationSc(0, 0), 0);
  EXPECT_EQ(plan.Unstack(0, 19), std::make_pair(1, int64_t{5}));
  EXPECT_EQ(plan.Unstack(0, 16), std::make_pair(1, int64_t{6}));
  EXPECT_EQ(plan.Unstack(0, 20), std::make_pair(2, int64_t{0}));
}

// Every id maps into its member's rows, the map is one-to-one and Unstack
// inverts it; the destination is (id + shift) % N and the local row id / N;
// the SparseCore holding a residue is the one the ids go to.
TEST(StackingPlanTest, StackedRowsAreABijectionThatUnstackInverts) {
  for (int n : {1, 3, 4, 8}) {
    for (int rotation : {0, 1, 2, 5}) {
      const std::vector<int64_t> vocab = {10, 7, 16, 5, 1};
      const StackingPlan plan = StackingPlan::FromGroups({{0, 1, 2, 4}, {3}}, vocab, n, rotation);
      std::set<std::pair<int, int64_t>> seen;
      for (int t = 0; t < 5; ++t) {
        const StackedTable& m = plan.table(t);
        EXPECT_EQ(m.row_offset % n, 0);
        EXPECT_EQ(m.sc_shift, (int64_t{m.member} * rotation) % n);
        for (int64_t j = 0; j < vocab[t]; ++j) {
          const auto [stack, row] = plan.Stack(t, j);
          EXPECT_GE(row, m.row_offset);
          EXPECT_LT(row, m.row_offset + m.padded_rows);
          EXPECT_TRUE(seen.insert({stack, row}).second) << "n " << n << " t " << t << " j " << j;
          EXPECT_EQ(plan.Unstack(stack, row), std::make_pair(t, j));
          EXPECT_EQ(plan.DestinationSc(t, j), (j + m.sc_shift) % n);
          EXPECT_EQ(row / n, m.row_offset / n + j / n);
          EXPECT_EQ(j % n, plan.ShardResidue(t, plan.DestinationSc(t, j)));
        }
      }
    }
  }
}

config::RunConfig Config(const std::string& extra, int world = 1) {
  const std::string text = R"pb(
    topology { sparse_cores_per_chip: 2 }
    tables { name: "a" vocab_size: 100 dim: 16 combiner: SUM optimizer { adagrad {} } }
    tables { name: "b" vocab_size: 50 dim: 12 combiner: SUM optimizer { adagrad {} } }
    tables { name: "c" vocab_size: 30 dim: 16 combiner: MEAN optimizer { adagrad {} } }
    tables { name: "d" vocab_size: 20 dim: 16 combiner: SUM }
    tables { name: "e" vocab_size: 10 dim: 16 combiner: SUM
             optimizer { sgd {} learning_rate: 0.05 } }
    tables { name: "f" vocab_size: 40 dim: 16 combiner: SUM
             optimizer { adagrad { initial_accumulator: 0.1 } } }
    features { name: "a1" table: "a" }
    features { name: "d1" table: "d" }
    features { name: "a2" table: "a" max_sequence_length: 3 }
    features { name: "b1" table: "b" }
    features { name: "c1" table: "c" }
    features { name: "e1" table: "e" }
    features { name: "f1" table: "f" }
    model { num_dense_features: 1 bottom_mlp: 16 top_mlp: 1 }
    training { global_batch: 16 embedding_learning_rate: 0.05 }
  )pb";
  auto c = config::ParseConfig(text, "test", extra, world);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : config::RunConfig();
}

std::vector<std::string> Names(const StackingPlan& plan, const config::RunConfig& c, int s) {
  std::vector<std::string> names;
  for (int t : plan.stacks()[s].tables) names.push_back(c.tables(t).name());
  return names;
}

// a, b (dim 12 pads to 16) and f (adagrad with its default accumulator
// spelled out) share padded dim, combiner and optimizer; d and e are both
// SGD at the embedding learning rate (e states it); c has another combiner.
TEST(StackingPlanTest, AutomaticGroupingByPaddedDimOptimizerAndCombiner) {
  const config::RunConfig c = Config("", /*world=*/2);
  const StackingPlan plan = StackingPlan::FromConfig(c);
  EXPECT_TRUE(plan.enabled());
  EXPECT_EQ(plan.rotation(), 2);  // default: SparseCores per chip
  EXPECT_EQ(plan.total_sparse_cores(), 4);
  ASSERT_EQ(plan.num_stacks(), 3);
  EXPECT_EQ(Names(plan, c, 0), (std::vector<std::string>{"a", "b", "f"}));
  EXPECT_EQ(Names(plan, c, 1), (std::vector<std::string>{"c"}));
  EXPECT_EQ(Names(plan, c, 2), (std::vector<std::string>{"d", "e"}));
  EXPECT_EQ(plan.stacks()[0].name, "a+b+f");
  EXPECT_EQ(plan.stacks()[0].padded_dim, 16);
  // Feature stacking: a1, a2 (sharing a), b1 and f1 are one batch.
  EXPECT_EQ(plan.stacks()[0].features, (std::vector<int>{0, 2, 3, 6}));
  EXPECT_EQ(plan.stacks()[2].features, (std::vector<int>{1, 5}));
  // a: 100 rows, b: 50 -> 52 at offset 100, f at 152 with shift 2 x 2 % 4 = 0.
  EXPECT_EQ(plan.table(1).row_offset, 100);
  EXPECT_EQ(plan.table(1).sc_shift, 2);
  EXPECT_EQ(plan.table(5).row_offset, 152);
  EXPECT_EQ(plan.table(5).sc_shift, 0);
  EXPECT_EQ(plan.table(4).sc_shift, 2);  // e, member 1 of d+e

  const StackingPlan off =
      StackingPlan::FromConfig(Config("sparse_core { disable_table_stacking: true }", 2));
  EXPECT_FALSE(off.enabled());
  ASSERT_EQ(off.num_stacks(), 6);
  for (int t = 0; t < 6; ++t) {
    EXPECT_EQ(off.table(t).stack, t);
    EXPECT_EQ(off.table(t).sc_shift, 0);
    EXPECT_EQ(off.table(t).row_offset, 0);
  }
  EXPECT_EQ(off.SizeWarning(), "");

  const StackingPlan rot =
      StackingPlan::FromConfig(Config("sparse_core { table_stacking_rotation: 3 }", 2));
  EXPECT_EQ(rot.table(1).sc_shift, 3);
  EXPECT_EQ(rot.table(5).sc_shift, 2);  // 2 x 3 % 4
}

TEST(StackingPlanTest, ExplicitGroupingOverridesTheAutomaticOne) {
  const config::RunConfig c =
      Config("sparse_core { table_stacks { name: 'x' tables: 'f' tables: 'a' } }");
  const StackingPlan plan = StackingPlan::FromConfig(c);
  ASSERT_EQ(plan.num_stacks(), 5);  // x, then b, c, d, e alone
  EXPECT_EQ(plan.stacks()[0].name, "x");
  EXPECT_EQ(Names(plan, c, 0), (std::vector<std::string>{"f", "a"}));
  EXPECT_EQ(plan.table(5).member, 0);
  EXPECT_EQ(plan.table(0).member, 1);
  EXPECT_EQ(plan.table(0).row_offset, 40);
  EXPECT_EQ(Names(plan, c, 1), (std::vector<std::string>{"b"}));
}

TEST(StackingPlanTest, ConfigErrorsNameTheStackAndTheDifference) {
  auto err = [](const std::string& extra) {
    auto c = config::ParseConfig(R"pb(
      tables { name: "a" vocab_size: 100 dim: 16 combiner: SUM }
      tables { name: "b" vocab_size: 50 dim: 24 combiner: SUM }
      tables { name: "c" vocab_size: 50 dim: 16 combiner: MEAN }
      tables { name: "d" vocab_size: 50 dim: 16 combiner: SUM optimizer { adagrad {} } }
      features { name: "a1" table: "a" }
      model { num_dense_features: 1 bottom_mlp: 16 top_mlp: 1 }
      training { global_batch: 16 }
    )pb", "cfg", extra, 1);
    return c.ok() ? std::string("ok") : std::string(c.status().message());
  };
  EXPECT_THAT(err("sparse_core { table_stacks { tables: 'a' tables: 'b' } }"),
              HasSubstr("tables 'a' and 'b' cannot share a stack: padded dims differ (16 vs 24"));
  EXPECT_THAT(err("sparse_core { table_stacks { tables: 'a' tables: 'c' } }"),
              HasSubstr("combiners differ (SUM vs MEAN)"));
  EXPECT_THAT(err("sparse_core { table_stacks { tables: 'a' tables: 'd' } }"),
              HasSubstr("optimizer configs differ"));
  EXPECT_THAT(err("sparse_core { table_stacks { tables: 'a' tables: 'zz' } }"),
              HasSubstr("unknown table 'zz'"));
  EXPECT_THAT(err("sparse_core { table_stacks { tables: 'zz' tables: 'a' } }"),
              HasSubstr("unknown table 'zz'"));
  EXPECT_THAT(err("sparse_core { table_stacks { tables: 'a' } table_stacks { tables: 'a' } }"),
              HasSubstr("table 'a' is already in table_stacks[0]"));
  EXPECT_THAT(err("sparse_core { table_stacks { name: 's' } }"),
              HasSubstr("a stack needs at least one table"));
  EXPECT_THAT(err("sparse_core { disable_table_stacking: true table_stacks { tables: 'a' } }"),
              HasSubstr("contradict each other"));
  EXPECT_THAT(err("sparse_core { table_stacking_rotation: -1 }"),
              HasSubstr("sparse_core.table_stacking_rotation: must be >= 0"));
  EXPECT_EQ(err("sparse_core { table_stacks { tables: 'a' tables: 'c' } }").find("--override:1:"),
            0u);
  EXPECT_EQ(err("sparse_core { table_stacks { name: 's' tables: 'c' } }"), "ok");
}

TEST(StackingPlanTest, LogLinesAndOneSizeWarning) {
  const config::RunConfig c = Config("", 2);
  const StackingPlan plan = StackingPlan::FromConfig(c);
  std::vector<std::string> names;
  for (const auto& t : c.tables()) names.push_back(t.name());
  const std::string log = plan.Describe(names);
  EXPECT_THAT(log, HasSubstr("table stacking on: 6 tables in 3 stacks, rotation 2"));
  EXPECT_THAT(log, HasSubstr("stack 'a+b+f': 3 tables, 192 rows, padded dim 16, 4 features; "
                             "table@row_offset>>sc_shift: a@0>>0 b@100>>2 f@152>>0"));
  // Automatic stacks already hold every table they can: nothing to change.
  EXPECT_EQ(plan.SizeWarning(), "");
}

TEST(StackingPlanTest, SizeWarningNamesSmallStacksThatCouldBeOne) {
  // x = {f, a} leaves b (which stacks with a), c (with nothing) and d, e
  // (with each other) alone.
  const StackingPlan plan = StackingPlan::FromConfig(
      Config("sparse_core { table_stacks { name: 'x' tables: 'f' tables: 'a' } }"));
  const std::string warning = plan.SizeWarning();
  EXPECT_EQ(warning.find('\n'), std::string::npos);
  EXPECT_THAT(warning, HasSubstr("stacks 'x', 'b' (3 tables in all) could stack together: list "
                                 "their tables in one sparse_core.table_stacks entry"));
  EXPECT_THAT(warning, HasSubstr("stacks 'd', 'e' (2 tables in all) could stack together"));
  EXPECT_THAT(warning, Not(HasSubstr("'c'")));
}

TEST(StackingPlanTest, StackLimitsTakeTheLargestMemberLimit) {
  const StackingPlan plan = StackingPlan::FromGroups({{0, 2}, {1}}, {10, 10, 10}, 2, 1);
  PartitionLimits per_table;
  per_table.tables = {{40, 7}, {5, 5}, {30, TableLimit::kUnlimited}};
  per_table.table_names = {"t0", "t1", "t2"};
  const PartitionLimits stacked = StackLimits(per_table, plan);
  ASSERT_EQ(stacked.tables.size(), 2u);
  EXPECT_EQ(stacked.tables[0].max_ids, 40);
  EXPECT_EQ(stacked.tables[0].max_unique_ids, TableLimit::kUnlimited);
  EXPECT_EQ(stacked.tables[1].max_ids, 5);
  EXPECT_EQ(stacked.table_names[0], "0+2");
}

}  // namespace
}  // namespace lemrt::layout
