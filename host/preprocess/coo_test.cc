#include "host/preprocess/coo.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

using ::testing::HasSubstr;

// Builds a one-feature batch from per-sample id lists.
Batch OneFeatureBatch(const std::vector<std::vector<int64_t>>& samples) {
  Batch b;
  b.Resize(static_cast<int64_t>(samples.size()), 1, 1);
  for (size_t i = 0; i < samples.size(); ++i) {
    b.ids[0].insert(b.ids[0].end(), samples[i].begin(), samples[i].end());
    b.offsets[0][i + 1] = static_cast<int64_t>(b.ids[0].size());
  }
  return b;
}

CooOptions Options(int S, int N, config::TableConfig::Combiner combiner, int64_t vocab = 100) {
  CooOptions o;
  o.local_sparse_cores = S;
  o.total_sparse_cores = N;
  o.features.push_back(FeatureSpec{.table = 0,
                                   .vocab_size = vocab,
                                   .combiner = combiner,
                                   .name = "",
                                   .table_name = "",
                                   .sc_shift = 0});
  return o;
}

// The reference's section 3 example: samples [A], [A, B, C], [B, B, D].
TEST(CooTest, ReferenceExampleDedupWithinSample) {
  const int64_t A = 10, B = 11, C = 12, D = 13;
  Batch batch = OneFeatureBatch({{A}, {A, B, C}, {B, B, D}});
  CooBuilder builder(Options(1, 1, config::TableConfig::SUM));
  layout::PartitionedCoo coo;
  ASSERT_TRUE(builder.Build(batch, &coo).ok());
  std::vector<int32_t> rows;
  std::vector<int64_t> cols;
  std::vector<float> gains;
  for (const layout::CooEntry& e : coo.entries) {
    rows.push_back(e.row);
    cols.push_back(e.col);
    gains.push_back(e.gain);
  }
  EXPECT_EQ(rows, (std::vector<int32_t>{0, 1, 1, 1, 2, 2}));
  EXPECT_EQ(cols, (std::vector<int64_t>{A, A, B, C, B, D}));
  EXPECT_EQ(gains, (std::vector<float>{1, 1, 1, 1, 2, 1}));  // duplicate B merged
  EXPECT_EQ(coo.ids_total, 7);
  EXPECT_EQ(coo.ids_after_dedup, 6);
}

TEST(CooTest, CombinerGains) {
  Batch batch = OneFeatureBatch({{1, 1, 2, 3}});
  layout::PartitionedCoo coo;
  CooBuilder mean(Options(1, 1, config::TableConfig::MEAN));
  ASSERT_TRUE(mean.Build(batch, &coo).ok());
  EXPECT_FLOAT_EQ(coo.entries[0].gain, 0.5f);
  EXPECT_FLOAT_EQ(coo.entries[1].gain, 0.25f);
  CooBuilder sqrtn(Options(1, 1, config::TableConfig::SQRTN));
  ASSERT_TRUE(sqrtn.Build(batch, &coo).ok());
  EXPECT_FLOAT_EQ(coo.entries[0].gain, 1.0f);  // 2 / sqrt(4)
  EXPECT_FLOAT_EQ(coo.entries[2].gain, 0.5f);
}

// Every entry lands in segment (col % N, row / (B / S)), sorted inside it, and
// nothing is lost.
TEST(CooTest, ModShardingOverAllSparseCores) {
  const int S = 2, N = 6;
  std::vector<std::vector<int64_t>> samples;
  for (int i = 0; i < 8; ++i) {
    std::vector<int64_t> ids;
    for (int k = 0; k < 1 + i % 4; ++k) ids.push_back((i * 37 + k * 11) % 50);
    samples.push_back(ids);
  }
  Batch batch = OneFeatureBatch(samples);
  CooBuilder builder(Options(S, N, config::TableConfig::SUM, 50));
  layout::PartitionedCoo coo;
  ASSERT_TRUE(builder.Build(batch, &coo).ok());
  std::map<std::pair<int64_t, int64_t>, float> seen;
  for (int d = 0; d < N; ++d) {
    for (int s = 0; s < S; ++s) {
      auto seg = coo.segment(d, s);
      for (size_t k = 0; k < seg.size(); ++k) {
        EXPECT_EQ(seg[k].col % N, d);
        EXPECT_EQ(seg[k].row / 4, s);
        if (k > 0) {
          EXPECT_LT(std::tie(seg[k - 1].feature, seg[k - 1].row, seg[k - 1].col),
                    std::tie(seg[k].feature, seg[k].row, seg[k].col));
        }
        seen[{seg[k].row, seg[k].col}] += seg[k].gain;
      }
    }
  }
  std::map<std::pair<int64_t, int64_t>, float> expected;
  for (size_t i = 0; i < samples.size(); ++i) {
    for (int64_t id : samples[i]) expected[{static_cast<int64_t>(i), id}] += 1;
  }
  EXPECT_EQ(seen, expected);
}

