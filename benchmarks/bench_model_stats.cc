// The end-of-run statistics' per-row work (runtime/observability/
// row_block_stats.h) against the loop it replaced, on the same rows: 8192
// rows of dim 64 (2 MiB) per call, thread CPU time. `RowByRow` is the former
// ComputeModelStats loop: eight rows' Mix64 chains interleaved as scalars,
// then each row's squares as one double chain and one exact addition.
// `Lanes` is AddRowBlock (eight rows a vector lane). Both give the same bits
// (model_stats_test); counter ns_per_element (the best call).
//
//   build/bin/bench_model_stats
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/exact_sum.h"
#include "base/random.h"
#include "benchmark/benchmark.h"
#include "benchmarks/thread_cpu_timer.h"
#include "runtime/observability/row_block_stats.h"

namespace lemrt::runtime {
namespace {

constexpr int64_t kRows = 8192;
constexpr int kDim = 64;

struct Rows {
  std::vector<float> values;
  std::vector<int64_t> original;
  Rows() : values(kRows * kDim), original(kRows) {
    base::CounterRng rng(11);
    for (float& v : values) v = static_cast<float>(rng.NextDouble() - 0.5);
    for (int64_t i = 0; i < kRows; ++i) original[i] = 7 * i;
  }
};

// The former loop (ComputeModelStats before row_block_stats.h).
void RowByRow(const Rows& rows, RowBlockStats* stats) {
  constexpr int64_t kLanes = 8;
  for (int64_t r0 = 0; r0 < kRows; r0 += kLanes) {
    uint64_t h[kLanes];
    const float* row[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) {
      h[l] = base::HashKeys({3, static_cast<uint64_t>(rows.original[r0 + l])});
      row[l] = rows.values.data() + (r0 + l) * kDim;
    }
    for (int d = 0; d < kDim; ++d) {
      for (int64_t l = 0; l < kLanes; ++l) {
        uint32_t bits;
        std::memcpy(&bits, row[l] + d, sizeof(bits));
        h[l] = base::Mix64(h[l] ^ bits);
      }
    }
    for (int64_t l = 0; l < kLanes; ++l) {
      stats->hash_sum += h[l];
      double sq = 0;
      for (int d = 0; d < kDim; ++d) sq += double{row[l][d]} * row[l][d];
      stats->AddRowSquares(sq);
    }
  }
}

void BM_RowStats(benchmark::State& state) {
  static const Rows rows;
  const bool lanes = state.range(0) == 1;
  uint64_t check = 0;
  double best = 1e30;
  for (auto _ : state) {
    const double s = bench::SecondsPerCall(1, [&] {
      RowBlockStats stats;
      if (lanes) {
        AddRowBlock(3, rows.original.data(), rows.values.data(), kRows, kDim, &stats);
      } else {
        RowByRow(rows, &stats);
      }
      check ^= stats.hash_sum;
    });
    state.SetIterationTime(s);
    best = std::min(best, s);
  }
  state.counters["ns_per_element"] = best / (kRows * kDim) * 1e9;
  benchmark::DoNotOptimize(check);
}
BENCHMARK(BM_RowStats)->ArgName("lanes")->Arg(0)->Arg(1)->UseManualTime()->Iterations(20);

}  // namespace
}  // namespace lemrt::runtime

BENCHMARK_MAIN();
