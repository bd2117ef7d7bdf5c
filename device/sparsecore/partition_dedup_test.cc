#include "device/sparsecore/partition_dedup.h"

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "device/optimizers/optimizer.h"
#include "device/sparsecore/row_kernels.h"
#include "gtest/gtest.h"
#include "proto/config.pb.h"

namespace lemrt::device {
namespace {

using layout::CooEntry;

// Two tables (dims 3 and 16) sharded over 2 SparseCores; this is SparseCore
// 1, which owns the odd columns (local row = col / 2).
class PartitionDedupTest : public ::testing::Test {
 protected:
  PartitionDedupTest() {
    for (int t = 0; t < 2; ++t) {
      config::TableConfig table;
      table.set_name(t == 0 ? "a" : "b");
      table.set_vocab_size(1000);
      table.set_dim(dims_[t]);
      shards_.push_back(std::make_unique<TableShard>(table, t, /*residue=*/1, /*total_sc=*/2,
                                                     /*seed=*/1, sgd_));
    }
  }

  // The plain reference: a map from (table, col) to the entries that name
  // it, in entry order (feature_major: ordered by (feature, segment), then
  // entry order); the dedup must number the map's keys in order and give
  // each key's first entry in that order the first role.
  void ExpectMatchesMap(const std::vector<std::vector<CooEntry>>& segments,
                        bool feature_major = false) {
    std::vector<std::span<const CooEntry>> spans(segments.begin(), segments.end());
    SparseCoreStepState state;
    DedupPartition(spans, dims_, shards_, &state, feature_major);

    struct Ref {
      int feature, segment, index;
      const CooEntry* e;
    };
    std::vector<Ref> refs;
    int index = 0;
    ASSERT_EQ(state.segment_begin.size(), segments.size() + 1);
    for (size_t k = 0; k < segments.size(); ++k) {
      EXPECT_EQ(state.segment_begin[k], index);
      for (const CooEntry& e : segments[k]) {
        refs.push_back({e.feature, static_cast<int>(k), index++, &e});
      }
    }
    EXPECT_EQ(state.segment_begin.back(), index);
    if (feature_major) {
      std::stable_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) {
        return std::pair(a.feature, a.segment) < std::pair(b.feature, b.segment);
      });
    }
    std::map<std::pair<int, int64_t>, std::vector<int>> ids;
    for (const Ref& r : refs) ids[{r.e->table, r.e->col}].push_back(r.index);
    ASSERT_EQ(state.unique_keys.size(), ids.size());
    ASSERT_EQ(state.unique_offsets.size(), ids.size() + 1);
    ASSERT_EQ(state.entry_unique.size(), static_cast<size_t>(index));
    std::vector<int64_t> want_runs;
    int64_t unique = 0, offset = 0;
    int table = -1;
    for (const auto& [key, entries] : ids) {
      if (key.first != table) {
        want_runs.push_back(unique);
        table = key.first;
      }
      EXPECT_EQ(state.unique_keys[unique], (uint64_t{static_cast<uint32_t>(key.first)} << 48) |
                                               static_cast<uint64_t>(key.second));
      EXPECT_EQ(UniqueKeyTable(state.unique_keys[unique]), key.first);
      EXPECT_EQ(state.unique_rows[unique], key.second / 2);
      EXPECT_EQ(state.unique_offsets[unique], offset);
      EXPECT_EQ(state.unique_single[unique], entries.size() == 1 ? 1 : 0);
      for (size_t k = 0; k < entries.size(); ++k) {
        EXPECT_EQ(state.entry_unique[entries[k]], unique) << "entry " << entries[k];
        EXPECT_EQ(state.entry_role[entries[k]],
                  entries.size() == 1 ? kOnlyEntry : (k == 0 ? kFirstEntry : kAddEntry))
            << "entry " << entries[k];
      }
      offset += dims_[key.first];
      ++unique;
    }
    want_runs.push_back(unique);
    EXPECT_EQ(state.unique_offsets.back(), offset);
    EXPECT_EQ(state.table_runs, want_runs);
  }

  const std::vector<int> dims_ = {3, 16};
  SgdOptimizer sgd_{0.1f};
  std::vector<std::unique_ptr<TableShard>> shards_;
};

TEST_F(PartitionDedupTest, EmptyPartition) {
  ExpectMatchesMap({});
  ExpectMatchesMap({{}, {}});
}

TEST_F(PartitionDedupTest, OneEntry) { ExpectMatchesMap({{{7, 0, 0, 1, 1.0f}}}); }

// Keys ascending over the whole partition: numbered straight from the segments.
TEST_F(PartitionDedupTest, AscendingKeysWithRepeats) {
  ExpectMatchesMap({{{1, 0, 0, 0, 1}, {1, 1, 0, 0, 1}, {5, 1, 0, 0, 1}},
                    {},
                    {{5, 2, 0, 0, 1}, {3, 0, 1, 1, 1}, {3, 1, 1, 1, 1}, {9, 1, 1, 1, 1}}});
}

