#include "host/preprocess/minibatch.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

// A batch with one feature per table from per-sample id lists per table.
Batch MakeBatch(const std::vector<std::vector<std::vector<int64_t>>>& per_table) {
  Batch b;
  const int features = static_cast<int>(per_table.size());
  b.Resize(static_cast<int64_t>(per_table[0].size()), 1, features);
  for (int f = 0; f < features; ++f) {
    for (size_t i = 0; i < per_table[f].size(); ++i) {
      b.ids[f].insert(b.ids[f].end(), per_table[f][i].begin(), per_table[f][i].end());
      b.offsets[f][i + 1] = static_cast<int64_t>(b.ids[f].size());
    }
  }
  return b;
}

layout::PartitionedCoo Build(const Batch& batch, int S, int N, int64_t vocab = 1000) {
  CooOptions o;
  o.local_sparse_cores = S;
  o.total_sparse_cores = N;
  o.max_ids_per_chip_per_sample = 1000;
  for (int f = 0; f < batch.num_features(); ++f) {
    o.features.push_back(FeatureSpec{.table = f,
                                     .vocab_size = vocab,
                                     .combiner = config::TableConfig::SUM,
                                     .name = "",
                                     .table_name = "",
                                     .sc_shift = 0});
  }
  CooBuilder builder(o);
  layout::PartitionedCoo coo;
  EXPECT_TRUE(builder.Build(batch, &coo).ok());
  return coo;
}

MinibatchOptions Options(int S, int N, int tables, layout::TableLimit limit, bool minibatching,
                         bool dropping) {
  MinibatchOptions o;
  o.local_sparse_cores = S;
  o.total_sparse_cores = N;
  o.minibatching = minibatching;
  o.allow_id_dropping = dropping;
  for (int t = 0; t < tables; ++t) {
    o.limits.tables.push_back(limit);
    o.limits.table_names.push_back("t" + std::to_string(t));
  }
  return o;
}

// Hand-made input, S = 2 local SparseCores, N = 4 in all: sample 0 and 1 go
// to source SC 0, samples 2 and 3 to source SC 1.
TEST(MinibatchSplitterTest, CountsIdsAndUniqueIdsPerPartition) {
  Batch batch = MakeBatch({{{1, 5, 5}, {5, 9}, {2}, {6, 2}},  // table 0
                           {{4}, {4}, {3, 7}, {}}});          // table 1
  layout::PartitionedCoo coo = Build(batch, 2, 4);
  MinibatchSplitter splitter(Options(2, 4, 2, layout::TableLimit{}, true, false));
  splitter.PlanLocal(coo);
  auto count = [&](int t, int s, int d) { return splitter.counts()[(t * 2 + s) * 4 + d]; };
  // Table 0, source SC 0: ids 1 | 5 (sample 0, dedup) | 5, 9 -> dest 1: {1, 5, 5, 9}.
  EXPECT_EQ(count(0, 0, 1).ids, 4);
  EXPECT_EQ(count(0, 0, 1).unique_ids, 3);
  EXPECT_EQ(count(0, 0, 2).ids, 0);
  // Table 0, source SC 1: 2 | 6, 2 -> dest 2: {2, 6, 2}.
  EXPECT_EQ(count(0, 1, 2).ids, 3);
  EXPECT_EQ(count(0, 1, 2).unique_ids, 2);
  // Table 1: 4, 4 from SC 0 -> dest 0; 3, 7 from SC 1 -> dest 3.
  EXPECT_EQ(count(1, 0, 0).ids, 2);
  EXPECT_EQ(count(1, 0, 0).unique_ids, 1);
  EXPECT_EQ(count(1, 1, 3).ids, 2);
  EXPECT_EQ(count(1, 1, 3).unique_ids, 2);
}

TEST(MinibatchSplitterTest, NoBoundariesWhenEverythingFits) {
  Batch batch = MakeBatch({{{1, 5, 5}, {5, 9}, {2}, {6, 2}}});
  layout::PartitionedCoo coo = Build(batch, 2, 4);
  MinibatchSplitter splitter(Options(2, 4, 1, layout::TableLimit{4, 3}, true, false));
  EXPECT_EQ(splitter.PlanLocal(coo), 0u);
  std::vector<layout::PartitionedCoo> out;
  std::vector<int64_t> dropped;
  ASSERT_TRUE(splitter.Split(coo, 0, &out, &dropped).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].segment_offsets, coo.segment_offsets);
  EXPECT_EQ(dropped, std::vector<int64_t>{0});
}

