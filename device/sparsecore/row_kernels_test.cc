#include "device/sparsecore/row_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

// Plain loops the kernels must match bit for bit.
void PlainPool(int dim, const layout::CooEntry* e, const int32_t* uniq, int64_t n,
               const int64_t* offsets, const float* gathered, float* out) {
  for (int d = 0; d < dim; ++d) out[d] = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    for (int d = 0; d < dim; ++d) out[d] += e[j].gain * gathered[offsets[uniq[j]] + d];
  }
}

void PlainScatter(int dim, const layout::CooEntry* e, const int32_t* uniq, int64_t n,
                  const int64_t* offsets, const float* grad, float* acc) {
  for (int64_t j = 0; j < n; ++j) {
    for (int d = 0; d < dim; ++d) acc[offsets[uniq[j]] + d] += e[j].gain * grad[d];
  }
}

class RowKernelsTest : public testing::TestWithParam<int> {};

TEST_P(RowKernelsTest, GatherCopiesTheRowsInOrder) {
  const int dim = GetParam();
  const int64_t rows = 100;
  std::vector<float> table(rows * dim);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i) * 0.5f;
  for (int64_t n : {0, 1, 3, 40}) {
    std::vector<int64_t> local(n);
    for (int64_t i = 0; i < n; ++i) local[i] = (i * 37 + 11) % rows;
    std::vector<float> out(n * dim + 1, -1.0f);
    GatherRows(dim, table.data(), local.data(), n, out.data());
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(0, std::memcmp(&out[i * dim], &table[local[i] * dim], sizeof(float) * dim))
          << "row " << i;
    }
    EXPECT_EQ(out[n * dim], -1.0f);  // nothing written past the rows
  }
}

TEST_P(RowKernelsTest, PoolAndScatterMatchThePlainLoopsBitForBit) {
  const int dim = GetParam();
  std::mt19937 rng(dim);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int uniques = 7;
  std::vector<int64_t> offsets(uniques + 1);
  for (int i = 0; i <= uniques; ++i) offsets[i] = int64_t{i} * dim;
  std::vector<float> gathered(uniques * dim);
  for (float& v : gathered) v = u(rng);
  for (int64_t n : {1, 2, 5, 13}) {
    std::vector<layout::CooEntry> entries(n);
    std::vector<int32_t> uniq(n);
    for (int64_t j = 0; j < n; ++j) {
      entries[j].gain = u(rng);
      uniq[j] = static_cast<int32_t>(rng() % uniques);
    }
    std::vector<float> got(dim, 7.0f), want(dim);
    PoolGroup(dim, entries.data(), uniq.data(), n, gathered.data(), offsets.data(), 1,
              got.data());
    PlainPool(dim, entries.data(), uniq.data(), n, offsets.data(), gathered.data(), want.data());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * dim)) << "n " << n;
    // The same rows addressed as table rows (row numbers, stride dim).
    std::vector<int64_t> row_numbers(uniques);
    for (int i = 0; i < uniques; ++i) row_numbers[i] = i;
    std::vector<float> got_rows(dim, 7.0f);
    PoolGroup(dim, entries.data(), uniq.data(), n, gathered.data(), row_numbers.data(), dim,
              got_rows.data());
    EXPECT_EQ(0, std::memcmp(got_rows.data(), want.data(), sizeof(float) * dim)) << "n " << n;

    std::vector<float> grad(dim);
    for (float& v : grad) v = u(rng);
    std::vector<float> acc_got(uniques * dim, 0.25f), acc_want(uniques * dim, 0.25f);
    const std::vector<uint8_t> none(n, kAddEntry);
    ScatterGroup(dim, entries.data(), uniq.data(), none.data(), n, offsets.data(), grad.data(),
                 acc_got.data());
    PlainScatter(dim, entries.data(), uniq.data(), n, offsets.data(), grad.data(),
                 acc_want.data());
    EXPECT_EQ(0, std::memcmp(acc_got.data(), acc_want.data(), sizeof(float) * acc_got.size()))
        << "n " << n;

    // First entries start their accumulators: the same as clearing them
    // first, whatever they held (NaN here); untouched ones stay as they were.
    // Only entries are skipped, and ScaleRow gives what their accumulator
    // would hold.
    std::vector<uint8_t> role(n, kAddEntry);
    std::vector<int> count(uniques, 0);
    for (int64_t j = 0; j < n; ++j) ++count[uniq[j]];
    std::vector<float> start_got(uniques * dim, std::nanf("")), start_want = start_got;
    for (int64_t j = 0; j < n; ++j) {
      if (count[uniq[j]] == 1) {
        role[j] = kOnlyEntry;
      } else if (std::find(uniq.begin(), uniq.begin() + j, uniq[j]) == uniq.begin() + j) {
        role[j] = kFirstEntry;
      }
      if (role[j] != kAddEntry) std::fill_n(start_want.begin() + offsets[uniq[j]], dim, 0.0f);
    }
    ScatterGroup(dim, entries.data(), uniq.data(), role.data(), n, offsets.data(), grad.data(),
                 start_got.data());
    PlainScatter(dim, entries.data(), uniq.data(), n, offsets.data(), grad.data(),
                 start_want.data());
    for (int64_t j = 0; j < n; ++j) {
      if (role[j] == kOnlyEntry) {
        ScaleRow(dim, entries[j].gain, grad.data(), start_got.data() + offsets[uniq[j]]);
      }
    }
    EXPECT_EQ(0, std::memcmp(start_got.data(), start_want.data(),
                             sizeof(float) * start_got.size()))
        << "entry roles, n " << n;
  }
}