// Keys that stop ascending part-way (and tables out of order): sorted first,
// entries of one key keep their order.
TEST_F(PartitionDedupTest, UnsortedKeysAfterASortedStart) {
  ExpectMatchesMap({{{1, 0, 0, 0, 1}, {3, 0, 0, 0, 1}, {1, 1, 0, 0, 1}},
                    {{9, 0, 1, 1, 1}, {5, 1, 0, 0, 1}, {9, 2, 1, 1, 1}, {3, 4, 0, 0, 1}}});
}

TEST_F(PartitionDedupTest, RandomPartitionsMatchTheMap) {
  std::mt19937 rng(5);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::vector<CooEntry>> segments(1 + rng() % 4);
    for (auto& seg : segments) {
      const int n = static_cast<int>(rng() % 50);
      for (int i = 0; i < n; ++i) {
        const int table = static_cast<int>(rng() % 2);
        seg.push_back(
            {2 * static_cast<int64_t>(rng() % (round < 10 ? 8 : 400)) + 1, i, table, table, 1.0f});
      }
      if (round % 2 == 0) {  // sorted segments: the one-pass path when they ascend overall
        std::sort(seg.begin(), seg.end(), [](const CooEntry& x, const CooEntry& y) {
          return std::pair(x.table, x.col) < std::pair(y.table, y.col);
        });
      }
    }
    ExpectMatchesMap(segments);
  }
}

// Feature-major: a key that two features share starts its sum at its first
// entry of the lower feature, in the first segment that has one, whatever
// the entry order; segments are sorted by feature, as the COO format is.
TEST_F(PartitionDedupTest, FeatureMajorFirstEntries) {
  // Key (0, 5): feature 2 in segment 0 (entry 1), feature 0 in segment 1
  // (entry 2): entry 2 starts the sum. Key (1, 7): feature 1 in both
  // segments, then feature 3: entry order.
  ExpectMatchesMap({{{7, 4, 1, 1, 1}, {5, 2, 2, 0, 1}},
                    {{5, 1, 0, 0, 1}, {9, 0, 1, 1, 1}, {7, 2, 1, 1, 1}, {7, 3, 3, 1, 1}}},
                   /*feature_major=*/true);
  std::mt19937 rng(9);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::vector<CooEntry>> segments(1 + rng() % 5);
    for (auto& seg : segments) {
      const int n = static_cast<int>(rng() % 60);
      for (int i = 0; i < n; ++i) {
        const int feature = static_cast<int>(rng() % 4);  // features 0, 2 on table 0; 1, 3 on 1
        seg.push_back({2 * static_cast<int64_t>(rng() % 12) + 1, i, feature, feature % 2, 1.0f});
      }
      std::stable_sort(seg.begin(), seg.end(), [](const CooEntry& x, const CooEntry& y) {
        return std::pair(x.feature, x.row) < std::pair(y.feature, y.row);
      });
    }
    ExpectMatchesMap(segments, /*feature_major=*/true);
  }
}

TEST(ForEachFeatureRunTest, RunsInFeatureThenSegmentOrder) {
  const std::vector<CooEntry> a = {{1, 0, 0, 0, 1}, {1, 0, 2, 0, 1}, {1, 1, 2, 0, 1}};
  const std::vector<CooEntry> b = {}, c = {{1, 0, 1, 0, 1}, {1, 0, 2, 0, 1}};
  const std::vector<std::span<const CooEntry>> segs = {a, b, c};
  std::vector<size_t> cursor;
  std::vector<std::tuple<size_t, int64_t, int64_t>> runs;
  ForEachFeatureRun(segs, &cursor, [&](size_t k, int64_t begin, int64_t end) {
    runs.emplace_back(k, begin, end);
  });
  EXPECT_EQ(runs, (std::vector<std::tuple<size_t, int64_t, int64_t>>{
                      {0, 0, 1}, {2, 0, 1}, {0, 1, 3}, {2, 1, 2}}));
}

// The state's vectors are reused: a smaller partition after a larger one
// gives the smaller one's numbering.
TEST_F(PartitionDedupTest, ReusedStateShrinksToTheNewPartition) {
  std::vector<CooEntry> big, small = {{3, 0, 0, 0, 1}, {3, 1, 0, 0, 1}};
  for (int i = 0; i < 40; ++i) big.push_back({2 * i + 1, i, 0, 0, 1});
  SparseCoreStepState state;
  std::vector<std::span<const CooEntry>> spans = {big};
  DedupPartition(spans, dims_, shards_, &state);
  spans = {small};
  DedupPartition(spans, dims_, shards_, &state);
  EXPECT_EQ(state.unique_keys.size(), 1u);
  EXPECT_EQ(state.unique_offsets, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(state.entry_unique, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(state.entry_role, (std::vector<uint8_t>{kFirstEntry, kAddEntry}));
  EXPECT_EQ(state.table_runs, (std::vector<int64_t>{0, 1}));
}

}  // namespace
}  // namespace lemrt::device
