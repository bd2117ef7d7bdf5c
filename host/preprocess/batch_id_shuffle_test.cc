#include "host/preprocess/batch_id_shuffle.h"

#include <vector>

#include "gtest/gtest.h"
#include "proto/config_loader.h"
#include "proto/id_shuffle.h"

namespace lemrt::host {
namespace {

Batch TwoFeatureBatch(std::vector<int64_t> ids0, std::vector<int64_t> ids1) {
  Batch b;
  b.Resize(1, 0, 2);
  b.ids[0] = ids0;
  b.ids[1] = ids1;
  b.offsets[0] = {0, static_cast<int64_t>(ids0.size())};
  b.offsets[1] = {0, static_cast<int64_t>(ids1.size())};
  return b;
}

TEST(IdShufflerTest, PermutesShuffledFeaturesOnly) {
  const base::IdPermutation p(100, 5);
  const IdShuffler s({p, base::IdPermutation()}, {100, 100}, /*wrap=*/false);
  ASSERT_TRUE(s.active());
  Batch b = TwoFeatureBatch({0, 1, 99, 1}, {0, 1, 99});
  s.Apply(&b);
  EXPECT_EQ(b.ids[0], (std::vector<int64_t>{p.Forward(0), p.Forward(1), p.Forward(99),
                                            p.Forward(1)}));
  EXPECT_EQ(b.ids[1], (std::vector<int64_t>{0, 1, 99}));
}

TEST(IdShufflerTest, OutOfRangeIdsLeftForTheBoundCheckOrWrapped) {
  const base::IdPermutation p(100, 5);
  Batch b = TwoFeatureBatch({-1, 100, 250}, {});
  IdShuffler({p, base::IdPermutation()}, {100, 100}, /*wrap=*/false).Apply(&b);
  EXPECT_EQ(b.ids[0], (std::vector<int64_t>{-1, 100, 250}));
  IdShuffler({p, base::IdPermutation()}, {100, 100}, /*wrap=*/true).Apply(&b);
  EXPECT_EQ(b.ids[0], (std::vector<int64_t>{p.Forward(99), p.Forward(0), p.Forward(50)}));
}

TEST(IdShufflerTest, FromConfigFollowsTheGlobalSwitchAndTableOverrides) {
  const char* text = R"pb(
    sparse_core { shuffle_ids: true id_shuffle_seed: 3 }
    tables { name: "a" vocab_size: 1000 dim: 8 }
    tables { name: "b" vocab_size: 1000 dim: 8 shuffle_ids: false }
    features { name: "fa" table: "a" }
    features { name: "fb" table: "b" }
    features { name: "fa2" table: "a" }
    model { bottom_mlp: 8 top_mlp: 1 }
    training { global_batch: 8 }
  )pb";
  absl::StatusOr<config::RunConfig> c = config::ParseConfig(text, "t.pbtxt", "", 1);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(config::ShufflesIds(*c, 0));
  EXPECT_FALSE(config::ShufflesIds(*c, 1));
  const base::IdPermutation pa = config::TableIdPermutation(*c, 0);
  EXPECT_FALSE(pa.identity());
  EXPECT_TRUE(config::TableIdPermutation(*c, 1).identity());
  const IdShuffler s = IdShuffler::FromConfig(*c);
  Batch b;
  b.Resize(1, 0, 3);
  for (int f = 0; f < 3; ++f) {
    b.ids[f] = {7, 8};
    b.offsets[f] = {0, 2};
  }
  s.Apply(&b);
  EXPECT_EQ(b.ids[0], (std::vector<int64_t>{pa.Forward(7), pa.Forward(8)}));
  EXPECT_EQ(b.ids[1], (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(b.ids[2], b.ids[0]);  // features of one table share its permutation
}

TEST(IdShufflerTest, OffByDefault) {
  const char* text = R"pb(
    tables { name: "a" vocab_size: 1000 dim: 8 }
    features { name: "fa" table: "a" }
    model { bottom_mlp: 8 top_mlp: 1 }
    training { global_batch: 8 }
  )pb";
  absl::StatusOr<config::RunConfig> c = config::ParseConfig(text, "t.pbtxt", "", 1);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(IdShuffler::FromConfig(*c).active());
}

}  // namespace
}  // namespace lemrt::host