TEST(MinibatchSplitterTest, ErrorNamesTablePartitionObservedAndLimit) {
  Batch batch = MakeBatch({{{1, 5, 5}, {5, 9}, {2}, {6, 2}}});
  layout::PartitionedCoo coo = Build(batch, 2, 4);
  MinibatchOptions o = Options(2, 4, 1, layout::TableLimit{3, 100}, /*minibatching=*/false, false);
  o.chip = 1;  // source SparseCores are 2 and 3
  MinibatchSplitter splitter(o);
  EXPECT_EQ(splitter.PlanLocal(coo), 0u);
  std::vector<layout::PartitionedCoo> out;
  std::vector<int64_t> dropped;
  absl::Status st = splitter.Split(coo, 0, &out, &dropped);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("table 't0'"));
  EXPECT_THAT(st.message(), HasSubstr("from SparseCore 2 to SparseCore 1"));
  EXPECT_THAT(st.message(), HasSubstr("has 4 ids"));
  EXPECT_THAT(st.message(), HasSubstr("max_ids_per_partition = 3"));
  EXPECT_THAT(st.message(), HasSubstr("minibatching is disabled"));

  MinibatchSplitter unique(Options(2, 4, 1, layout::TableLimit{100, 2}, false, false));
  unique.PlanLocal(coo);
  st = unique.Split(coo, 0, &out, &dropped);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("has 3 unique ids, above max_unique_ids_per_partition = 2"));
}

// (segment, table, col, row, feature) of every entry, for comparing splits.
using EntryKey = std::tuple<int64_t, int, int64_t, int, int>;
std::multiset<EntryKey> Entries(const layout::PartitionedCoo& coo) {
  std::multiset<EntryKey> out;
  for (size_t k = 0; k + 1 < coo.segment_offsets.size(); ++k) {
    for (int64_t i = coo.segment_offsets[k]; i < coo.segment_offsets[k + 1]; ++i) {
      const layout::CooEntry& e = coo.entries[i];
      out.insert({static_cast<int64_t>(k), e.table, e.col, e.row, e.feature});
    }
  }
  return out;
}

class MinibatchSplitParamTest : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

