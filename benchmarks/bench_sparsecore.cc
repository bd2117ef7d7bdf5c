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
//     of (3 + 2s) x P / 2 bytes, which reads and writes that many. Both
//     copy the pages the kernel touches: the lookup's from the first id's
//     row into the kernel's output, the update's into the table at the
//     first id's row. (A memcpy of P bytes alone would be a third of the
//     SGD update's traffic: 1.5x too strict a reference.) The kernel's own
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
// Targets: x_rows <= 2 for dim 16, x_memcpy <= 1.5 for dim >= 64.
// The memcpy target is physical only for gap 1: spread ids touch 1 row in
// 4-32 of the table, and on the 2-vCPU VM of docs/performance.md even the prefetched
// pass that only loads those rows took 1.1-1.5x a memcpy of the same bytes
// (read_x_memcpy; the memcpy also writes them), against 0.5-0.6x for
// consecutive rows (docs/performance.md). What bounds spread ids is row
// misses in flight per core, not bytes: with the rows on huge pages
// (thp_MiB: the process's AnonHugePages, about the table's 128 MiB plus the
// partials), so not TLB misses, the profile of the gather and of the
// update stalls on the prefetches themselves (the core's miss buffers are
// full), and prefetching 2-4x further ahead measured no faster.
// The partials are 64-byte aligned (as the SparseCore's non-temporal stores
// of one-hot rows need; TableAllocator), the step's scratch is reused.
#include <algorithm>
#include <ctime>
#include <fstream>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "benchmarks/thread_cpu_timer.h"
#include "device/optimizers/optimizer.h"
#include "device/sparsecore/row_kernels.h"
#include "device/sparsecore/sparse_core.h"
#include "device/sparsecore/table_allocator.h"
#include "host/batch.h"
#include "host/preprocess/coo.h"
#include "host/input/synthetic_source.h"
#include "proto/config_loader.h"
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
  std::vector<layout::CooEntry> entries;
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

// CPU seconds of one call of fn starting from cold caches, best of `calls`.
template <typename Fn>
double ColdSecondsPerCall(const std::vector<int64_t>& flush, Fn&& fn, int calls = kColdCalls) {
  double best = 1e30;
  for (int r = 0; r < calls; ++r) {
    EvictCaches(flush);
    const double t0 = ThreadCpuSeconds();
    fn();
    best = std::min(best, ThreadCpuSeconds() - t0);
  }
  return best;
}


