// SparseCore kernels against their physical references, in one binary.
//
// BM_Lookup/dim/ids/gap/staged: SparseCore::Forward (dedup + gather + pool)
//                             over `ids` sorted unique one-hot ids of a table
//                             too large for the caches (128 MiB); staged 1
//                             turns the guard-word check on, which makes the
//                             gather copy the rows to the staging buffer
//                             before pooling (the path simulated
//                             quantization takes too), 0 pools straight from
//                             the table (the default).
// BM_Update/dim/ids/gap/opt:  SparseCore::Backward (sum gradients per id +
//                             optimizer update; opt 0 = SGD, 1 = Adagrad) for
//                             the same ids.
// `gap` is the distance between consecutive ids in rows: 1 = consecutive
// rows (the ids cover one contiguous block of the table), 0 = spread evenly
// over the whole table (one id drawn in each of `ids` equal slices: 1 id in
// 32 / 8 / 4 rows for dim 16 / 64 / 128).
//
// Each reports GB/s of payload (ids x dim x 4 bytes; `GBps`) and, measured in
// the same benchmark right after the kernel, two references:
//   memcpy: one memcpy moving as many bytes as the kernel must. Lookup: it
//     reads the rows (P = ids x dim x 4 bytes) and writes the pooled vectors
//     (P): a memcpy of P bytes (P read + P written). Update: it reads the
//     gradients (P), the rows (P) and their optimizer slots (s x P; s = 0
//     SGD, 1 Adagrad), and writes the rows and slots ((1 + s) x P): a memcpy
//     of (3 + 2s) x P / 2 bytes, which reads and writes that many. (Until
//     this was fixed the update was compared with a memcpy of P bytes, a
//     third of its traffic for SGD: 1.5x too strict.) The kernel's own
//     scratch traffic (dedup pairs, staging, gradient accumulators, index
//     arrays) is overhead it has to hide, not part of the reference.
//   rows: a plain loop over the same ids, no dedup, no prefetch (lookup:
//     copy each row out; update: apply the optimizer to each row from its
//     gradient): the random-access cost of these rows. It uses the same
//     vectorised optimizer code as the kernel (an unvectorised loop would
//     make the reference slow and the kernel look good).
// with the kernel's slowdown against each (x_memcpy, x_rows; 1.0 = at the
// reference). The lookup also reports
//   read: one load per 64-byte line of each of the rows, prefetched as far
//     ahead as the kernels prefetch (read_GBps, x_read): the cost of only
//     bringing these rows in, which no lookup can beat; read / memcpy is how
//     far the ids' spread alone puts the memcpy target out of reach. Every timed call (kernel and references alike) starts with cold
// caches: a 64 MiB buffer is read first, untimed, so the rows come from DRAM
// as in training, where tables are far larger than the caches; the best of
// kColdCalls calls counts. BM_StreamCopy measures the memory bandwidth.
// Targets (issue 9): x_rows <= 2 for dim 16, x_memcpy <= 1.5 for dim >= 64.
// The memcpy target is physical only for gap 1: spread ids touch 1 row in
// 4-32 of the table, and on the 2-vCPU VM of the README even the prefetched
// pass that only loads those rows took 1.1-1.5x a memcpy of the same bytes
// (read_x_memcpy; the memcpy also writes them), against 0.5-0.6x for
// consecutive rows (README, Performance).
#include <algorithm>
#include <ctime>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/thread_cpu_timer.h"
#include "device/optimizers/optimizer.h"
#include "device/sparsecore/row_kernels.h"
#include "device/sparsecore/sparse_core.h"
#include "device/sparsecore/table_allocator.h"
#include "host/coo.h"
#include "proto/config.pb.h"