TEST(CooTest, EmptyBatchAndEmptySamples) {
  layout::PartitionedCoo coo;
  CooBuilder builder(Options(2, 4, config::TableConfig::SUM));
  ASSERT_TRUE(builder.Build(OneFeatureBatch({}), &coo).ok());
  EXPECT_TRUE(coo.entries.empty());
  ASSERT_TRUE(builder.Build(OneFeatureBatch({{}, {}}), &coo).ok());
  EXPECT_TRUE(coo.entries.empty());
  EXPECT_EQ(coo.segment_offsets.size(), 9u);
}

TEST(CooTest, IdOutOfRangeNamesFeatureAndSample) {
  CooBuilder builder(Options(1, 1, config::TableConfig::SUM, 10));
  layout::PartitionedCoo coo;
  absl::Status st = builder.Build(OneFeatureBatch({{1}, {3, 10}}), &coo);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("id 10 of feature 0 (table 0) in sample 1"));
  EXPECT_THAT(st.message(), HasSubstr("[0, 10)"));
}

// With the id bound check off, ids are wrapped into the vocabulary (mod) and
// then deduplicated like any other id.
TEST(CooTest, IdBoundCheckOffWrapsIds) {
  CooOptions o = Options(1, 1, config::TableConfig::SUM, 10);
  o.id_bound_check = false;
  CooBuilder builder(o);
  layout::PartitionedCoo coo;
  ASSERT_TRUE(builder.Build(OneFeatureBatch({{13, 3, -7}}), &coo).ok());
  ASSERT_EQ(coo.entries.size(), 1u);
  EXPECT_EQ(coo.entries[0].col, 3);
  EXPECT_EQ(coo.entries[0].gain, 3.0f);
}

TEST(CooTest, MaxIdsPerChipPerSampleObservedVsLimit) {
  CooOptions o = Options(1, 1, config::TableConfig::SUM);
  o.max_ids_per_chip_per_sample = 2;
  CooBuilder builder(o);
  layout::PartitionedCoo coo;
  EXPECT_TRUE(builder.Build(OneFeatureBatch({{1, 1, 1, 2}}), &coo).ok());  // 2 after dedup
  absl::Status st = builder.Build(OneFeatureBatch({{1, 2, 3}}), &coo);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("has 3 ids"));
  EXPECT_THAT(st.message(), HasSubstr("max_ids_per_chip_per_sample = 2"));
}


// The builder against a plain transcription of the contract: per (feature,
// sample) a map of ids to counts, each distinct id one entry in segment
// ((id + sc_shift) % N, source SC), segments in [dest][source] order, entries
// in (feature, row, col) order, gains count x combiner weight (bit for bit),
// partition counts (ids, distinct ids per table, source and destination) from
// sets. Batches mix empty samples, short samples, samples far longer than N
// (the sorted path), samples whose ids all share one destination in
// descending order (the insertion path's worst case), hot ids, negative and
// out-of-range ids (bound check off), features sharing a table, stacking
// shifts, and N a power of two or not; each batch again with per-id weights
// on some features (gains: per (feature, sample) the weights of an id summed
// in input order x the combiner's norm over the sample's weights, also bit
// for bit).
struct Reference {
  std::vector<layout::CooEntry> entries;
  std::vector<int64_t> segment_offsets;
  std::vector<layout::PartitionCount> counts;  // [(table * S + s) * N + d]
  int64_t ids_total = 0;
};

