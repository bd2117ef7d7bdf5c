#include "device/tensorcore/gemm.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

struct Case {
  bool ta, tb;
  int64_t m, n, k;
  int64_t pad;  // extra floats per row of A, B and C beyond the minimum
};

std::string Name(const Case& c) {
  return std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N") + " m" + std::to_string(c.m) + " n" +
         std::to_string(c.n) + " k" + std::to_string(c.k) + " pad" + std::to_string(c.pad);
}

// Operands of a case, with leading dimensions as Gemm documents them.
struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, bias;
  std::vector<float> relu_output;  // [m x ldc], about half of it <= 0
};

Operands Make(const Case& c, uint32_t seed) {
  Operands o;
  o.lda = (c.ta ? c.m : c.k) + c.pad;
  o.ldb = (c.tb ? c.k : c.n) + c.pad;
  o.ldc = c.n + c.pad;
  o.a = Random((c.ta ? c.k : c.m) * o.lda, seed);
  o.b = Random((c.tb ? c.n : c.k) * o.ldb, seed + 1);
  o.bias = Random(c.n, seed + 2);
  o.relu_output = Random(c.m * o.ldc, seed + 3);
  return o;
}

// C[i][j] = sum_p op(A)[i][p] op(B)[p][j] (+ bias, ReLU, ReLU backward), in
// double; with `bf16`, of A's and B's elements rounded to the nearest bf16.
std::vector<double> Naive(const Case& c, const Operands& o, const GemmEpilogue& e,
                          bool bf16 = false) {
  auto round = [bf16](float x) -> double {
    return bf16 ? base::Bf16ToFloat(base::FloatToBf16Nearest(x)) : x;
  };
  std::vector<double> out(static_cast<size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double a = round(c.ta ? o.a[p * o.lda + i] : o.a[i * o.lda + p]);
        const double b = round(c.tb ? o.b[j * o.ldb + p] : o.b[p * o.ldb + j]);
        s += a * b;
      }
      if (e.bias != nullptr) s += e.bias[j];
      if (e.relu) s = std::max(s, 0.0);
      if (e.relu_output != nullptr) {
        s = e.relu_output[i * e.relu_output_ld + j] > 0.0f ? s * e.relu_scale : 0.0;
      }
      out[i * c.n + j] = s;
    }
  }
  return out;
}

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      {false, false, 0, 5, 3, 0},   {false, false, 4, 0, 3, 0},  {false, false, 1, 1, 1, 0},
      {false, false, 3, 4, 0, 0},   {true, false, 3, 4, 0, 2},   {false, false, 7, 5, 3, 1},
      {false, true, 9, 6, 11, 3},   {true, false, 6, 9, 13, 2},  {true, true, 5, 4, 3, 1},
      // Several row blocks (m > n), several column blocks (n > m), strided.
      {false, false, 700, 33, 190, 5}, {false, true, 650, 40, 170, 0},
      {true, false, 37, 500, 260, 3},  {true, false, 420, 20, 600, 1},
      {false, false, 30, 520, 300, 0}, {false, true, 25, 610, 280, 2},
  };
  return *cases;
}

TEST(GemmTest, MatchesNaiveProductWithEpilogue) {
  ThreadTeam team(3);
  for (const Case& c : Cases()) {
    const Operands o = Make(c, 7);
    // None; bias; bias + ReLU; ReLU backward; ReLU backward with a scale.
    for (int variant = 0; variant < 5; ++variant) {
      GemmEpilogue e;
      if (variant == 1 || variant == 2) e.bias = o.bias.data();
      e.relu = variant == 2;
      if (variant >= 3) {
        e.relu_output = o.relu_output.data();
        e.relu_output_ld = o.ldc;
        e.relu_scale = variant == 4 ? 2.5f : 1.0f;
      }
      std::vector<float> out(static_cast<size_t>(c.m * o.ldc), -9.0f);
      Gemm(&team, c.ta, c.tb, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb, out.data(),
           o.ldc, e);
      const std::vector<double> want = Naive(c, o, e);
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          ASSERT_NEAR(out[i * o.ldc + j], want[i * c.n + j], 1e-4 * (1 + std::sqrt(c.k)))
              << Name(c) << " variant " << variant << " at " << i << "," << j;
        }
        // Padding beyond column n is never written.
        for (int64_t j = c.n; j < o.ldc; ++j) ASSERT_EQ(out[i * o.ldc + j], -9.0f) << Name(c);
      }
    }
  }
}

