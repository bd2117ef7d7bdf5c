#include "host/preprocess/radix_sort.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

// Against std::sort on the shapes the partition statistics see: sizes around
// the std::sort cut-over, partition keys (table << 48 | row with rows congruent
// mod N), keys over all 64 bits, many duplicates, already sorted input.
TEST(RadixSortKeysTest, MatchesStdSort) {
  std::mt19937_64 rng(5);
  for (size_t n : {0, 1, 2, 63, 64, 65, 166, 1000, 2047, 2048, 20000}) {
    for (int shape = 0; shape < 4; ++shape) {
      std::vector<uint64_t> keys(n);
      for (uint64_t& k : keys) {
        switch (shape) {
          case 0: k = (rng() % 20) << 48 | ((rng() % 200000) * 512 + 37); break;
          case 1: k = rng(); break;
          case 2: k = rng() % 7; break;
          default: k = rng() % 1000; break;
        }
      }
      if (shape == 3) std::sort(keys.begin(), keys.end());
      std::vector<uint64_t> want = keys;
      std::sort(want.begin(), want.end());
      std::vector<uint64_t> scratch(n);
      RadixSortKeys(keys, scratch);
      EXPECT_EQ(keys, want) << "n " << n << " shape " << shape;
    }
  }
}

}  // namespace
}  // namespace lemrt::host