Reference PlainReference(const Batch& batch, const CooOptions& o, int num_tables) {
  const int S = o.local_sparse_cores, N = o.total_sparse_cores;
  const int64_t per_sc = batch.num_samples / S;
  std::vector<std::vector<layout::CooEntry>> segments(int64_t{N} * S);
  Reference r;
  std::vector<std::set<int64_t>> distinct(int64_t{num_tables} * S * N);
  r.counts.assign(distinct.size(), layout::PartitionCount{});
  for (int s = 0; s < S; ++s) {
    for (int f = 0; f < static_cast<int>(o.features.size()); ++f) {
      const FeatureSpec& spec = o.features[f];
      for (int64_t row = s * per_sc; row < (s + 1) * per_sc; ++row) {
        std::map<int64_t, double> count;  // the id's count, or its weights' sum
        const std::span<const int64_t> ids = batch.SampleIds(f, row);
        const std::span<const float> weights = batch.SampleWeights(f, row);
        double total = 0, squares = 0;  // of the weights
        for (size_t k = 0; k < ids.size(); ++k) {
          int64_t id = ids[k];
          if (!o.id_bound_check) id = ((id % spec.vocab_size) + spec.vocab_size) % spec.vocab_size;
          if (weights.empty()) {
            count[id] += 1;
          } else {
            count[id] += weights[k];
            total += weights[k];
            squares += static_cast<double>(weights[k]) * weights[k];
          }
        }
        r.ids_total += static_cast<int64_t>(ids.size());
        const double n = static_cast<double>(ids.size());
        double norm = 1.0;
        if (weights.empty()) {
          norm = spec.combiner == config::TableConfig::MEAN    ? 1.0 / n
                 : spec.combiner == config::TableConfig::SQRTN ? 1.0 / std::sqrt(n)
                                                               : 1.0;
        } else if (spec.combiner == config::TableConfig::MEAN) {
          norm = total != 0 ? 1.0 / total : 0.0;
        } else if (spec.combiner == config::TableConfig::SQRTN) {
          norm = squares > 0 ? 1.0 / std::sqrt(squares) : 0.0;
        }
        for (const auto& [col, c] : count) {
          const int d = static_cast<int>((col % N + spec.sc_shift) % N);
          segments[int64_t{d} * S + s].push_back(
              {col, static_cast<int32_t>(row), f, spec.table, static_cast<float>(c * norm)});
          const int64_t p = (int64_t{spec.table} * S + s) * N + d;
          ++r.counts[p].ids;
          distinct[p].insert(col);
        }
      }
    }
  }
  for (size_t p = 0; p < distinct.size(); ++p) {
    r.counts[p].unique_ids = static_cast<int32_t>(distinct[p].size());
  }
  r.segment_offsets.push_back(0);
  for (const auto& seg : segments) {
    r.entries.insert(r.entries.end(), seg.begin(), seg.end());
    r.segment_offsets.push_back(static_cast<int64_t>(r.entries.size()));
  }
  return r;
}

std::tuple<int64_t, int32_t, int32_t, int32_t, uint32_t> Fields(const layout::CooEntry& e) {
  return {e.col, e.row, e.feature, e.table, std::bit_cast<uint32_t>(e.gain)};
}

