#include "host/input/teacher_hidden.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace lemrt::host {
namespace {

constexpr int kDim = TeacherHidden::kDim;

// The definition, transcribed: each id's normals from its own stream, keyed
// by the whole key list.
TeacherHidden::Vector Transcription(uint64_t seed, int table, const std::vector<int64_t>& ids) {
  constexpr uint64_t kHiddenTag = 0x68696464656eULL;  // "hidden"
  TeacherHidden::Vector sum{};
  for (int64_t id : ids) {
    base::CounterRng rng(base::HashKeys({seed, kHiddenTag, uint64_t(table), uint64_t(id)}));
    const double scale = 0.5 / std::sqrt(1.0 + id / TeacherHidden::kHotScale);
    for (double& x : sum) x += rng.NextNormal() * scale;
  }
  for (double& x : sum) x /= static_cast<double>(ids.size());
  return sum;
}

// Lists of 1 to 200 ids, hot (below the cache), mid and far (up to 10^7).
std::vector<std::vector<int64_t>> IdLists(int count, uint64_t salt) {
  std::vector<std::vector<int64_t>> lists(count);
  for (int i = 0; i < count; ++i) {
    base::CounterRng rng(base::HashKeys({salt, uint64_t(i)}));
    lists[i].resize(1 + rng.NextBelow(i % 4 == 0 ? 200 : 20));
    for (int64_t& id : lists[i]) {
      const uint64_t kind = rng.NextBelow(3);
      id = static_cast<int64_t>(rng.NextBelow(kind == 0 ? 5000 : kind == 1 ? 100000 : 10000000));
    }
  }
  return lists;
}

TEST(TeacherHiddenTest, ExactMeansAreTheDefinitionCachedOrNot) {
  const uint64_t seed = 11;
  const std::vector<int64_t> vocab = {10000000, 10000000};
  const TeacherHidden plain(seed, vocab, {false, false}, 4096);
  const TeacherHidden cached(seed, vocab, {false, true}, 4096);
  for (const std::vector<int64_t>& ids : IdLists(300, 1)) {
    const std::array<double, kDim> want = Transcription(seed, 1, ids);
    std::array<double, kDim> a, b;
    plain.MeanExact(1, ids.data(), static_cast<int>(ids.size()), a.data());
    cached.MeanExact(1, ids.data(), static_cast<int>(ids.size()), b.data());
    for (int d = 0; d < kDim; ++d) {
      EXPECT_EQ(a[d], b[d]) << "caching changed a value";
      // The compiler may fuse the transcription's multiply-adds differently.
      EXPECT_NEAR(a[d], want[d], 1e-14);
    }
  }
}

// The approximate means lie within their bound of the exact ones, the bound
// is needed (the sums differ) and tight (about 1e-12 of the terms, not a
// blanket margin).
TEST(TeacherHiddenTest, ApproximateMeansAreWithinTheirBound) {
  const uint64_t seed = 5;
  const std::vector<int64_t> vocab = {10000000};
  for (const int64_t cached_ids : {int64_t{0}, int64_t{4096}}) {
    const TeacherHidden hidden(seed, vocab, {true}, cached_ids);
    int differ = 0;
    double largest_share = 0;  // of the bound taken by the error
    for (const std::vector<int64_t>& ids : IdLists(3000, 2)) {
      const int n = static_cast<int>(ids.size());
      std::array<double, kDim> exact, approximate, bound;
      hidden.MeanExact(0, ids.data(), n, exact.data());
      hidden.MeanApproximate(0, ids.data(), n, approximate.data(), bound.data());
      double terms = 0;  // an upper estimate of the terms' mean absolute value
      for (int64_t id : ids) terms += 8 * 0.5 * TeacherHidden::Damping(id) / n;
      for (int d = 0; d < kDim; ++d) {
        const double error = std::abs(approximate[d] - exact[d]);
        ASSERT_LE(error, bound[d])
            << "cached " << cached_ids << ", " << n << " ids, coordinate " << d;
        EXPECT_LT(bound[d], 1e-10 * terms);
        differ += error > 0;
        largest_share = std::max(largest_share, error / bound[d]);
      }
    }
    EXPECT_GT(differ, 100) << "cached " << cached_ids;
    EXPECT_GT(largest_share, 1e-3) << "cached " << cached_ids;
  }
}

// The pair term of approximate means lies within its bound of the exact
// means' term; the bound is needed and tight.
TEST(TeacherHiddenTest, PairTermIsWithinItsBound) {
  const uint64_t seed = 9;
  const TeacherHidden hidden(seed, {100000, 10000000}, {true, false}, 4096);
  const std::vector<std::vector<int64_t>> lists = IdLists(4000, 3);
  int differ = 0;
  double largest_share = 0;
  for (size_t i = 0; i + 4 <= lists.size(); i += 4) {
    for (const int num_pairs : {1, 2}) {
      std::array<TeacherHidden::Vector, 4> exact, approximate, bound;
      for (int f = 0; f < 2 * num_pairs; ++f) {
        const std::vector<int64_t>& ids = lists[i + f];
        const int table = f % 2;
        std::vector<int64_t> in_vocab(ids);
        for (int64_t& id : in_vocab) id %= table == 0 ? 100000 : 10000000;
        hidden.MeanExact(table, in_vocab.data(), static_cast<int>(ids.size()), exact[f].data());
        hidden.MeanApproximate(table, in_vocab.data(), static_cast<int>(ids.size()),
                               approximate[f].data(), bound[f].data());
      }
      const double error = std::abs(TeacherHidden::PairTerm(approximate.data(), num_pairs) -
                                    TeacherHidden::PairTerm(exact.data(), num_pairs));
      const double term_bound =
          TeacherHidden::PairTermBound(approximate.data(), bound.data(), num_pairs);
      ASSERT_LE(error, term_bound) << "lists " << i << ", " << num_pairs << " pairs";
      EXPECT_LT(term_bound, 1e-10);
      differ += error > 0;
      largest_share = std::max(largest_share, error / term_bound);
    }
  }
  EXPECT_GT(differ, 100);
  EXPECT_GT(largest_share, 1e-5);
}

// Normals past NormalFloats' trusted range (u1 > 0.99: about 4% of ids
// have one) are libm's: a single id's coordinate from one is exact.
TEST(TeacherHiddenTest, UntrustedNormalsAreLibms) {
  constexpr uint64_t kSeed = 3;
  constexpr uint64_t kHiddenTag = 0x68696464656eULL;
  const TeacherHidden hidden(kSeed, {10000000}, {false}, 0);
  int checked = 0;
  for (int64_t id = 5000; checked < 200; ++id) {
    base::CounterRng rng(base::HashKeys({kSeed, kHiddenTag, 0, uint64_t(id)}));
    std::array<bool, kDim> untrusted;
    for (int d = 0; d < kDim; ++d) {
      untrusted[d] = rng.NextDouble() > base::NormalFloats::kLargestU1;
      rng.NextDouble();
    }
    if (std::none_of(untrusted.begin(), untrusted.end(), [](bool b) { return b; })) continue;
    std::array<double, kDim> exact, approximate, bound;
    hidden.MeanExact(0, &id, 1, exact.data());
    hidden.MeanApproximate(0, &id, 1, approximate.data(), bound.data());
    for (int d = 0; d < kDim; ++d) {
      if (untrusted[d]) {
        EXPECT_EQ(approximate[d], exact[d]) << "id " << id;
      }
      EXPECT_LE(std::abs(approximate[d] - exact[d]), bound[d]) << "id " << id;
    }
    ++checked;
  }
}

}  // namespace
}  // namespace lemrt::host