// The blocks depend on the shape only, so every team size gives the same bits.
TEST(GemmTest, BitsDoNotDependOnTheThreads) {
  std::vector<std::unique_ptr<ThreadTeam>> teams;
  for (int t : {1, 2, 3, 4}) teams.push_back(std::make_unique<ThreadTeam>(t));
  for (const Case& c : Cases()) {
    const Operands o = Make(c, 11);
    const GemmEpilogue e{.bias = o.bias.data(), .relu = true};
    std::vector<float> want(static_cast<size_t>(c.m * o.ldc), 0.0f);
    Gemm(nullptr, c.ta, c.tb, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb, want.data(),
         o.ldc, e);
    for (auto& team : teams) {
      for (int rep = 0; rep < 3; ++rep) {
        std::vector<float> got(want.size(), 0.0f);
        Gemm(team.get(), c.ta, c.tb, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb,
             got.data(), o.ldc, e);
        // (memcmp must not see the null data() of an empty C.)
        ASSERT_TRUE(got.empty() ||
                    std::memcmp(got.data(), want.data(), sizeof(float) * got.size()) == 0)
            << Name(c) << " with " << team->threads() << " threads";
      }
    }
  }
}

TEST(GemmTest, BlockingIsAFunctionOfTheShape) {
  // The larger side of C is cut; blocks cover it exactly.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1024, 512, 367},
                         {1024, 367, 512}, {367, 512, 1024}, {128, 512, 367}, {256, 1, 1024},
                         {13, 512, 1024}, {1, 1, 1}, {0, 4, 4}}) {
    const GemmBlocking g = GemmBlockingFor(m, n, k);
    const int64_t along = g.rows ? m : n;
    EXPECT_EQ(g.rows, m >= n) << m << "x" << n << "x" << k;
    EXPECT_EQ(g.blocks, along == 0 ? 0 : (along + g.block - 1) / g.block);
    if (along > 0) {
      EXPECT_LE((g.blocks - 1) * g.block, along - 1);
    }
  }
  // The model's large products split into several blocks, small ones not.
  EXPECT_GE(GemmBlockingFor(1024, 512, 367).blocks, 8);
  EXPECT_GE(GemmBlockingFor(128, 512, 367).blocks, 4);
  EXPECT_EQ(GemmBlockingFor(64, 16, 64).blocks, 1);
  // One block's work on too few lines for two full blocks still goes in two
  // (DCN-v2's x V at batch 128), and blocks are about equal: 432 columns
  // as 224 + 208, not 256 + 176.
  EXPECT_EQ(GemmBlockingFor(128, 128, 432).blocks, 2);
  const GemmBlocking even = GemmBlockingFor(128, 432, 128);
  EXPECT_FALSE(even.rows);
  EXPECT_EQ(even.blocks, 2);
  EXPECT_EQ(even.block, 224);
}

// Whether /proc/cpuinfo lists avx512_bf16 or AMX's bf16 tiles (false where
// there is no such file): what CheckBf16Products must agree with.
bool CpuInfoHasBf16() {
  std::ifstream in("/proc/cpuinfo");
  std::string word;
  while (in >> word) {
    if (word == "avx512_bf16" || word == "amx_bf16") return true;
  }
  return false;
}