TEST(CooTest, RandomBatchesMatchPlainReference) {
  std::mt19937_64 rng(23);
  struct Shape {
    int S, N;
    bool bound_check;
    int64_t big_vocab;  // table 1's (2^61: 16-byte staging records, plain division)
  };
  for (const Shape& shape :
       {Shape{1, 1, true, 100000000}, Shape{1, 4, true, 100000000},
        Shape{2, 6, false, 100000000}, Shape{4, 512, true, 100000000},
        Shape{2, 12, true, 100000000}, Shape{4, 64, false, 100000000},
        Shape{3, 3, true, 100000000}, Shape{2, 6, true, int64_t{1} << 61},
        Shape{2, 8, false, int64_t{1} << 61}}) {
    const int S = shape.S, N = shape.N;
    CooOptions o;
    o.local_sparse_cores = S;
    o.total_sparse_cores = N;
    o.max_ids_per_chip_per_sample = 1 << 30;
    o.id_bound_check = shape.bound_check;
    o.count_partitions = true;
    const int num_tables = 3;
    o.num_tables = num_tables + 1;  // table 3 has no feature
    const int64_t vocab[] = {1000, shape.big_vocab, 7};
    const config::TableConfig::Combiner combiners[] = {
        config::TableConfig::SUM, config::TableConfig::MEAN, config::TableConfig::SQRTN};
    int shift[num_tables];  // a table's rotation in its stack
    for (int& k : shift) k = static_cast<int>(rng() % N);
    for (int f = 0; f < 5; ++f) {
      const int t = f % num_tables;
      o.features.push_back(FeatureSpec{.table = t,
                                       .vocab_size = vocab[t],
                                       .combiner = combiners[f % 3],
                                       .name = "",
                                       .table_name = "",
                                       .sc_shift = shift[t]});
    }
    const int64_t per_sc = N >= 512 ? 12 : 40;
    Batch batch;
    batch.Resize(per_sc * S, 1, static_cast<int>(o.features.size()));
    for (int f = 0; f < batch.num_features(); ++f) {
      const int64_t v = o.features[f].vocab_size;
      for (int64_t i = 0; i < batch.num_samples; ++i) {
        const int kind = static_cast<int>(rng() % 8);
        const int64_t len = kind == 0   ? 0
                            : kind <= 3 ? static_cast<int64_t>(rng() % 5)
                            : kind <= 5 ? static_cast<int64_t>(rng() % (4 * N + 60))
                                        : static_cast<int64_t>(rng() % (12 * N + 300));
        const int64_t base = static_cast<int64_t>(rng() % static_cast<uint64_t>(v));
        for (int64_t k = 0; k < len; ++k) {
          int64_t id;
          if (kind == 7) {
            id = (v - 1 - k * N - base % N) % v;  // one destination, descending
            if (id < 0) id += v;
          } else if (rng() % 4 == 0) {
            id = static_cast<int64_t>(rng() % 3);  // hot ids
          } else {
            id = static_cast<int64_t>(rng() % static_cast<uint64_t>(v));
          }
          if (!shape.bound_check && v < (int64_t{1} << 40) && rng() % 5 == 0) {
            id += (rng() % 2 ? -1 : 1) * v * static_cast<int64_t>(1 + rng() % 3);
          } else if (!shape.bound_check && rng() % 7 == 0) {
            id -= v;  // negative: wrapped back
          }
          batch.ids[f].push_back(id);
        }
        batch.offsets[f][i + 1] = static_cast<int64_t>(batch.ids[f].size());
      }
    }
    // The same ids weighted: features 1, 2 and 4 (MEAN, SQRTN, MEAN; tables
    // 1, 2, 1) get weights, feature 0 (SUM, table 0) about every other
    // shape, feature 3 (SUM, table 0) never. A sample's weights are all 0,
    // all 1, alternating +-0.5 (MEAN's sum 0) or random in [-2, 3).
    Batch weighted = batch;
    for (int f : {0, 1, 2, 4}) {
      if (f == 0 && rng() % 2 == 0) continue;
      std::vector<float>& w = weighted.weights[f];
      for (int64_t i = 0; i < weighted.num_samples; ++i) {
        const int kind = static_cast<int>(rng() % 6);
        for (int64_t k = weighted.offsets[f][i]; k < weighted.offsets[f][i + 1]; ++k) {
          w.push_back(kind == 0   ? 0.0f
                      : kind == 1 ? 1.0f
                      : kind == 2 ? (k % 2 ? 0.5f : -0.5f)
                                  : std::uniform_real_distribution<float>(-2.0f, 3.0f)(rng));
        }
      }
    }
    // One builder for plain, weighted, plain again: its buffers serve both
    // record widths.
    CooBuilder builder(o);
    layout::PartitionedCoo coo;
    for (const Batch* input : {&batch, &weighted, &batch}) {
      const bool has_weights = input == &weighted;
      const Reference want = PlainReference(*input, o, o.num_tables);
      for (int rep = 0; rep < 2; ++rep) {  // the second build reuses every buffer
        ASSERT_TRUE(builder.Build(*input, &coo).ok());
        const std::string where =
            absl::StrFormat("S %d N %d rep %d%s", S, N, rep, has_weights ? " weighted" : "");
        EXPECT_EQ(coo.ids_total, want.ids_total) << where;
        EXPECT_EQ(coo.ids_after_dedup, static_cast<int64_t>(want.entries.size())) << where;
        EXPECT_EQ(coo.segment_offsets, want.segment_offsets) << where;
        ASSERT_EQ(coo.entries.size(), want.entries.size()) << where;
        for (size_t i = 0; i < want.entries.size(); ++i) {
          ASSERT_EQ(Fields(coo.entries[i]), Fields(want.entries[i])) << where << " entry " << i;
        }
        // Counted only while every table's bitmap fits (not for vocabulary
        // 1e8 over N <= 5); PlanLocal counts from the keys then.
        if ((shape.big_vocab + N - 1) / N > CooBuilder::kMaxCountedRowsPerTable) {
          EXPECT_TRUE(coo.table_partition_counts.empty()) << where;
          continue;
        }
        ASSERT_EQ(coo.table_partition_counts.size(), want.counts.size()) << where;
        for (size_t p = 0; p < want.counts.size(); ++p) {
          EXPECT_EQ(coo.table_partition_counts[p].ids, want.counts[p].ids) << where << " p " << p;
          EXPECT_EQ(coo.table_partition_counts[p].unique_ids, want.counts[p].unique_ids)
              << where << " p " << p;
        }
      }
    }
  }
}