// Random ids over a small vocabulary; limits at a fraction of the observed
// maximum: the split covers every entry once, keeps rows whole, keeps the
// segment order, and every minibatch partition fits.
TEST_P(MinibatchSplitParamTest, SplitFitsAndCoversEverything) {
  const auto [S, chips, divisor] = GetParam();
  const int N = S * chips;
  std::vector<std::vector<std::vector<int64_t>>> ids(2);
  uint64_t x = 12345;
  auto next = [&x](int64_t bound) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % bound);
  };
  const int samples = 32 * S;
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < samples; ++i) {
      std::vector<int64_t> sample;
      const int len = static_cast<int>(next(6));
      for (int k = 0; k < len; ++k) sample.push_back(next(t == 0 ? 300 : 40));
      ids[t].push_back(sample);
    }
  }
  Batch batch = MakeBatch(ids);
  layout::PartitionedCoo coo = Build(batch, S, N);
  MinibatchSplitter probe(Options(S, N, 2, layout::TableLimit{}, true, false));
  probe.PlanLocal(coo);
  int32_t max_ids = 0, max_unique = 0;
  for (const layout::PartitionCount& c : probe.counts()) {
    max_ids = std::max(max_ids, c.ids);
    max_unique = std::max(max_unique, c.unique_ids);
  }
  // The hottest single row's count bounds what any split can reach.
  const layout::TableLimit limit{std::max(max_ids / divisor, 8), std::max(max_unique / divisor, 4)};
  MinibatchSplitter splitter(Options(S, N, 2, limit, true, false));
  const uint64_t boundaries = splitter.PlanLocal(coo);
  EXPECT_EQ(boundaries & 1, 0u);
  std::vector<layout::PartitionedCoo> out;
  std::vector<int64_t> dropped;
  absl::Status st = splitter.Split(coo, boundaries, &out, &dropped);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(static_cast<int>(out.size()), std::popcount(boundaries) + 1);
  if (divisor > 1) {
    EXPECT_GT(out.size(), 1u);
  }
  std::multiset<EntryKey> all;
  std::map<std::pair<int, int64_t>, int> minibatch_of_row;
  for (size_t m = 0; m < out.size(); ++m) {
    auto part = Entries(out[m]);
    all.insert(part.begin(), part.end());
    for (const layout::CooEntry& e : out[m].entries) {
      auto [it, inserted] = minibatch_of_row.emplace(std::make_pair(e.table, e.col), m);
      EXPECT_EQ(it->second, static_cast<int>(m)) << "row split across minibatches";
    }
    // Entry order inside segments is the original relative order.
    for (size_t k = 0; k + 1 < out[m].segment_offsets.size(); ++k) {
      for (int64_t i = out[m].segment_offsets[k] + 1; i < out[m].segment_offsets[k + 1]; ++i) {
        const layout::CooEntry& a = out[m].entries[i - 1];
        const layout::CooEntry& b = out[m].entries[i];
        EXPECT_LE(std::tie(a.feature, a.row, a.col), std::tie(b.feature, b.row, b.col));
      }
    }
    MinibatchSplitter check(Options(S, N, 2, limit, true, false));
    EXPECT_EQ(check.PlanLocal(out[m]), 0u) << "minibatch " << m << " is over its limits";
  }
  EXPECT_EQ(all, Entries(coo));
  EXPECT_EQ(dropped, (std::vector<int64_t>{0, 0}));

  // The moving SplitVocabulary (HostStage's) gives the same minibatches as
  // the copying one, twice in a row on reused buffers; the COO keeps its
  // counts, and its entries only when there are several minibatches.
  for (int round = 0; round < 2; ++round) {
    layout::PartitionedCoo moved = coo;
    std::vector<layout::PartitionedCoo> out_moved;
    if (round == 1) out_moved = out;  // stale buffers of the right sizes
    splitter.SplitVocabulary(&moved, boundaries, &out_moved);
    std::vector<int64_t> dropped_moved;
    ASSERT_TRUE(splitter.Enforce(&out_moved, &dropped_moved).ok());
    ASSERT_EQ(out_moved.size(), out.size());
    for (size_t m = 0; m < out.size(); ++m) {
      EXPECT_EQ(out_moved[m].segment_offsets, out[m].segment_offsets) << "minibatch " << m;
      EXPECT_EQ(out_moved[m].ids_total, out[m].ids_total);
      EXPECT_EQ(out_moved[m].ids_after_dedup, out[m].ids_after_dedup);
      ASSERT_EQ(out_moved[m].entries.size(), out[m].entries.size());
      for (size_t i = 0; i < out[m].entries.size(); ++i) {
        const layout::CooEntry& a = out_moved[m].entries[i];
        const layout::CooEntry& b = out[m].entries[i];
        EXPECT_EQ(std::tie(a.table, a.feature, a.row, a.col, a.gain),
                  std::tie(b.table, b.feature, b.row, b.col, b.gain));
      }
    }
    EXPECT_EQ(moved.ids_total, coo.ids_total);
    EXPECT_EQ(moved.ids_after_dedup, coo.ids_after_dedup);
    if (out.size() > 1) {
      EXPECT_EQ(Entries(moved), Entries(coo));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MinibatchSplitParamTest,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(1, 1, 4),
                                           std::make_tuple(2, 1, 3), std::make_tuple(4, 2, 2),
                                           std::make_tuple(2, 3, 4)));

// boundaries_per_source: the boundaries of 4 SparseCores' samples are the
// same on 1 chip x 4 SparseCores, 2 x 2 and 4 x 1 (OR over the chips), which
// one greedy merge over a chip's partitions does not give.
TEST(MinibatchSplitterTest, PerSourceBoundariesIgnoreHowSparseCoresSplitOverChips) {
  constexpr int kN = 4, kPerSc = 24;
  std::vector<std::vector<std::vector<int64_t>>> ids(1);
  uint64_t x = 99;
  for (int i = 0; i < kN * kPerSc; ++i) {
    std::vector<int64_t> sample;
    for (int k = 0; k < 4; ++k) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      sample.push_back(static_cast<int64_t>((x >> 33) % 400));
    }
    ids[0].push_back(sample);
  }
  auto plan = [&](int chips, bool per_source) {
    const int S = kN / chips;
    uint64_t boundaries = 0;
    for (int c = 0; c < chips; ++c) {
      const std::vector<std::vector<std::vector<int64_t>>> mine = {
          {ids[0].begin() + c * S * kPerSc, ids[0].begin() + (c + 1) * S * kPerSc}};
      MinibatchOptions o = Options(S, kN, 1, layout::TableLimit{6, 6}, true, false);
      o.boundaries_per_source = per_source;
      MinibatchSplitter splitter(o);
      boundaries |= splitter.PlanLocal(Build(MakeBatch(mine), S, kN));
    }
    return boundaries;
  };
  const uint64_t one_by_four = plan(1, true);
  EXPECT_NE(one_by_four, 0u);
  EXPECT_EQ(plan(2, true), one_by_four);
  EXPECT_EQ(plan(4, true), one_by_four);
  EXPECT_EQ(plan(4, false), one_by_four);  // one source SparseCore a chip: the same merge
  EXPECT_NE(plan(1, false), one_by_four);  // one merge over 4 sources: fewer boundaries
}

