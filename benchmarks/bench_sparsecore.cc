// SparseCore kernels against their physical references, in one binary.
//
// BM_Lookup/dim/ids:  SparseCore::Forward (dedup + gather + pool) over `ids`
//                     sorted unique one-hot ids of a table too large for the
//                     caches (128 MiB).
// BM_Update/dim/ids:  SparseCore::Backward (sum gradients per id + SGD
//                     update) for the same ids.
// Each reports GB/s of row bytes touched (ids x dim x 4) and, measured in the
// same benchmark right after the kernel, the same bytes moved by
//   memcpy_GBps: one memcpy of ids x dim x 4 contiguous bytes of the table,
//   rows_GBps:   a plain loop over the same rows (copy each row out for the
//                lookup, row -= lr * grad for the update; independent reads,
//                no prefetch): the random-access limit for these ids,
// and the kernel's slowdown against each (x_memcpy, x_rows; 1.0 = at the
// limit). Every timed call (kernel and references alike) starts with cold
// caches: a 64 MiB buffer is read first, untimed, so the rows come from DRAM
// as in training, where tables are far larger than the caches; the best of
// kColdCalls calls counts. BM_StreamCopy measures the memory bandwidth.
// Targets (issue 9): x_rows <= 2 for dim 16, x_memcpy <= 1.5 for dim >= 64.
#include <algorithm>
#include <ctime>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/thread_cpu_timer.h"
#include "device/optimizers/optimizer.h"
#include "device/sparsecore/sparse_core.h"
#include "host/coo.h"
#include "proto/config.pb.h"

namespace lemrt::device {
namespace {

constexpr int64_t kTableBytes = int64_t{128} << 20;
// 64 MiB read before each timed call: evicts the caches without leaving
// dirty lines whose write-back would be charged to the call.
constexpr size_t kFlushBytes = size_t{64} << 20;
constexpr int kColdCalls = 9;

// One chip, one SparseCore, one table of kTableBytes with `dim` floats a row.
struct Fixture {
  Fixture(int dim, int64_t ids) : sgd(0.1f) {
    const int64_t rows = kTableBytes / (4 * dim);
    config.mutable_topology()->set_num_chips(1);
    config.mutable_topology()->set_sparse_cores_per_chip(1);
    config::TableConfig* t = config.add_tables();
    t->set_name("t");
    t->set_vocab_size(rows);
    t->set_dim(dim);
    config.mutable_training()->set_seed(1);
    const Optimizer* opt = &sgd;
    sc = std::make_unique<SparseCore>(config, 0, std::span<const Optimizer* const>(&opt, 1));
    // Sorted unique ids, uniform over the table: one id drawn in each of
    // `ids` equal slices of the rows.
    std::mt19937_64 rng(7);
    std::vector<int64_t> cols(ids);
    const int64_t slice = rows / ids;
    for (int64_t i = 0; i < ids; ++i) cols[i] = i * slice + static_cast<int64_t>(rng() % slice);
    for (int64_t i = 0; i < ids; ++i) {
      entries.push_back({cols[i], static_cast<int32_t>(i), 0, 0, 1.0f});
    }
    partials.resize(ids * dim);
    grads.resize(ids * dim, 1e-3f);
    scratch.resize(ids * dim);
    copy_src.resize(ids * dim, 1.0f);
  }

