#include "base/power_floor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace lemrt::base {
namespace {

double Reference(double b, double p) { return std::floor(std::pow(b, p)); }

// Every base's floor through FloorAll (blocks of 64 and a remainder, as the
// synthetic source calls it) against pow's.
void ExpectFloorsOfPow(const PowerFloor& floor_of, double p, const std::vector<double>& bases) {
  std::vector<double> floors(bases.size());
  floor_of.FloorAll(bases.data(), floors.data(), static_cast<int>(bases.size()));
  for (size_t i = 0; i < bases.size(); ++i) {
    ASSERT_EQ(floors[i], Reference(bases[i], p)) << "p " << p << " b " << bases[i];
  }
}

// One base's floor through FloorAll.
double FloorOfOne(const PowerFloor& floor_of, double b) {
  double floor = 0;
  floor_of.FloorAll(&b, &floor, 1);
  return floor;
}

// The Zipf draw's base 1 + u x span over u in [0, 1) for exponent s (a
// float, as in the config) and vocabulary v: span = (v + 1)^(1 - s) - 1,
// power 1 / (1 - s).
struct Zipf {
  double power;
  double b_min;
  double b_max;
};

Zipf ZipfOf(float s, double v) {
  const double span = std::pow(v + 1, 1 - static_cast<double>(s)) - 1;
  return {1 / (1 - static_cast<double>(s)), std::min(1.0, 1 + span), std::max(1.0, 1 + span)};
}

const std::vector<float> kExponents = {1.05f, 1.1f, 1.2f, 1.3f, 0.5f, 0.75f, 2.0f, 1.001f};

TEST(PowerFloorTest, ApproximatesWhereTheRangeAllows) {
  const Zipf z = ZipfOf(1.05f, 1e6);
  EXPECT_TRUE(PowerFloor(z.power, z.b_min, z.b_max).approximates());
  EXPECT_TRUE(PowerFloor(-20, 0.5, 1).approximates());
  EXPECT_TRUE(PowerFloor(2.5, 1, 1000).approximates());
  EXPECT_FALSE(PowerFloor(-20, 0, 1).approximates());
  EXPECT_FALSE(PowerFloor(-20, 1e-310, 1).approximates());  // subnormal
  EXPECT_FALSE(PowerFloor(2, 1, INFINITY).approximates());
  EXPECT_FALSE(PowerFloor(NAN, 0.5, 1).approximates());
  EXPECT_FALSE(PowerFloor(-2000, 0.5, 1).approximates());  // 2^2000
  EXPECT_LT(PowerFloor(z.power, z.b_min, z.b_max).bound(), 1e-12);
}

// The approximation holds its bound with room: the largest relative error
// seen against pow over each Zipf range is under an eighth of it.
TEST(PowerFloorTest, ApproximationStaysWellInsideItsBound) {
  for (float s : kExponents) {
    for (double v : {10.0, 1e6, 1e9}) {
      const Zipf z = ZipfOf(s, v);
      const PowerFloor floor_of(z.power, z.b_min, z.b_max);
      ASSERT_TRUE(floor_of.approximates()) << s << " " << v;
      CounterRng rng(HashKeys({uint64_t(s * 1000), uint64_t(v)}));
      double worst = 0;
      for (int i = 0; i < 100000; ++i) {
        const double b = z.b_min + rng.NextDouble() * (z.b_max - z.b_min);
        const double exact = std::pow(b, z.power);
        worst = std::max(worst, std::abs(floor_of.Approximate(b) - exact) / exact);
      }
      EXPECT_LT(worst, floor_of.bound() / 8) << "s " << s << " v " << v;
      EXPECT_GT(worst, 0) << "s " << s << " v " << v;
    }
  }
}

// Uniform bases over each Zipf range: every floor equals pow's.
TEST(PowerFloorTest, MatchesPowOnZipfDraws) {
  for (float s : kExponents) {
    for (double v : {10.0, 1e3, 1e6, 1e8}) {
      const Zipf z = ZipfOf(s, v);
      const PowerFloor floor_of(z.power, z.b_min, z.b_max);
      CounterRng rng(HashKeys({uint64_t(s * 100), uint64_t(v)}));
      std::vector<double> bases(200001);  // not a multiple of the block
      for (double& b : bases) b = z.b_min + rng.NextDouble() * (z.b_max - z.b_min);
      SCOPED_TRACE(testing::Message() << "s " << s << " v " << v);
      ExpectFloorsOfPow(floor_of, z.power, bases);
    }
  }
}

// The hard cases: bases whose power lands on or near an integer, where the
// band straddles it and pow decides: a few ulps either side of the root, and
// relative steps of 1e-14 of the base (about 20 x that of the power).
TEST(PowerFloorTest, MatchesPowAtIntegerBoundaries) {
  for (double p :
       {-20.0, ZipfOf(1.05f, 1e6).power, ZipfOf(1.2f, 1e6).power, 2.0, 3.5, -1.0, 10.0}) {
    const double b_min = p < 0 ? 0.4 : 1.0;
    const double b_max = p < 0 ? 1.0 : 6.0;
    const PowerFloor floor_of(p, b_min, b_max);
    ASSERT_TRUE(floor_of.approximates()) << p;
    std::vector<double> bases;
    auto add = [&](double b) {
      if (b >= b_min && b <= b_max) bases.push_back(b);
    };
    for (int k = 1; k < 5000; ++k) {
      const double root = std::pow(static_cast<double>(k), 1 / p);
      double b = root;
      for (int step = 0; step < 4; ++step) b = std::nextafter(b, 0.0);
      for (int step = 0; step < 9; ++step, b = std::nextafter(b, 2.0 * b_max)) add(b);
      for (int step = -30; step <= 30; ++step) add(root * (1 + step * 1e-14));
    }
    ExpectFloorsOfPow(floor_of, p, bases);
  }
}

TEST(PowerFloorTest, EndsOfTheRange) {
  const Zipf z = ZipfOf(1.05f, 1e6);
  const PowerFloor floor_of(z.power, z.b_min, z.b_max);
  for (double b : {z.b_min, z.b_max, std::nextafter(z.b_max, 0.0), std::nextafter(z.b_min, 1.0)}) {
    EXPECT_EQ(FloorOfOne(floor_of, b), Reference(b, z.power)) << b;
  }
  // Exact powers.
  EXPECT_EQ(FloorOfOne(PowerFloor(3, 1, 4), 2), 8);
  EXPECT_EQ(FloorOfOne(PowerFloor(-20, 0.4, 1), 0.5), 1048576);
  EXPECT_EQ(FloorOfOne(PowerFloor(-20, 0.4, 1), 1), 1);
  EXPECT_EQ(FloorOfOne(PowerFloor(0.5, 1, 100), 81), 9);
}

}  // namespace
}  // namespace lemrt::base