// The builder's partition counts (CooOptions::count_partitions) against the
// sorted keys' on stacked tables: tables 0 and 1 in one stack (table 1
// rotated), table 2 alone; two features share table 0. The counts, the
// boundaries, the minibatches and the dropped ids are the same either way.
TEST(MinibatchSplitterTest, BuilderCountsEqualSortedCounts) {
  int split = 0, dropped_some = 0;  // cases that split, that dropped ids
  for (const auto& [S, N, divisor, dropping] :
       {std::make_tuple(1, 1, 1, false), std::make_tuple(2, 4, 3, false),
        std::make_tuple(2, 6, 2, true), std::make_tuple(4, 8, 4, false),
        std::make_tuple(1, 3, 5, true)}) {
    const int64_t vocab[] = {500, 90, 40};
    std::vector<layout::StackedTable> stacking(3);
    stacking[0] = {0, 0, 0, (vocab[0] + N - 1) / N * N, 0};
    stacking[1] = {0, 1, stacking[0].padded_rows, (vocab[1] + N - 1) / N * N, 1 % N};
    stacking[2] = {1, 0, 0, (vocab[2] + N - 1) / N * N, 0};
    const int feature_table[] = {0, 1, 0, 2};
    uint64_t x = 777 + N;
    auto next = [&x](int64_t bound) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<int64_t>((x >> 33) % bound);
    };
    std::vector<std::vector<std::vector<int64_t>>> ids(4);
    for (int f = 0; f < 4; ++f) {
      for (int i = 0; i < 24 * S; ++i) {
        std::vector<int64_t> sample;
        const int len = static_cast<int>(next(7));
        for (int k = 0; k < len; ++k) {
          sample.push_back(next(2) ? next(3) : next(vocab[feature_table[f]]));
        }
        ids[f].push_back(sample);
      }
    }
    const Batch batch = MakeBatch(ids);
    layout::PartitionedCoo coo[2];
    for (int counted = 0; counted < 2; ++counted) {
      CooOptions o;
      o.local_sparse_cores = S;
      o.total_sparse_cores = N;
      o.max_ids_per_chip_per_sample = 1000;
      o.num_tables = 3;
      o.count_partitions = counted == 1;
      for (int f = 0; f < 4; ++f) {
        const int t = feature_table[f];
        o.features.push_back(FeatureSpec{.table = t,
                                         .vocab_size = vocab[t],
                                         .combiner = config::TableConfig::SUM,
                                         .name = "",
                                         .table_name = "",
                                         .sc_shift = stacking[t].sc_shift});
      }
      CooBuilder builder(o);
      ASSERT_TRUE(builder.Build(batch, &coo[counted]).ok());
    }
    ASSERT_TRUE(coo[0].table_partition_counts.empty());
    ASSERT_EQ(coo[1].table_partition_counts.size(), static_cast<size_t>(3 * S * N));
    // Bindings copied into init-captures: clang before 16 cannot capture a
    // structured binding (the ASan+UBSan CI build is clang 14).
    auto options = [&, S = S, N = N, dropping = dropping](layout::TableLimit limit) {
      MinibatchOptions o = Options(S, N, 2, limit, true, dropping);
      o.stacking = stacking;
      return o;
    };
    MinibatchSplitter probe(options(layout::TableLimit{}));
    probe.PlanLocal(coo[0]);
    int32_t max_ids = 0, max_unique = 0;
    for (const layout::PartitionCount& c : probe.counts()) {
      max_ids = std::max(max_ids, c.ids);
      max_unique = std::max(max_unique, c.unique_ids);
    }
    // Without dropping, the ids limit stays at the maximum (one hot row's ids
    // cannot be split).
    const layout::TableLimit limit{dropping ? std::max(max_ids / divisor, 1) : max_ids,
                                   std::max(max_unique / divisor, 1)};
    MinibatchSplitter sorted(options(limit)), counted(options(limit));
    const uint64_t boundaries = sorted.PlanLocal(coo[0]);
    split += boundaries != 0;
    EXPECT_EQ(counted.PlanLocal(coo[1]), boundaries) << "S " << S << " N " << N;
    ASSERT_EQ(counted.counts().size(), sorted.counts().size());
    for (size_t p = 0; p < sorted.counts().size(); ++p) {
      EXPECT_EQ(counted.counts()[p].ids, sorted.counts()[p].ids) << "N " << N << " p " << p;
      EXPECT_EQ(counted.counts()[p].unique_ids, sorted.counts()[p].unique_ids)
          << "N " << N << " p " << p;
    }
    std::vector<layout::PartitionedCoo> out[2];
    std::vector<int64_t> dropped[2];
    const absl::Status st0 = sorted.Split(coo[0], boundaries, &out[0], &dropped[0]);
    const absl::Status st1 = counted.Split(coo[1], boundaries, &out[1], &dropped[1]);
    ASSERT_EQ(st0, st1);
    if (!st0.ok()) continue;
    EXPECT_EQ(dropped[0], dropped[1]);
    for (const int64_t d : dropped[0]) dropped_some += d > 0;
    ASSERT_EQ(out[0].size(), out[1].size());
    for (size_t m = 0; m < out[0].size(); ++m) {
      EXPECT_EQ(Entries(out[0][m]), Entries(out[1][m]));
      EXPECT_EQ(out[0][m].segment_offsets, out[1][m].segment_offsets);
      EXPECT_TRUE(out[1][m].table_partition_counts.empty());
    }
  }
  EXPECT_GE(split, 3);
  EXPECT_GE(dropped_some, 1);
}

