// Every path of the bf16 row kernels this CPU runs (AVX-512, AVX2, scalar)
// against the plain references: base::Bf16ToFloat per element, base::
// NarrowBf16Stochastic (the rounding rule column by column, itself checked
// against the value-based rule of base/bf16_reference_test_util.h) and PoolGroup
// over the widened rows, bit for bit, for row lengths around the vector
// widths and on special values.
#include "device/sparsecore/row_kernels_bf16.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/bf16_reference_test_util.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using layout::CooEntry;

const std::vector<int> kLengths = {0,  1,  2,  3,  7,  8,  15, 16,  17,  24,
                                   31, 32, 33, 48, 63, 64, 65, 100, 128, 130};

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

// Random floats of every magnitude, with special values (infinities, NaNs
// with payloads only in the dropped bits, zeros, subnormals, the largest
// finite) mixed in.
std::vector<float> Values(int64_t n, std::mt19937& rng) {
  const std::vector<uint32_t> specials = {0x7f800000, 0xff800000, 0x7f800001, 0xffc00000,
                                          0x00000000, 0x80000000, 0x7f7fffff, 0x00000001,
                                          0x807fffff, 0x3f808000, 0x7f7f8000, 0x7fffffff};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t r = static_cast<uint32_t>(rng());
    if (r % 7 == 0) {
      v[i] = FromBits(specials[r / 7 % specials.size()]);
    } else if (r % 7 == 1) {
      v[i] = FromBits(static_cast<uint32_t>(rng()));
    } else {
      v[i] = normal(rng);
    }
  }
  return v;
}

class RowKernelsBf16Test : public ::testing::TestWithParam<Bf16Isa> {
 protected:
  void SetUp() override {
    if (!CpuRunsBf16Isa(GetParam())) GTEST_SKIP() << "this CPU cannot run the path";
  }
};

void Widen(Bf16Isa isa, const uint16_t* in, int64_t n, float* out) {
  switch (isa) {
    case Bf16Isa::kAvx512:
      return WidenBf16Row<Bf16Isa::kAvx512>(in, n, out);
    case Bf16Isa::kAvx2:
      return WidenBf16Row<Bf16Isa::kAvx2>(in, n, out);
    case Bf16Isa::kScalar:
      return WidenBf16Row<Bf16Isa::kScalar>(in, n, out);
  }
}

void Narrow(Bf16Isa isa, const float* in, int64_t n, uint64_t key, uint16_t* out) {
  switch (isa) {
    case Bf16Isa::kAvx512:
      return NarrowBf16RowStochastic<Bf16Isa::kAvx512>(in, n, key, out);
    case Bf16Isa::kAvx2:
      return NarrowBf16RowStochastic<Bf16Isa::kAvx2>(in, n, key, out);
    case Bf16Isa::kScalar:
      return NarrowBf16RowStochastic<Bf16Isa::kScalar>(in, n, key, out);
  }
}

void Pool(Bf16Isa isa, int dim, const CooEntry* e, const int32_t* u, int64_t n,
          const uint16_t* table, const int64_t* rows, float* out) {
  switch (isa) {
    case Bf16Isa::kAvx512:
      return PoolGroupBf16<Bf16Isa::kAvx512>(dim, e, u, n, table, rows, out);
    case Bf16Isa::kAvx2:
      return PoolGroupBf16<Bf16Isa::kAvx2>(dim, e, u, n, table, rows, out);
    case Bf16Isa::kScalar:
      return PoolGroupBf16<Bf16Isa::kScalar>(dim, e, u, n, table, rows, out);
  }
}

TEST_P(RowKernelsBf16Test, WidenIsTheExactTopHalf) {
  std::mt19937 rng(1);
  for (int n : kLengths) {
    std::vector<uint16_t> in(n + 1);
    for (uint16_t& b : in) b = static_cast<uint16_t>(rng());
    std::vector<float> out(n + 1, 42.0f);
    Widen(GetParam(), in.data(), n, out.data());
    for (int i = 0; i < n; ++i) ASSERT_EQ(Bits(out[i]), uint32_t{in[i]} << 16) << n << " " << i;
    EXPECT_EQ(out[n], 42.0f) << "wrote past the row, n = " << n;
  }
}