// PoolSingleRun pools the run of one-entry groups of one table that starts
// at its first entry (up to another table or a multi-entry group), with
// plain or non-temporal stores, bit for bit as the plain loop; other dims
// consume nothing.
TEST_P(RowKernelsTest, SingleRunsMatchThePlainLoopBitForBit) {
  const int dim = GetParam();
  std::mt19937 rng(dim + 1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t rows = 64;
  std::vector<float> table(rows * dim);
  for (float& v : table) v = u(rng);
  std::vector<int64_t> local(rows);
  for (int64_t r = 0; r < rows; ++r) local[r] = (r * 29 + 3) % rows;
  // Groups by sample row: mostly one entry of table 0, some of table 1, a
  // few with two entries; unique index j % rows for entry j.
  std::vector<layout::CooEntry> entries;
  std::vector<int32_t> uniq;
  for (int32_t sample = 0; sample < 150; ++sample) {
    const int32_t t = sample % 37 == 5 ? 1 : 0;
    const int n = sample % 23 == 7 ? 2 : 1;
    for (int k = 0; k < n; ++k) {
      entries.push_back({sample, sample, 0, t, u(rng)});
      uniq.push_back(static_cast<int32_t>(entries.size() % rows));
    }
  }
  const int64_t total = static_cast<int64_t>(entries.size());
  const bool fixed = dim == 8 || dim == 16 || dim == 32 || dim == 64 || dim == 128;
  // 64-byte aligned output, and one shifted by a float (no streaming).
  const size_t bytes = (sizeof(float) * (total + 1) * dim + 64 + 63) / 64 * 64;
  float* buffer = static_cast<float*>(std::aligned_alloc(64, bytes));
  for (const int shift : {0, 1}) {
    for (const bool stream : {false, true}) {
      float* out = buffer + shift;
      int64_t i = 0;
      while (i < total) {
        const bool single = i + 1 == total || entries[i + 1].row != entries[i].row;
        if (!single) {
          i += 2;
          continue;
        }
        int64_t want_run = 1;  // the plain run: same table, one-entry groups
        while (i + want_run < total && entries[i + want_run].table == entries[i].table &&
               (i + want_run + 1 == total ||
                entries[i + want_run + 1].row != entries[i + want_run].row)) {
          ++want_run;
        }
        std::fill_n(out, want_run * dim + 1, 7.0f);
        const int64_t run = PoolSingleRun(dim, stream, entries.data() + i, total - i,
                                          uniq.data() + i, local.data(), table.data(), out);
        StreamFence();
        if (!fixed) {
          ASSERT_EQ(run, 0) << "dim " << dim;
          break;
        }
        ASSERT_EQ(run, want_run) << "entry " << i;
        for (int64_t j = 0; j < run; ++j) {
          std::vector<float> want(dim);
          for (int d = 0; d < dim; ++d) {
            want[d] = 0.0f;
            want[d] += entries[i + j].gain * table[local[uniq[i + j]] * dim + d];
          }
          EXPECT_EQ(0, std::memcmp(out + j * dim, want.data(), sizeof(float) * dim))
              << "entry " << i + j << " shift " << shift << " stream " << stream;
        }
        EXPECT_EQ(out[run * dim], 7.0f);  // nothing written past the run
        i += run;
      }
    }
  }
  std::free(buffer);
}

// The fixed-dim instantiations and generic dims around them.
INSTANTIATE_TEST_SUITE_P(Dims, RowKernelsTest, testing::Values(1, 3, 8, 16, 17, 32, 64, 100, 128));

}  // namespace
}  // namespace lemrt::device
