#include "base/id_permutation.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

TEST(IdPermutationTest, IdentityByDefaultAndForTinySizes) {
  const IdPermutation none;
  EXPECT_TRUE(none.identity());
  EXPECT_EQ(none.Forward(12345), 12345);
  EXPECT_EQ(none.Inverse(12345), 12345);
  EXPECT_TRUE(IdPermutation(0, 7).identity());
  EXPECT_TRUE(IdPermutation(1, 7).identity());
  EXPECT_EQ(IdPermutation(1, 7).Forward(0), 0);
  EXPECT_FALSE(IdPermutation(2, 7).identity());
}

// Every size from 2 to 300 (powers of two, one above and one below them)
// and a few keys: Forward is a bijection of [0, size) and Inverse undoes it.
TEST(IdPermutationTest, BijectionWithInverseForEverySmallSize) {
  for (int64_t size = 2; size <= 300; ++size) {
    for (uint64_t key : {uint64_t{0}, uint64_t{1}, uint64_t{0xdeadbeef}}) {
      const IdPermutation p(size, key);
      std::vector<char> hit(size, 0);
      for (int64_t j = 0; j < size; ++j) {
        const int64_t f = p.Forward(j);
        ASSERT_GE(f, 0) << size;
        ASSERT_LT(f, size) << size;
        EXPECT_EQ(hit[f], 0) << "size " << size << " key " << key << ": " << f << " twice";
        hit[f] = 1;
        EXPECT_EQ(p.Inverse(f), j) << size;
      }
    }
  }
}

TEST(IdPermutationTest, LargeSizesRoundTrip) {
  for (int64_t size : {int64_t{1000003}, int64_t{1} << 40, (int64_t{1} << 48) - 5}) {
    const IdPermutation p(size, 42);
    for (int64_t j : {int64_t{0}, int64_t{1}, size / 2, size - 2, size - 1}) {
      const int64_t f = p.Forward(j);
      EXPECT_GE(f, 0);
      EXPECT_LT(f, size);
      EXPECT_EQ(p.Inverse(f), j) << size << " " << j;
    }
  }
}

TEST(IdPermutationTest, DependsOnTheKey) {
  const IdPermutation a(1000, 1), b(1000, 2);
  int same = 0;
  for (int64_t j = 0; j < 1000; ++j) same += a.Forward(j) == b.Forward(j);
  EXPECT_LT(same, 20);  // about 1 expected for independent permutations
  EXPECT_EQ(IdPermutation(1000, 1).Forward(17), a.Forward(17));  // deterministic
}

// What shuffling is for: the ids 0, N, 2N, ... (all on SparseCore 0 under
// plain mod sharding) and the lowest ids spread over the N SparseCores.
TEST(IdPermutationTest, SpreadsStridedAndContiguousIdsOverSparseCores) {
  constexpr int kN = 16;
  const IdPermutation p(1 << 20, 9);
  std::vector<int> strided(kN, 0), low(kN, 0);
  for (int64_t k = 0; k < 1600; ++k) {
    ++strided[p.Forward(k * kN) % kN];
    ++low[p.Forward(k) % kN];
  }
  // 100 per SparseCore expected; a binomial(1600, 1/16) is within 100 +- 40
  // with probability > 0.9999 per SparseCore.
  for (int sc = 0; sc < kN; ++sc) {
    EXPECT_GT(strided[sc], 60) << sc;
    EXPECT_LT(strided[sc], 140) << sc;
    EXPECT_GT(low[sc], 60) << sc;
    EXPECT_LT(low[sc], 140) << sc;
  }
}

}  // namespace
}  // namespace lemrt::base