  config::RunConfig config;
  SgdOptimizer sgd;
  std::unique_ptr<SparseCore> sc;
  std::vector<host::CooEntry> entries;
  std::vector<float> partials, grads, scratch, copy_src;
  std::vector<int64_t> flush = std::vector<int64_t>(kFlushBytes / 8, 1);
  SparseCoreStepState st;
};

using bench::SecondsPerCall;
using bench::ThreadCpuSeconds;

void EvictCaches(const std::vector<int64_t>& flush) {
  int64_t sum = 0;
  for (int64_t v : flush) sum += v;
  benchmark::DoNotOptimize(sum);
}

// CPU seconds of one call of fn starting from cold caches, best of
// kColdCalls.
template <typename Fn>
double ColdSecondsPerCall(const std::vector<int64_t>& flush, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < kColdCalls; ++r) {
    EvictCaches(flush);
    const double t0 = ThreadCpuSeconds();
    fn();
    best = std::min(best, ThreadCpuSeconds() - t0);
  }
  return best;
}


void Report(benchmark::State& state, double kernel_s, double memcpy_s, double rows_s,
            double bytes) {
  state.counters["GBps"] = bytes / kernel_s * 1e-9;
  state.counters["memcpy_GBps"] = bytes / memcpy_s * 1e-9;
  state.counters["rows_GBps"] = bytes / rows_s * 1e-9;
  state.counters["x_memcpy"] = kernel_s / memcpy_s;
  state.counters["x_rows"] = kernel_s / rows_s;
}

void BM_Lookup(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const int64_t ids = state.range(1);
  Fixture f(dim, ids);
  std::span<const host::CooEntry> seg(f.entries);
  float* out = f.partials.data();
  auto run = [&] {
    f.sc->Forward(std::span(&seg, 1), std::span(&out, 1), &f.st);
    benchmark::ClobberMemory();
  };
  for (auto _ : state) run();
  const double bytes = static_cast<double>(ids) * dim * 4;
  const double kernel_s = ColdSecondsPerCall(f.flush, run);
  const TableShard& shard = f.sc->shard(0);
  const double memcpy_s = ColdSecondsPerCall(f.flush, [&] {
    std::memcpy(f.scratch.data(), shard.row(0), bytes);
    benchmark::ClobberMemory();
  });
  const double rows_s = ColdSecondsPerCall(f.flush, [&] {
    float* o = f.scratch.data();
    for (const host::CooEntry& e : f.entries) {
      std::memcpy(o, shard.row(e.col), sizeof(float) * dim);
      o += dim;
    }
    benchmark::ClobberMemory();
  });
  Report(state, kernel_s, memcpy_s, rows_s, bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_Update(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const int64_t ids = state.range(1);
  Fixture f(dim, ids);
  std::span<const host::CooEntry> seg(f.entries);
  float* out = f.partials.data();
  f.sc->Forward(std::span(&seg, 1), std::span(&out, 1), &f.st);
  const float* g = f.grads.data();
  auto run = [&] {
    f.sc->Backward(std::span(&seg, 1), std::span(&g, 1), &f.st);
    benchmark::ClobberMemory();
  };
  for (auto _ : state) run();
  const double bytes = static_cast<double>(ids) * dim * 4;
  const double kernel_s = ColdSecondsPerCall(f.flush, run);
  TableShard& shard = f.sc->mutable_shard(0);
  const double memcpy_s = ColdSecondsPerCall(f.flush, [&] {
    std::memcpy(shard.mutable_row(0).data(), f.copy_src.data(), bytes);
    benchmark::ClobberMemory();
  });
  const double rows_s = ColdSecondsPerCall(f.flush, [&] {
    const float* gr = f.grads.data();
    for (const host::CooEntry& e : f.entries) {
      float* w = shard.mutable_row(e.col).data();
      for (int d = 0; d < dim; ++d) w[d] -= 0.1f * gr[d];
      gr += dim;
    }
    benchmark::ClobberMemory();
  });
  Report(state, kernel_s, memcpy_s, rows_s, bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

// STREAM-like copy of a 512 MiB buffer: the machine's memory bandwidth, in
// bytes read + written per second (copy_GBps), for
// scripts/multihot_bandwidth.sh.
void BM_StreamCopy(benchmark::State& state) {
  const size_t n = size_t{512} << 20;
  std::vector<char> a(n, 1), b(n, 2);
  auto copy = [&] {
    std::memcpy(b.data(), a.data(), n);
    benchmark::ClobberMemory();
  };
  for (auto _ : state) copy();
  state.counters["copy_GBps"] = 2.0 * n / SecondsPerCall(2, copy) * 1e-9;
}
BENCHMARK(BM_StreamCopy)->Unit(benchmark::kMillisecond)->Iterations(4);

BENCHMARK(BM_Lookup)->ArgsProduct({{16, 64, 128}, {1 << 16}})
    ->Unit(benchmark::kMicrosecond)->Iterations(3);
BENCHMARK(BM_Update)->ArgsProduct({{16, 64, 128}, {1 << 16}})
    ->Unit(benchmark::kMicrosecond)->Iterations(3);

}  // namespace
}  // namespace lemrt::device

BENCHMARK_MAIN();