// MiB of this process's anonymous memory on transparent huge pages
// (AnonHugePages of /proc/self/smaps_rollup; -1 where unreadable): shows
// whether the tables really got huge pages (TableAllocator asks for them).
double AnonHugePagesMiB() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string key;
  double kb = 0;
  while (in >> key) {
    if (key == "AnonHugePages:" && in >> kb) return kb / 1024;
  }
  return -1;
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
  std::span<const layout::CooEntry> seg(f.entries);
  float* out = f.partials.data();
  auto run = [&] {
    f.sc->Forward(std::span(&seg, 1), std::span(&out, 1), &f.st);
    benchmark::ClobberMemory();
  };
  for (auto _ : state) run();
  const double bytes = static_cast<double>(ids) * dim * 4;
  const double kernel_s = ColdSecondsPerCall(f.flush, run);
  const TableShard& shard = f.sc->shard(0);
  // Reads P bytes of rows, writes P bytes of pooled vectors: from the first
  // id's row (the very rows, for consecutive ids) into the kernel's output
  // buffer, so both sides touch the same pages (on this VM, runs differed
  // by up to 1.6x with the memcpy reading other pages of the table).
  const double memcpy_s = ColdSecondsPerCall(f.flush, [&] {
    std::memcpy(f.partials.data(), shard.row(shard.LocalRow(f.entries.front().col)), bytes);
    benchmark::ClobberMemory();
  });
  const double rows_s = ColdSecondsPerCall(f.flush, [&] {
    float* o = f.scratch.data();
    for (const layout::CooEntry& e : f.entries) {
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
  state.counters["thp_MiB"] = AnonHugePagesMiB();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_Update(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const int64_t ids = state.range(1);
  Fixture f(dim, ids, state.range(2), /*adagrad=*/state.range(3) == 1);
  std::span<const layout::CooEntry> seg(f.entries);
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
  const double s = static_cast<double>(f.opt->SlotFloats(dim)) / dim;
  const double copy_bytes = (3 + 2 * s) * bytes / 2;
  // Into the table from the first id's row (moved back as far as the copy
  // needs to stay inside the table), the pages the kernel updates.
  const int64_t copy_rows = static_cast<int64_t>(copy_bytes) / (4 * dim) + 1;
  const int64_t first_row = std::min(shard.LocalRow(f.entries.front().col),
                                     shard.local_rows() - copy_rows);
  const double memcpy_s = ColdSecondsPerCall(f.flush, [&] {
    std::memcpy(shard.mutable_row(first_row).data(), f.scratch.data(), copy_bytes);
    benchmark::ClobberMemory();
  });
  const double rows_s = ColdSecondsPerCall(f.flush, [&] {
    const float* gr = f.grads.data();
    for (const layout::CooEntry& e : f.entries) {
      f.opt->Apply(shard.mutable_row(e.col), shard.mutable_row_slots(e.col),
                   std::span<const float>(gr, dim), 1, f.opt->learning_rate());
      gr += dim;
    }
    benchmark::ClobberMemory();
  });
  Report(state, kernel_s, memcpy_s, rows_s, bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

// BM_MultiHot/sparse_cores/tables/phase: the issue's multi-hot workload
// (examples/configs/multihot_large.pbtxt: tables of 10^6 rows, dim 64, SGD,
// 1-70 ids per feature per sample, 70% Zipf with exponent 1.05, SUM; batch
// 512 on one chip of `sparse_cores` SparseCores) as one SparseCore sees it:
// SparseCore 0's partition of a batch drawn by the synthetic source and
// partitioned by the host's CooBuilder (ids sorted and merged per sample and
// feature; groups of ~35 / sparse_cores entries, many ids repeated across
// samples). `tables` of the config's 26 keep the memory small; the
// per-table work is the same. phase 0 times Forward, 1 Backward, cold
// caches as above; bf16 1 stores the tables as bf16 (dtype BF16: the same
// batch, half the row bytes). References on the step's U unique rows (P =
// U x the row bytes, 256 or 128): memcpy of P bytes (lookup) or of 3 P / 2 (update, as BM_Update),
// and the prefetched read-only pass over the unique rows (read), each call
// alternating with the kernel's (x_*: medians of the per-round ratios).
// Also ns_per_id (per entry, best round) and the entry and unique counts.
constexpr char kMultiHotTable[] = R"pb(
tables { name: "t%d" vocab_size: 1000000 dim: 64 combiner: SUM dtype: %s })pb";
constexpr char kMultiHotFeature[] = R"pb(
features { name: "f%d" table: "t%d" max_sequence_length: 70 })pb";

void BM_MultiHot(benchmark::State& state) {
  const int sparse_cores = static_cast<int>(state.range(0));
  const int tables = static_cast<int>(state.range(1));
  const bool backward = state.range(2) == 1;
  const char* dtype = state.range(3) == 1 ? "BF16" : "FP32";
  std::string text = absl::StrFormat(
      "topology { num_chips: 1 sparse_cores_per_chip: %d }\n"
      "sparse_core { max_ids_per_chip_per_sample: 5000 disable_table_stacking: true }\n"
      "model { num_dense_features: 13 bottom_mlp: [ 128, 64 ] top_mlp: [ 128, 1 ] }\n"
      "training { global_batch: 512 embedding_learning_rate: 0.1 seed: 2026 }\n"
      "data { synthetic { zipf_fraction: 0.7 zipf_exponent: 1.05 } }\n",
      sparse_cores);
  for (int t = 0; t < tables; ++t) {
    text += absl::StrFormat(kMultiHotTable, t, dtype) + absl::StrFormat(kMultiHotFeature, t, t);
  }
  absl::StatusOr<config::RunConfig> config = config::ParseConfig(text, "bench", "", 1);
  if (!config.ok()) {
    state.SkipWithError(std::string(config.status().message()).c_str());
    return;
  }
  absl::StatusOr<std::unique_ptr<host::SyntheticSource>> source =
      host::SyntheticSource::Create(*config, 0, 1);
  host::Batch batch;
  layout::PartitionedCoo coo;
  host::CooBuilder builder(host::MakeCooOptions(*config));
  if (!source.ok() || !(*source)->TrainBatch(0, &batch).ok() || !builder.Build(batch, &coo).ok()) {
    state.SkipWithError("could not draw the batch");
    return;
  }
  SgdOptimizer sgd(0.1f);
  std::vector<const Optimizer*> opts(tables, &sgd);
  SparseCore sc(*config, 0, opts);
  std::vector<std::span<const layout::CooEntry>> segs;
  std::vector<std::vector<float, TableAllocator<float>>> partials;
  std::vector<std::vector<float>> grads;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1e-3f, 1e-3f);
  int64_t ids = 0;
  for (int s = 0; s < sparse_cores; ++s) {
    segs.push_back(coo.segment(0, s));
    ids += static_cast<int64_t>(segs.back().size());
    partials.emplace_back(PartialFloats(segs.back(), sc.table_dims()));
    grads.emplace_back(partials.back().size());
    for (float& g : grads.back()) g = u(rng);
  }
  std::vector<float*> outs;
  std::vector<const float*> ins;
  for (int s = 0; s < sparse_cores; ++s) {
    outs.push_back(partials[s].data());
    ins.push_back(grads[s].data());
  }
  SparseCoreStepState st;
  auto forward = [&] {
    sc.Forward(segs, outs, &st);
    benchmark::ClobberMemory();
  };
  auto run = [&] {
    if (backward) {
      sc.Backward(segs, ins, &st);
    } else {
      sc.Forward(segs, outs, &st);
    }
    benchmark::ClobberMemory();
  };
  forward();
  for (auto _ : state) run();
  std::vector<int64_t> flush(kFlushBytes / 8, 1);
  const int64_t uniques = static_cast<int64_t>(st.unique_keys.size());
  const double bytes = static_cast<double>(uniques) * sc.shard(0).row_bytes();
  const double copy_bytes = backward ? 1.5 * bytes : bytes;
  std::vector<float> src(static_cast<size_t>(copy_bytes / 4)), dst(src.size());
  auto copy = [&] {
    std::memcpy(dst.data(), src.data(), copy_bytes);
    benchmark::ClobberMemory();
  };
  auto read = [&] {
    const int64_t row_bytes = sc.shard(0).row_bytes();
    const int ahead = PrefetchRows(static_cast<int>(row_bytes / 4));
    uint8_t sum = 0;
    for (int64_t i = 0; i < uniques; ++i) {
      if (i + ahead < uniques) {
        const uint64_t key = st.unique_keys[i + ahead];
        PrefetchBytes(sc.shard(UniqueKeyTable(key)).row_address(st.unique_rows[i + ahead]),
                      row_bytes);
      }
      const auto* r = static_cast<const uint8_t*>(
          sc.shard(UniqueKeyTable(st.unique_keys[i])).row_address(st.unique_rows[i]));
      for (int64_t b = 0; b < row_bytes; b += 64) sum = static_cast<uint8_t>(sum + r[b]);
    }
    benchmark::DoNotOptimize(sum);
  };
  // Kernel and references alternate, each from cold caches; the ratios are
  // medians over the rounds (each round's calls see about the same load
  // from other processes), the kernel's time the best round.
  std::vector<double> kernel_s, x_memcpy, x_read;
  for (int r = 0; r < kColdCalls; ++r) {
    const double k = ColdSecondsPerCall(flush, run, 1);
    kernel_s.push_back(k);
    x_memcpy.push_back(k / ColdSecondsPerCall(flush, copy, 1));
    x_read.push_back(k / ColdSecondsPerCall(flush, read, 1));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  state.counters["ids"] = static_cast<double>(ids);
  state.counters["unique"] = static_cast<double>(uniques);
  state.counters["ns_per_id"] =
      *std::min_element(kernel_s.begin(), kernel_s.end()) / static_cast<double>(ids) * 1e9;
  state.counters["x_memcpy"] = median(x_memcpy);
  state.counters["x_read"] = median(x_read);
}
BENCHMARK(BM_MultiHot)->ArgsProduct({{4}, {8}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)->Iterations(3);
BENCHMARK(BM_MultiHot)->ArgsProduct({{1}, {2}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)->Iterations(3);

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

// The random-row gather reference of scripts/multihot_bandwidth.sh: 2^20
// rows of `row_bytes` bytes drawn uniformly from a 512 MiB table (on huge
// pages, as tables are; far larger than the caches) copied into a 1 MiB
// buffer (reused: it stays in the caches), prefetching as the SparseCore's
// gather does: gather_GBps = row bytes read per CPU second, best of several
// calls. What scattered rows can be moved at, where the memcpy bandwidth is
// what consecutive bytes can: the honest limit for a step touching rows all
// over its tables.
void BM_RandomRowGather(benchmark::State& state) {
  const int64_t row_bytes = state.range(0);
  const int64_t table_bytes = int64_t{512} << 20;
  const int64_t table_rows = table_bytes / row_bytes;
  constexpr int64_t kRows = int64_t{1} << 20;
  std::vector<char, TableAllocator<char>> table(table_bytes, 1);
  std::vector<char> out(int64_t{1} << 20);
  std::vector<int64_t> rows(kRows);
  std::mt19937_64 rng(11);
  for (int64_t& r : rows) r = static_cast<int64_t>(rng() % static_cast<uint64_t>(table_rows));
  const int ahead = PrefetchRows(static_cast<int>(row_bytes / 4));
  const int64_t out_rows = static_cast<int64_t>(out.size()) / row_bytes;
  auto gather = [&] {
    for (int64_t i = 0; i < kRows; ++i) {
      if (i + ahead < kRows) PrefetchBytes(table.data() + rows[i + ahead] * row_bytes, row_bytes);
      std::memcpy(out.data() + (i % out_rows) * row_bytes, table.data() + rows[i] * row_bytes,
                  row_bytes);
    }
    benchmark::ClobberMemory();
  };
  for (auto _ : state) gather();
  state.counters["gather_GBps"] =
      static_cast<double>(kRows * row_bytes) / SecondsPerCall(1, gather) * 1e-9;
  state.counters["thp_MiB"] = AnonHugePagesMiB();
}
BENCHMARK(BM_RandomRowGather)->Arg(128)->Arg(256)->Unit(benchmark::kMillisecond)->Iterations(2);

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
