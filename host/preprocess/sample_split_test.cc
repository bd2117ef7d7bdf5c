#include "host/preprocess/sample_split.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

layout::PartitionedCoo Build(const Batch& batch, int S, int N, int64_t vocab) {
  CooOptions o;
  o.local_sparse_cores = S;
  o.total_sparse_cores = N;
  o.max_ids_per_chip_per_sample = 1000;
  for (int f = 0; f < batch.num_features(); ++f) {
    o.features.push_back(FeatureSpec{.table = f % 2,
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

MinibatchOptions Options(int S, int N, int tables, layout::TableLimit limit) {
  MinibatchOptions o;
  o.local_sparse_cores = S;
  o.total_sparse_cores = N;
  for (int t = 0; t < tables; ++t) {
    o.limits.tables.push_back(limit);
    o.limits.table_names.push_back("t" + std::to_string(t));
  }
  return o;
}

// (table, source SC, destination SC) -> (ids, distinct rows), the plain way.
std::map<std::tuple<int, int, int>, std::pair<int, int>> Count(const layout::PartitionedCoo& p,
                                                               int S, int N) {
  std::map<std::tuple<int, int, int>, std::pair<int, int>> out;
  for (int d = 0; d < N; ++d) {
    for (int s = 0; s < S; ++s) {
      std::map<int, std::vector<int64_t>> rows;
      for (const layout::CooEntry& e : p.segment(d, s)) rows[e.table].push_back(e.col);
      for (auto& [t, cols] : rows) {
        const int ids = static_cast<int>(cols.size());
        std::sort(cols.begin(), cols.end());
        const int distinct = static_cast<int>(std::unique(cols.begin(), cols.end()) - cols.begin());
        out[{t, s, d}] = {ids, distinct};
      }
    }
  }
  return out;
}

// One hot row: every sample looks it up; four per range fit max_ids 4.
TEST(SampleSplitterTest, HotRowSplitsIntoRangesOfSamples) {
  Batch b;
  b.Resize(10, 0, 1);
  for (int i = 0; i < 10; ++i) {
    b.ids[0].push_back(7);
    b.offsets[0][i + 1] = i + 1;
  }
  layout::PartitionedCoo coo = Build(b, 1, 2, 100);
  coo.row_group = 3;
  SampleSplitter splitter(Options(1, 2, 1, layout::TableLimit{4, 1 << 30}));
  ASSERT_EQ(splitter.Plan(coo, 10), 3);  // samples 0-3, 4-7, 8-9
  std::vector<layout::PartitionedCoo> parts(4);
  splitter.Split(coo, 4, parts.data());
  const int64_t want[4] = {4, 4, 2, 0};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(parts[i].ids_after_dedup, want[i]) << i;
    EXPECT_EQ(parts[i].row_group, 3);
    EXPECT_EQ(parts[i].ids_total, i == 0 ? coo.ids_total : 0);
    for (const layout::CooEntry& e : parts[i].entries) EXPECT_EQ(e.row / 4, i);
  }
}

TEST(SampleSplitterTest, OneRangeWhenItFits) {
  Batch b;
  b.Resize(4, 0, 1);
  for (int i = 0; i < 4; ++i) {
    b.ids[0].push_back(i);
    b.offsets[0][i + 1] = i + 1;
  }
  layout::PartitionedCoo coo = Build(b, 2, 2, 100);
  SampleSplitter splitter(Options(2, 2, 1, layout::TableLimit{2, 2}));
  EXPECT_EQ(splitter.Plan(coo, 2), 1);
  std::vector<layout::PartitionedCoo> parts(1);
  splitter.Split(coo, 1, parts.data());
  EXPECT_EQ(parts[0].entries.size(), coo.entries.size());
  EXPECT_EQ(parts[0].segment_offsets, coo.segment_offsets);
}

// Random Zipf-like batches over 2 tables (features 0, 2 -> table 0; 1, 3 ->
// table 1), S = 2, N = 4, tight limits on both: the parts cover every entry
// once, keep each segment's order, and every partition fits (no sample
// alone exceeds these limits).
TEST(SampleSplitterTest, PartsCoverTheEntriesInOrderAndFit) {
  for (int trial = 0; trial < 20; ++trial) {
    base::CounterRng rng(trial);
    const int S = 2, N = 4;
    const int64_t B = 32;
    Batch b;
    b.Resize(B, 0, 4);
    for (int f = 0; f < 4; ++f) {
      for (int64_t i = 0; i < B; ++i) {
        const int n = 1 + static_cast<int>(rng.NextBelow(3));
        for (int k = 0; k < n; ++k) {
          const double u = rng.NextDouble();
          b.ids[f].push_back(static_cast<int64_t>(u * u * u * 40));  // hot low ids
        }
        b.offsets[f][i + 1] = static_cast<int64_t>(b.ids[f].size());
      }
    }
    layout::PartitionedCoo coo = Build(b, S, N, 40);
    const layout::TableLimit limit{12, 6};
    SampleSplitter splitter(Options(S, N, 2, limit));
    const int need = splitter.Plan(coo, B / S);
    EXPECT_GT(need, 1) << trial;
    const int parts_n = need + 1;  // one more than needed: the last is empty
    std::vector<layout::PartitionedCoo> parts(parts_n);
    splitter.Split(coo, parts_n, parts.data());
    EXPECT_TRUE(parts.back().entries.empty());
    for (int64_t k = 0; k + 1 < static_cast<int64_t>(coo.segment_offsets.size()); ++k) {
      // Merging the parts' segment k by position in the input gives it back.
      std::vector<size_t> next(parts_n, 0);
      for (int64_t e = coo.segment_offsets[k]; e < coo.segment_offsets[k + 1]; ++e) {
        bool found = false;
        for (int i = 0; i < parts_n && !found; ++i) {
          const layout::PartitionedCoo& p = parts[i];
          const int64_t at = p.segment_offsets[k] + static_cast<int64_t>(next[i]);
          if (at < p.segment_offsets[k + 1] && p.entries[at].row == coo.entries[e].row &&
              p.entries[at].feature == coo.entries[e].feature &&
              p.entries[at].col == coo.entries[e].col) {
            ++next[i];
            found = true;
          }
        }
        ASSERT_TRUE(found) << "trial " << trial << ": entry " << e << " of segment " << k;
      }
      for (int i = 0; i < parts_n; ++i) {
        EXPECT_EQ(static_cast<int64_t>(next[i]),
                  parts[i].segment_offsets[k + 1] - parts[i].segment_offsets[k]);
      }
    }
    for (int i = 0; i < parts_n; ++i) {
      for (const auto& [where, c] : Count(parts[i], S, N)) {
        EXPECT_LE(c.first, limit.max_ids) << "trial " << trial << " part " << i;
        EXPECT_LE(c.second, limit.max_unique_ids) << "trial " << trial << " part " << i;
      }
    }
  }
}

}  // namespace
}  // namespace lemrt::host