TEST_P(RowKernelsBf16Test, NarrowMatchesTheRoundingRule) {
  std::mt19937 rng(2);
  for (int n : kLengths) {
    for (int rep = 0; rep < 4; ++rep) {
      const std::vector<float> in = Values(n, rng);
      const uint64_t key = base::Bf16RoundingKey(rng(), rep, rng() % 1000, rep + 1);
      std::vector<uint16_t> want(n), got(n + 1, 0xabcd);
      base::NarrowBf16Stochastic(in, key, want.data());
      Narrow(GetParam(), in.data(), n, key, got.data());
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(got[i], want[i]) << "n " << n << " column " << i << " value " << in[i];
        ASSERT_EQ(want[i], base::test_util::NarrowReference(in[i], key, i)) << n << " " << i;
      }
      EXPECT_EQ(got[n], 0xabcd) << "wrote past the row, n = " << n;
    }
  }
}

// Groups of 1-5 entries over a small table, rows repeated; every dim from the
// fixed ones to odd ones: the bits of PoolGroup over the widened table.
TEST_P(RowKernelsBf16Test, PoolEqualsPoolGroupOfWidenedRows) {
  std::mt19937 rng(3);
  for (int dim : {1, 7, 8, 15, 16, 17, 24, 32, 40, 48, 64, 100, 128}) {
    constexpr int kRows = 9;
    std::vector<uint16_t> table(kRows * dim);
    std::vector<float> values = Values(kRows * dim, rng);
    for (float& v : values) {
      if (!std::isfinite(v) || std::fabs(v) > 1e30f) v = 0.5f;  // keep sums finite
    }
    base::NarrowBf16Nearest(values, table.data());
    std::vector<float> widened(table.size());
    base::WidenBf16(table, widened.data());
    for (int n = 1; n <= 5; ++n) {
      std::vector<CooEntry> entries;
      std::vector<int32_t> unique(n);
      std::vector<int64_t> rows(n);
      for (int j = 0; j < n; ++j) {
        entries.push_back({0, 0, 0, 0, static_cast<float>(rng() % 9) * 0.37f - 1.1f});
        unique[j] = n - 1 - j;  // entry j reads rows[n - 1 - j]
        rows[j] = static_cast<int64_t>(rng() % kRows);
      }
      std::vector<float> want(dim), got(dim + 1, 42.0f);
      PoolGroup(dim, entries.data(), unique.data(), n, widened.data(), rows.data(), dim,
                want.data());
      Pool(GetParam(), dim, entries.data(), unique.data(), n, table.data(), rows.data(),
           got.data());
      for (int d = 0; d < dim; ++d) ASSERT_EQ(Bits(got[d]), Bits(want[d])) << dim << " " << n;
      EXPECT_EQ(got[dim], 42.0f) << "wrote past the partial, dim = " << dim;
    }
  }
}

// GatherRowsBf16 (the staging path) widens the listed rows in order.
TEST(RowKernelsBf16GatherTest, GathersWidenedRows) {
  std::mt19937 rng(4);
  for (int dim : {7, 64}) {
    std::vector<uint16_t> table(50 * dim);
    for (uint16_t& b : table) b = static_cast<uint16_t>(rng());
    std::vector<int64_t> rows(40);
    for (int64_t& r : rows) r = static_cast<int64_t>(rng() % 50);
    std::vector<float> out(rows.size() * dim);
    GatherRowsBf16(dim, table.data(), rows.data(), static_cast<int64_t>(rows.size()), out.data());
    for (size_t i = 0; i < rows.size(); ++i) {
      for (int d = 0; d < dim; ++d) {
        ASSERT_EQ(Bits(out[i * dim + d]), uint32_t{table[rows[i] * dim + d]} << 16);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, RowKernelsBf16Test,
                         ::testing::Values(Bf16Isa::kScalar, Bf16Isa::kAvx2, Bf16Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Bf16Isa>& info) {
                           switch (info.param) {
                             case Bf16Isa::kAvx512:
                               return "Avx512";
                             case Bf16Isa::kAvx2:
                               return "Avx2";
                             case Bf16Isa::kScalar:
                               return "Scalar";
                           }
                           return "Unknown";
                         });

}  // namespace
}  // namespace lemrt::device