namespace lemrt::device {
namespace {

constexpr int64_t kTableBytes = int64_t{128} << 20;
// 64 MiB read before each timed call: evicts the caches without leaving
// dirty lines whose write-back would be charged to the call.
constexpr size_t kFlushBytes = size_t{64} << 20;
constexpr int kColdCalls = 9;

// One chip, one SparseCore, one table of kTableBytes with `dim` floats a row,
// updated with SGD (`adagrad` false) or Adagrad.
struct Fixture {
  Fixture(int dim, int64_t ids, int64_t gap, bool adagrad, bool staged = false)
      : sgd(0.1f), ada(0.1f, 0.1f, 1e-7f) {
    const int64_t rows = kTableBytes / (4 * dim);
    config.mutable_topology()->set_num_chips(1);
    config.mutable_topology()->set_sparse_cores_per_chip(1);
    config::TableConfig* t = config.add_tables();
    t->set_name("t");
    t->set_vocab_size(rows);
    t->set_dim(dim);
    config.mutable_training()->set_seed(1);
    config.mutable_sparse_core()->set_debug_guard_words(staged);
    opt = adagrad ? static_cast<const Optimizer*>(&ada) : &sgd;
    sc = std::make_unique<SparseCore>(config, 0, std::span<const Optimizer* const>(&opt, 1));
    // Sorted unique ids: consecutive rows from a random start (gap 1), or
    // one id drawn in each of `ids` equal slices of the rows (gap 0).
    std::mt19937_64 rng(7);
    std::vector<int64_t> cols(ids);
    if (gap == 1) {
      const int64_t start = static_cast<int64_t>(rng() % (rows - ids));
      for (int64_t i = 0; i < ids; ++i) cols[i] = start + i;
    } else {
      const int64_t slice = rows / ids;
      for (int64_t i = 0; i < ids; ++i) cols[i] = i * slice + static_cast<int64_t>(rng() % slice);
    }
    for (int64_t i = 0; i < ids; ++i) {
      entries.push_back({cols[i], static_cast<int32_t>(i), 0, 0, 1.0f});
    }
    partials.resize(ids * dim);
    grads.resize(ids * dim, 1e-3f);
    scratch.resize(ids * dim * 3);
  }

  config::RunConfig config;
  SgdOptimizer sgd;
  AdagradOptimizer ada;
  const Optimizer* opt;
  std::unique_ptr<SparseCore> sc;
  std::vector<host::CooEntry> entries;
  // 64-byte aligned, as the lookup's non-temporal stores need (row_kernels.h
  // CanStreamRow).
  std::vector<float, TableAllocator<float>> partials;
  std::vector<float> grads, scratch;
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
  Fixture f(dim, ids, state.range(2), /*adagrad=*/false, /*staged=*/state.range(3) == 1);
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
  // Reads P bytes of rows, writes P bytes of pooled vectors.
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
  const double read_s = ColdSecondsPerCall(f.flush, [&] {
    const int ahead = PrefetchRows(dim);
    const int64_t n = static_cast<int64_t>(f.entries.size());
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      if (i + ahead < n) PrefetchRow(shard.row(f.entries[i + ahead].col), dim);
      const float* r = shard.row(f.entries[i].col);
      for (int d = 0; d < dim; d += 16) sum += r[d];
    }
    benchmark::DoNotOptimize(sum);
  });
  Report(state, kernel_s, memcpy_s, rows_s, bytes);
  state.counters["read_GBps"] = bytes / read_s * 1e-9;
  state.counters["x_read"] = kernel_s / read_s;
  state.counters["read_x_memcpy"] = read_s / memcpy_s;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_Update(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const int64_t ids = state.range(1);
  Fixture f(dim, ids, state.range(2), /*adagrad=*/state.range(3) == 1);
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
  // The update reads gradients, rows and slots and writes rows and slots:
  // (3 + 2 s) P bytes of traffic, what a memcpy of half as many bytes moves.
  const int s = f.opt->slots_per_param();
  const double copy_bytes = (3 + 2 * s) * bytes / 2;
  const double memcpy_s = ColdSecondsPerCall(f.flush, [&] {
    std::memcpy(shard.mutable_row(0).data(), f.scratch.data(), copy_bytes);
    benchmark::ClobberMemory();
  });
  const double rows_s = ColdSecondsPerCall(f.flush, [&] {
    const float* gr = f.grads.data();
    for (const host::CooEntry& e : f.entries) {
      f.opt->Apply(shard.mutable_row(e.col), shard.mutable_row_slots(e.col),
                   std::span<const float>(gr, dim), 1);
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

// gap 0: ids spread over the table; gap 1: consecutive rows.
BENCHMARK(BM_Lookup)->ArgsProduct({{16, 64, 128}, {1 << 16}, {0, 1}, {0}})
    ->Unit(benchmark::kMicrosecond)->Iterations(3);
BENCHMARK(BM_Lookup)->ArgsProduct({{64, 128}, {1 << 16}, {0}, {1}})
    ->Unit(benchmark::kMicrosecond)->Iterations(3);
BENCHMARK(BM_Update)->ArgsProduct({{16, 64, 128}, {1 << 16}, {0, 1}, {0}})
    ->Unit(benchmark::kMicrosecond)->Iterations(3);
BENCHMARK(BM_Update)->ArgsProduct({{64, 128}, {1 << 16}, {0, 1}, {1}})
    ->Unit(benchmark::kMicrosecond)->Iterations(3);

}  // namespace
}  // namespace lemrt::device

BENCHMARK_MAIN();