// Weighted ids (the COO values): each entry's gain against a plain map of
// (sample, id) -> summed weight x the combiner's norm over the sample's
// weights; weights of 1 give the unweighted gains bit for bit.
TEST(CooTest, WeightedGainsMatchAPlainReference) {
  const std::vector<std::vector<int64_t>> ids = {{5, 3, 5, 9}, {2}, {7, 7}, {}};
  const std::vector<std::vector<float>> weights = {{0.5f, 2.0f, 1.5f, -1.0f}, {3.0f}, {0, 0}, {}};
  for (const auto combiner :
       {config::TableConfig::SUM, config::TableConfig::MEAN, config::TableConfig::SQRTN}) {
    SCOPED_TRACE(config::TableConfig::Combiner_Name(combiner));
    Batch batch = OneFeatureBatch(ids);
    for (const auto& w : weights) batch.weights[0].insert(batch.weights[0].end(), w.begin(), w.end());
    CooBuilder builder(Options(2, 3, combiner, 10));
    layout::PartitionedCoo coo;
    ASSERT_TRUE(builder.Build(batch, &coo).ok());
    std::map<std::pair<int, int64_t>, double> expected;
    for (size_t i = 0; i < ids.size(); ++i) {
      double total = 0, squares = 0;
      for (float w : weights[i]) total += w, squares += double(w) * w;
      const double norm = combiner == config::TableConfig::MEAN    ? (total != 0 ? 1 / total : 0)
                          : combiner == config::TableConfig::SQRTN ? (squares > 0 ? 1 / std::sqrt(squares) : 0)
                                                                   : 1;
      for (size_t k = 0; k < ids[i].size(); ++k) {
        expected[{static_cast<int>(i), ids[i][k]}] += weights[i][k] * norm;
      }
    }
    ASSERT_EQ(coo.entries.size(), expected.size());
    for (const layout::CooEntry& e : coo.entries) {
      const auto it = expected.find({e.row, e.col});
      ASSERT_NE(it, expected.end()) << e.row << " " << e.col;
      EXPECT_NEAR(e.gain, it->second, 1e-6) << e.row << " " << e.col;
    }
    EXPECT_EQ(coo.ids_total, 7);
  }
  // All-one weights give exactly the unweighted gains.
  Batch plain = OneFeatureBatch(ids);
  Batch ones = OneFeatureBatch(ids);
  ones.weights[0].assign(ones.ids[0].size(), 1.0f);
  for (const auto combiner :
       {config::TableConfig::SUM, config::TableConfig::MEAN, config::TableConfig::SQRTN}) {
    layout::PartitionedCoo a, b;
    CooBuilder ba(Options(2, 3, combiner, 10)), bb(Options(2, 3, combiner, 10));
    ASSERT_TRUE(ba.Build(plain, &a).ok());
    ASSERT_TRUE(bb.Build(ones, &b).ok());
    ASSERT_EQ(a.entries.size(), b.entries.size());
    for (size_t i = 0; i < a.entries.size(); ++i) {
      EXPECT_EQ(a.entries[i].col, b.entries[i].col);
      EXPECT_EQ(a.entries[i].gain, b.entries[i].gain);
    }
    EXPECT_EQ(a.segment_offsets, b.segment_offsets);
  }
}

TEST(CooTest, WeightedIdOutOfRangeIsAnError) {
  Batch batch = OneFeatureBatch({{4, 12}});
  batch.weights[0] = {1.0f, 1.0f};
  CooBuilder builder(Options(1, 1, config::TableConfig::SUM, 10));
  layout::PartitionedCoo coo;
  const absl::Status st = builder.Build(batch, &coo);
  EXPECT_THAT(st.message(), HasSubstr("id 12"));
}

TEST(CooTest, WeightsNotOnePerIdAreAnError) {
  Batch batch = OneFeatureBatch({{4, 5}, {6}});
  batch.weights[0] = {1.0f, 2.0f};
  CooBuilder builder(Options(1, 1, config::TableConfig::SUM, 10));
  layout::PartitionedCoo coo;
  const absl::Status st = builder.Build(batch, &coo);
  EXPECT_THAT(st.message(), HasSubstr("has 2 weights for 3 ids"));
}

}  // namespace
}  // namespace lemrt::host