// One source and destination SparseCore; rows 3, 7, 8, 10 with counts
// 2, 1, 3, 1. Dropping keeps the lowest rows while both limits fit.
TEST(MinibatchSplitterTest, DroppingKeepsLowestRows) {
  Batch batch = MakeBatch({{{8, 3}, {8, 7}, {3, 8, 10}}});
  layout::PartitionedCoo coo = Build(batch, 1, 1);
  struct Case {
    layout::TableLimit limit;
    std::vector<int64_t> kept_cols;  // sorted
  };
  for (const Case& c : {Case{{100, 2}, {3, 3, 7}},      // two unique rows: 3, 7
                        Case{{4, 100}, {3, 3, 7, 8}},   // 4 ids: 3, 3, 7 and one of 8
                        Case{{2, 100}, {3, 3}},
                        Case{{100, 100}, {3, 3, 7, 8, 8, 8, 10}}}) {
    MinibatchSplitter splitter(Options(1, 1, 1, c.limit, /*minibatching=*/false, true));
    EXPECT_EQ(splitter.PlanLocal(coo), 0u);
    std::vector<layout::PartitionedCoo> out;
    std::vector<int64_t> dropped;
    ASSERT_TRUE(splitter.Split(coo, 0, &out, &dropped).ok());
    ASSERT_EQ(out.size(), 1u);
    std::vector<int64_t> cols;
    for (const layout::CooEntry& e : out[0].entries) cols.push_back(e.col);
    std::sort(cols.begin(), cols.end());
    EXPECT_EQ(cols, c.kept_cols);
    EXPECT_EQ(dropped[0], 7 - static_cast<int64_t>(c.kept_cols.size()));
    EXPECT_EQ(out[0].ids_after_dedup, static_cast<int64_t>(c.kept_cols.size()));
    EXPECT_EQ(out[0].segment_offsets.back(), static_cast<int64_t>(c.kept_cols.size()));
  }
}

// A single row hotter than max_ids cannot be split: minibatching stops at the
// finest split and the error says so.
TEST(MinibatchSplitterTest, UnsplittableRowIsAnError) {
  Batch batch = MakeBatch({{{5}, {5}, {5}, {5}, {6}}});
  layout::PartitionedCoo coo = Build(batch, 1, 1);
  MinibatchSplitter splitter(Options(1, 1, 1, layout::TableLimit{3, 100}, true, false));
  const uint64_t boundaries = splitter.PlanLocal(coo);
  std::vector<layout::PartitionedCoo> out;
  std::vector<int64_t> dropped;
  absl::Status st = splitter.Split(coo, boundaries, &out, &dropped);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("has 4 ids"));
  EXPECT_THAT(st.message(), HasSubstr("max_ids_per_partition = 3"));
}

// Rows of a table spread over every bucket, and the table is part of the
// key: another table's rows fall in other buckets.
TEST(MinibatchSplitterTest, BucketsCoverTheRangeAndDependOnTheTable) {
  std::set<int> seen;
  int same_as_table_0 = 0;
  constexpr int64_t kRows = 2000;
  for (int64_t col = 0; col < kRows; ++col) {
    const int b = MinibatchSplitter::Bucket(0, col);
    EXPECT_GE(b, 0);
    EXPECT_LT(b, MinibatchSplitter::kBuckets);
    seen.insert(b);
    same_as_table_0 += MinibatchSplitter::Bucket(1, col) == b;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(MinibatchSplitter::kBuckets));
  // Independent buckets agree for about 1 row in 64.
  EXPECT_LT(same_as_table_0, kRows / 16);
}

}  // namespace
}  // namespace lemrt::host
