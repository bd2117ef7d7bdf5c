#include "device/sparsecore/table_major_runs.h"

#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using layout::CooEntry;

// (segment, feature, table, begin, end, floats) of each run, in order.
using RunTuple = std::tuple<int32_t, int32_t, int32_t, int64_t, int64_t, int64_t>;

std::vector<RunTuple> Runs(const std::vector<std::vector<CooEntry>>& segments,
                           const std::vector<int>& dims, bool feature_major) {
  std::vector<std::span<const CooEntry>> spans(segments.begin(), segments.end());
  std::vector<SegmentRun> runs, scratch;
  std::vector<int64_t> count;
  TableMajorRuns(spans, dims, feature_major, &runs, &scratch, &count);
  std::vector<RunTuple> out;
  for (const SegmentRun& r : runs) {
    out.emplace_back(r.segment, r.feature, r.table, r.begin, r.end, r.floats);
  }
  return out;
}

// Features 0 and 2 share table 1 (dim 4); feature 1 is table 0 (dim 2).
// Entries {col, row (sample), feature, table, gain}, sorted by (feature, row).
const std::vector<std::vector<CooEntry>> kSegments = {{{5, 0, 0, 1, 1},
                                                       {6, 0, 0, 1, 1},
                                                       {5, 1, 0, 1, 1},  // feature 0: 2 groups
                                                       {3, 0, 1, 0, 1},
                                                       {3, 2, 1, 0, 1},   // feature 1: 2 groups
                                                       {9, 1, 2, 1, 1}},  // feature 2: 1 group
                                                      {},
                                                      {{1, 0, 1, 0, 1},
                                                       {2, 0, 1, 0, 1},  // feature 1: 1 group
                                                       {7, 3, 2, 1, 1},
                                                       {8, 4, 2, 1, 1}}};  // feature 2: 2 groups
const std::vector<int> kDims = {2, 4};

TEST(TableMajorRunsTest, TableThenSegmentOrderWithPartialOffsets) {
  // Segment 0's partials: feature 0 at 0 (2 groups x 4), feature 1 at 8
  // (2 x 2), feature 2 at 12; segment 2's: feature 1 at 0, feature 2 at 2.
  const std::vector<RunTuple> want = {{0, 1, 0, 3, 5, 8},
                                      {2, 1, 0, 0, 2, 0},  // table 0
                                      {0, 0, 1, 0, 3, 0},
                                      {0, 2, 1, 5, 6, 12},
                                      {2, 2, 1, 2, 4, 2}};  // table 1
  EXPECT_EQ(Runs(kSegments, kDims, /*feature_major=*/false), want);
}

TEST(TableMajorRunsTest, FeatureMajorWithinATable) {
  // Table 1's runs by (feature, segment): the same as above here, as each
  // segment's features ascend; a table shared by features 0 and 2 across
  // two segments orders feature 0 of both segments first.
  std::vector<std::vector<CooEntry>> segments = {{{5, 0, 0, 1, 1}, {9, 1, 2, 1, 1}},
                                                 {{6, 0, 0, 1, 1}, {7, 3, 2, 1, 1}}};
  const std::vector<RunTuple> entry_order = {
      {0, 0, 1, 0, 1, 0}, {0, 2, 1, 1, 2, 4}, {1, 0, 1, 0, 1, 0}, {1, 2, 1, 1, 2, 4}};
  const std::vector<RunTuple> feature_major = {
      {0, 0, 1, 0, 1, 0}, {1, 0, 1, 0, 1, 0}, {0, 2, 1, 1, 2, 4}, {1, 2, 1, 1, 2, 4}};
  EXPECT_EQ(Runs(segments, kDims, false), entry_order);
  EXPECT_EQ(Runs(segments, kDims, true), feature_major);
}

TEST(TableMajorRunsTest, EmptySegments) {
  EXPECT_TRUE(Runs({}, kDims, false).empty());
  EXPECT_TRUE(Runs({{}, {}}, kDims, true).empty());
}

}  // namespace
}  // namespace lemrt::device
