#include "host/preprocess/hot_rows.h"

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

// Two features (tables 0 and 1, vocabulary 50 each), Zipf-like ids.
Batch RandomBatch(int samples, uint32_t seed) {
  std::mt19937 rng(seed);
  Batch b;
  b.Resize(samples, 0, 2);
  for (int f = 0; f < 2; ++f) {
    for (int i = 0; i < samples; ++i) {
      const int n = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < n; ++k) {
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        b.ids[f].push_back(static_cast<int64_t>(50 * u * u * u));
      }
      b.offsets[f][i + 1] = static_cast<int64_t>(b.ids[f].size());
    }
  }
  return b;
}

CooOptions TwoTables(int S, int N) {
  CooOptions o;
  o.local_sparse_cores = S;
  o.total_sparse_cores = N;
  o.features.push_back(FeatureSpec{.table = 0,
                                   .vocab_size = 50,
                                   .combiner = config::TableConfig::MEAN,
                                   .name = "",
                                   .table_name = "",
                                   .sc_shift = 0});
  o.features.push_back(FeatureSpec{.table = 1,
                                   .vocab_size = 50,
                                   .combiner = config::TableConfig::SUM,
                                   .name = "",
                                   .table_name = "",
                                   .sc_shift = 0});
  return o;
}

TEST(HotRowSetTest, SlotsNumberTablesInTurnInIdOrder) {
  const HotRowSet set({{7, 3}, {}, {5}});
  EXPECT_EQ(set.slots(), 3);
  EXPECT_EQ(set.Find(0, 3), 0);
  EXPECT_EQ(set.Find(0, 7), 1);
  EXPECT_EQ(set.Find(2, 5), 2);
  EXPECT_EQ(set.Find(1, 3), -1);
  EXPECT_EQ(set.Find(0, 5), -1);
  EXPECT_EQ(set.Find(9, 5), -1);  // a table past the set's
  EXPECT_EQ(set.first_slot(2), 2);
}

// The extraction against a plain filter of the same COO.
TEST(ExtractHotEntriesTest, EqualsAPlainFilterOfTheSegments) {
  for (const auto& [S, N] : std::vector<std::pair<int, int>>{{1, 1}, {2, 4}, {4, 8}}) {
    CooBuilder builder(TwoTables(S, N));
    const Batch batch = RandomBatch(64, 11u + S);
    layout::PartitionedCoo coo;
    ASSERT_TRUE(builder.Build(batch, &coo).ok());
    const HotRowSet set({{0, 1, 2}, {0, 9}});
    // Expected: per segment, the kept entries in order; all hot ones in order.
    std::vector<std::vector<layout::CooEntry>> kept(coo.segment_offsets.size() - 1);
    std::vector<HotEntry> want_hot;
    for (size_t k = 0; k + 1 < coo.segment_offsets.size(); ++k) {
      for (int64_t i = coo.segment_offsets[k]; i < coo.segment_offsets[k + 1]; ++i) {
        const layout::CooEntry& e = coo.entries[i];
        const bool hot = (e.table == 0 && e.col <= 2) || (e.table == 1 && (e.col == 0 || e.col == 9));
        if (hot) {
          want_hot.push_back({set.Find(e.table, e.col), e.row, e.feature, e.gain});
        } else {
          kept[k].push_back(e);
        }
      }
    }
    ASSERT_FALSE(want_hot.empty());
    const int64_t ids_total = coo.ids_total, after_dedup = coo.ids_after_dedup;
    std::vector<HotEntry> hot = {{1, 2, 3, 4.0f}};  // cleared first
    ExtractHotEntries(set, &coo, &hot);
    ASSERT_EQ(hot.size(), want_hot.size());
    for (size_t i = 0; i < hot.size(); ++i) {
      EXPECT_EQ(hot[i].slot, want_hot[i].slot);
      EXPECT_EQ(hot[i].row, want_hot[i].row);
      EXPECT_EQ(hot[i].feature, want_hot[i].feature);
      EXPECT_EQ(hot[i].gain, want_hot[i].gain);
    }
    size_t total = 0;
    for (int d = 0; d < N; ++d) {
      for (int s = 0; s < S; ++s) {
        const std::span<const layout::CooEntry> seg = coo.segment(d, s);
        const std::vector<layout::CooEntry>& want = kept[static_cast<size_t>(d) * S + s];
        ASSERT_EQ(seg.size(), want.size()) << "segment " << d << "," << s;
        for (size_t i = 0; i < seg.size(); ++i) {
          EXPECT_EQ(seg[i].col, want[i].col);
          EXPECT_EQ(seg[i].row, want[i].row);
          EXPECT_EQ(seg[i].table, want[i].table);
        }
        total += seg.size();
      }
    }
    EXPECT_EQ(coo.entries.size(), total);
    EXPECT_EQ(total + hot.size(), static_cast<size_t>(after_dedup));
    EXPECT_EQ(coo.ids_total, ids_total);
  }
}

