#include "device/sparsecore/key_sort.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

// Pairs (key, i) with i ascending, keys table << 48 | col like the SparseCore's.
std::vector<KeyIndex> RandomPairs(size_t n, int tables, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<KeyIndex> p(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t t = rng() % tables, c = rng() % cols;
    p[i] = {t << 48 | c, static_cast<int32_t>(i)};
  }
  return p;
}

TEST(SortByKeyTest, MatchesStdSortOnSparseCoreKeys) {
  std::vector<KeyIndex> scratch;
  for (auto [n, tables, cols] : {std::tuple<size_t, int, int64_t>{0, 1, 1},
                                 {1, 1, 1},
                                 {2, 1, 5},
                                 {1000, 1, 50},
                                 {5000, 26, 25000},
                                 {20000, 3, int64_t{1} << 40},
                                 {3000, 1, 1},
                                 {20, 1, 8},
                                 {32, 2, 1000},
                                 {33, 2, 1000}}) {
    std::vector<KeyIndex> p = RandomPairs(n, tables, cols, n + tables);
    std::vector<KeyIndex> want = p;
    std::sort(want.begin(), want.end());
    SortByKey(&p, &scratch);
    EXPECT_EQ(p, want) << "n " << n << " tables " << tables << " cols " << cols;
  }
}

TEST(SortByKeyTest, StableForEqualKeysAndKeepsSortedInput) {
  std::vector<KeyIndex> p = {{5, 3}, {1, 9}, {5, 1}, {1, 2}, {~uint64_t{0}, 0}, {0, 7}};
  std::vector<KeyIndex> scratch;
  SortByKey(&p, &scratch);
  const std::vector<KeyIndex> want = {{0, 7}, {1, 9}, {1, 2}, {5, 3}, {5, 1}, {~uint64_t{0}, 0}};
  EXPECT_EQ(p, want);
  SortByKey(&p, &scratch);
  EXPECT_EQ(p, want);
}

}  // namespace
}  // namespace lemrt::device
