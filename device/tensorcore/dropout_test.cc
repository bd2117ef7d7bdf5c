#include "device/tensorcore/dropout.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

TEST(DropoutTest, DropsTheRequestedShareAndScalesTheKeptUnits) {
  const DropoutKey key{.seed = 7, .step = 3, .first_sample = 1000};
  const int64_t batch = 64;
  const int width = 256;
  for (float p : {0.1f, 0.3f, 0.5f}) {
    std::vector<float> y(batch * width, 2.0f);
    ApplyDropout(key, /*layer=*/1, p, batch, width, y.data());
    int64_t dropped = 0;
    for (float v : y) {
      if (v == 0.0f) {
        ++dropped;
      } else {
        EXPECT_EQ(v, 2.0f * (1.0f / (1.0f - p)));
      }
    }
    // Binomial(n, p): within 5 standard deviations.
    const double n = static_cast<double>(y.size());
    EXPECT_NEAR(dropped / n, p, 5.0 * std::sqrt(p * (1.0 - p) / n)) << p;
  }
}

TEST(DropoutTest, ZeroProbabilityChangesNothing) {
  std::vector<float> y = {1.5f, -2.0f, 0.25f, 3.0f};
  const std::vector<float> before = y;
  ApplyDropout(DropoutKey{.seed = 1}, 0, 0.0f, 2, 2, y.data());
  EXPECT_EQ(y, before);
  EXPECT_TRUE(DropoutKeeps(DropoutKey{.seed = 1}, 0, 0, 0, 0.0f));
}

// A row's mask depends on its global sample only: the same sample in a batch
// that starts elsewhere (another rank's share, another split) gets the same
// mask; another step, layer or seed gets another one.
TEST(DropoutTest, MaskIsAFunctionOfSeedStepSampleLayerAndUnit) {
  const float p = 0.5f;
  const int width = 64;
  const DropoutKey whole{.seed = 11, .step = 5, .first_sample = 96};
  const DropoutKey half{.seed = 11, .step = 5, .first_sample = 100};
  std::vector<float> a(8 * width, 1.0f), b(4 * width, 1.0f);
  ApplyDropout(whole, 2, p, 8, width, a.data());
  ApplyDropout(half, 2, p, 4, width, b.data());
  for (int64_t r = 0; r < 4; ++r) {
    for (int u = 0; u < width; ++u) {
      EXPECT_EQ(a[(r + 4) * width + u], b[r * width + u]) << r << " " << u;
      EXPECT_EQ(b[r * width + u] != 0.0f, DropoutKeeps(half, 2, r, u, p));
    }
  }
  auto differs = [&](const DropoutKey& other, int layer) {
    int diff = 0;
    for (int u = 0; u < width; ++u) {
      diff += DropoutKeeps(whole, 2, 0, u, p) != DropoutKeeps(other, layer, 0, u, p);
    }
    return diff;
  };
  EXPECT_GT(differs(DropoutKey{.seed = 11, .step = 6, .first_sample = 96}, 2), 10);
  EXPECT_GT(differs(DropoutKey{.seed = 12, .step = 5, .first_sample = 96}, 2), 10);
  EXPECT_GT(differs(whole, 3), 10);
  EXPECT_EQ(differs(whole, 2), 0);
}

// A batch packed from some rows of a larger one (rows set) draws, row for
// row, the masks those rows draw in the larger batch.
TEST(DropoutTest, PackedRowsKeepTheirRowsMasks) {
  const DropoutKey plain{.seed = 7, .step = 3, .first_sample = 1000};
  const std::vector<int64_t> rows = {0, 2, 3, 7};
  DropoutKey packed = plain;
  packed.rows = rows.data();
  const int width = 64;
  std::vector<float> big(8 * width, 1.0f), small(rows.size() * width, 1.0f);
  ApplyDropout(plain, /*layer=*/2, 0.5f, 8, width, big.data());
  ApplyDropout(packed, /*layer=*/2, 0.5f, static_cast<int64_t>(rows.size()), width, small.data());
  int differs_from_unpacked = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int u = 0; u < width; ++u) {
      EXPECT_EQ(small[r * width + u], big[rows[r] * width + u]) << r << " " << u;
      EXPECT_EQ(DropoutKeeps(packed, 2, static_cast<int64_t>(r), u, 0.5f),
                DropoutKeeps(plain, 2, rows[r], u, 0.5f));
      differs_from_unpacked += small[r * width + u] != big[r * width + u];
    }
  }
  EXPECT_GT(differs_from_unpacked, 0);  // rows 2, 3, 7 are not rows 1, 2, 3
}

}  // namespace
}  // namespace lemrt::device