TEST(ExtractHotEntriesTest, AnEmptySetLeavesTheCooAlone) {
  CooOptions options = TwoTables(2, 4);
  options.count_partitions = true;  // the counts stay right: nothing moves
  CooBuilder builder(options);
  layout::PartitionedCoo coo;
  ASSERT_TRUE(builder.Build(RandomBatch(16, 3), &coo).ok());
  const std::vector<int64_t> offsets = coo.segment_offsets;
  std::vector<HotEntry> hot;
  ASSERT_FALSE(coo.table_partition_counts.empty());
  ExtractHotEntries(HotRowSet(), &coo, &hot);
  EXPECT_TRUE(hot.empty());
  EXPECT_EQ(coo.segment_offsets, offsets);
}

TEST(RowIdCounterTest, TopEqualsAPlainCount) {
  RowIdCounter counter({0, 1}, {50, 50}, {1, 0}, /*wrap=*/false);
  std::map<int64_t, int64_t> plain;
  for (uint32_t seed = 0; seed < 3; ++seed) {
    const Batch b = RandomBatch(40, seed);
    counter.Add(b);
    for (int i = 0; i < b.num_samples; ++i) {
      for (int64_t id : b.SampleIds(0, i)) ++plain[id];
    }
  }
  std::vector<std::pair<int64_t, int64_t>> want(plain.begin(), plain.end());
  std::stable_sort(want.begin(), want.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  const auto top = counter.Top(0, 5);
  ASSERT_EQ(top.size(), 5u);
  for (size_t i = 0; i < top.size(); ++i) EXPECT_EQ(top[i], want[i]) << i;
  EXPECT_EQ(counter.Top(0, 1000).size(), plain.size());
  EXPECT_EQ(counter.Count(0, want[0].first), want[0].second);
  int64_t total = 0;
  for (const auto& [id, n] : plain) total += n;
  EXPECT_EQ(counter.Total(0), total);
  EXPECT_TRUE(counter.Top(1, 5).empty());  // table 1 is not counted
}

TEST(RowIdCounterTest, OutOfRangeIdsAreWrappedOrSkipped) {
  Batch b;
  b.Resize(1, 0, 1);
  b.ids[0] = {-1, 52, 7};
  b.offsets[0] = {0, 3};
  RowIdCounter skip({0}, {50}, {1}, /*wrap=*/false);
  skip.Add(b);
  EXPECT_EQ(skip.Top(0, 10), (std::vector<std::pair<int64_t, int64_t>>{{7, 1}}));
  RowIdCounter wrap({0}, {50}, {1}, /*wrap=*/true);
  wrap.Add(b);
  EXPECT_EQ(wrap.Top(0, 10), (std::vector<std::pair<int64_t, int64_t>>{{2, 1}, {7, 1}, {49, 1}}));
}

}  // namespace
}  // namespace lemrt::host