// Under DNNL_MAX_CPU_ISA below avx512_core_bf16 (a second ctest run of this
// test sets AVX512_CORE) the check refuses with a sentence; otherwise it
// accepts exactly where the CPU lists avx512_bf16 or AMX.
TEST(GemmTest, Bf16ProductsNeedAvx512Bf16OrAmx) {
  const char* limit = std::getenv("DNNL_MAX_CPU_ISA");
  const absl::Status status = CheckBf16Products();
  if (limit != nullptr && std::string(limit) == "AVX512_CORE") {
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(status.message().find("model.dense_dtype: BF16 needs a CPU with avx512_bf16 or AMX"),
              std::string::npos)
        << status;
    EXPECT_NE(status.message().find("(its instruction set: "), std::string::npos) << status;
    EXPECT_EQ(status.message().find("bf16)"), std::string::npos) << status;
    return;
  }
  EXPECT_EQ(status.ok(), CpuInfoHasBf16()) << status;
}

// kBf16: the plain product of the bf16-rounded operands, summed in fp32 (so
// far closer to it than to the fp32 product), with the epilogue; padding
// untouched; the same bits on 1-4 threads.
TEST(GemmTest, Bf16ProductsMatchTheRoundedOperandsProduct) {
  if (!CheckBf16Products().ok()) {
    GTEST_SKIP() << CheckBf16Products();
  }
  std::vector<std::unique_ptr<ThreadTeam>> teams;
  for (int t : {1, 2, 3, 4}) teams.push_back(std::make_unique<ThreadTeam>(t));
  for (const Case& c : Cases()) {
    const Operands o = Make(c, 5);
    const GemmEpilogue e{.bias = o.bias.data(), .relu = true};
    std::vector<float> out(static_cast<size_t>(c.m * o.ldc), -9.0f);
    Gemm(nullptr, c.ta, c.tb, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb, out.data(),
         o.ldc, e, GemmPrecision::kBf16);
    const std::vector<double> want = Naive(c, o, e, /*bf16=*/true);
    const std::vector<double> fp32 = Naive(c, o, e);
    // fp32 sums of k products of values in [-1, 1]: a few ulps of the sums.
    const double tolerance = 1e-6 * static_cast<double>(1 + c.k);
    double off_fp32 = 0;
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        ASSERT_NEAR(out[i * o.ldc + j], want[i * c.n + j], tolerance)
            << Name(c) << " at " << i << "," << j;
        off_fp32 = std::max(off_fp32, std::abs(out[i * o.ldc + j] - fp32[i * c.n + j]));
      }
      for (int64_t j = c.n; j < o.ldc; ++j) ASSERT_EQ(out[i * o.ldc + j], -9.0f) << Name(c);
    }
    // The rounding shows: about 2^-9 relative per operand, summed over k.
    if (c.k >= 100) {
      EXPECT_GT(off_fp32, 20 * tolerance) << Name(c);
    }
    for (auto& team : teams) {
      std::vector<float> got(out.size(), -9.0f);
      Gemm(team.get(), c.ta, c.tb, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb, got.data(),
           o.ldc, e, GemmPrecision::kBf16);
      ASSERT_TRUE(got.empty() ||
                  std::memcmp(got.data(), out.data(), sizeof(float) * got.size()) == 0)
          << Name(c) << " with " << team->threads() << " threads";
    }
  }
  EXPECT_NE(GemmBackendName(GemmPrecision::kBf16).find("bf16 products"), std::string::npos);
}

// Each thread rounds the operand that every block reads whole once per call
// and keeps it: two calls in one fork-join (their blocks interleave on the
// threads), then the same buffers with new values in new calls, give the
// products of the values each call was made with.
TEST(GemmTest, Bf16RoundingIsNotReusedAcrossCalls) {
  if (!CheckBf16Products().ok()) {
    GTEST_SKIP() << CheckBf16Products();
  }
  ThreadTeam team(3);
  // Several row blocks (B shared) and several column blocks (A shared).
  const Case rows{false, false, 640, 64, 512, 3}, cols{false, true, 64, 640, 512, 2};
  Operands r = Make(rows, 11), c = Make(cols, 12);
  for (int round = 0; round < 3; ++round) {
    std::vector<float> out_r(static_cast<size_t>(rows.m * r.ldc));
    std::vector<float> out_c(static_cast<size_t>(cols.m * c.ldc));
    const GemmTasks task_r(rows.ta, rows.tb, rows.m, rows.n, rows.k, r.a.data(), r.lda, r.b.data(),
                           r.ldb, out_r.data(), r.ldc, {}, GemmPrecision::kBf16);
    const GemmTasks task_c(cols.ta, cols.tb, cols.m, cols.n, cols.k, c.a.data(), c.lda, c.b.data(),
                           c.ldb, out_c.data(), c.ldc, {}, GemmPrecision::kBf16);
    ASSERT_GT(task_r.tasks(), 2);
    ASSERT_GT(task_c.tasks(), 2);
    const TaskGroup groups[] = {task_r.group(), task_c.group()};
    ParallelForGroups(&team, groups);
    for (const auto& [cs, o, out] : {std::tie(rows, r, out_r), std::tie(cols, c, out_c)}) {
      const std::vector<double> want = Naive(cs, o, {}, /*bf16=*/true);
      for (int64_t i = 0; i < cs.m; ++i) {
        for (int64_t j = 0; j < cs.n; ++j) {
          ASSERT_NEAR(out[i * o.ldc + j], want[i * cs.n + j], 1e-6 * (1 + cs.k))
              << Name(cs) << " round " << round << " at " << i << "," << j;
        }
      }
    }
    // New values in the same buffers: the shared operands of both shapes.
    for (float& x : r.b) x = -0.5f * x + 0.25f;
    for (float& x : c.a) x = 0.75f * x - 0.125f;
  }
}

// Operands given already rounded (Bf16Operands, in the stored layout with its
// padding) give the bits of rounding them inside, for every transposition,
// row and column blocks, A, B or both given.
TEST(GemmTest, Bf16OperandsGivenRoundedGiveTheSameBits) {
  if (!CheckBf16Products().ok()) {
    GTEST_SKIP() << CheckBf16Products();
  }
  ThreadTeam team(3);
  auto rounded = [](const std::vector<float>& v) {
    std::vector<uint16_t> r(v.size());
    base::NarrowBf16Nearest(v, r.data());
    return r;
  };
  for (const Case& c : Cases()) {
    const Operands o = Make(c, 9);
    const std::vector<uint16_t> a16 = rounded(o.a), b16 = rounded(o.b);
    const GemmEpilogue e{.bias = o.bias.data(), .relu = true};
    std::vector<float> want(static_cast<size_t>(c.m * o.ldc), -9.0f);
    Gemm(&team, c.ta, c.tb, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb, want.data(),
         o.ldc, e, GemmPrecision::kBf16);
    for (const Bf16Operands given : {Bf16Operands{a16.data(), nullptr},
                                     Bf16Operands{nullptr, b16.data()},
                                     Bf16Operands{a16.data(), b16.data()}}) {
      std::vector<float> got(want.size(), -9.0f);
      Gemm(&team, c.ta, c.tb, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb, got.data(),
           o.ldc, e, GemmPrecision::kBf16, given);
      ASSERT_TRUE(got.empty() ||
                  std::memcmp(got.data(), want.data(), sizeof(float) * got.size()) == 0)
          << Name(c) << " given " << (given.a != nullptr ? "A" : "")
          << (given.b != nullptr ? "B" : "");
    }
  }
}

TEST(GemmTest, BackendAloneMatchesNaiveProduct) {
  const Case c{false, true, 70, 50, 90, 0};
  const Operands o = Make(c, 3);
  const std::vector<double> want = Naive(c, o, {});
  for (int threads : {1, 2}) {
    std::vector<float> out(static_cast<size_t>(c.m * c.n));
    BackendGemm(threads, c.ta, c.tb, c.m, c.n, c.k, o.a.data(), o.lda, o.b.data(), o.ldb,
                out.data(), o.ldc);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-3) << i;
  }
  EXPECT_NE(GemmBackendName().find("oneDNN"), std::string::npos);
}

}  // namespace
}  // namespace lemrt::device
