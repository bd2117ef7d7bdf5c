// Host preprocessing of one chip on the workload of the public SparseCore
// preprocessing library's own benchmark: 20 features, 4 SparseCores per chip,
// 128 chips (512 SparseCores), 16,384 samples per SparseCore, vocabulary 1e8,
// ids per sample round(exp(Normal(1.5, 1.9))), each id Zipf(1.00278) with
// probability 0.4243 and uniform otherwise. Measures COO + per-sample dedup +
// mod-shard partition (CooBuilder), per-partition stats (PlanLocal) and the
// minibatch buffer fill (Split), single-threaded, in steady state (buffers
// grown by a warm-up call); reports ids/s.
//
//   build-h3/bin/bench_preprocess [--benchmark_filter=...]
#include <algorithm>
#include <cmath>

#include "base/random.h"
#include "benchmark/benchmark.h"
#include "host/coo.h"
#include "host/minibatch.h"

namespace lemrt::host {
namespace {

constexpr int kFeatures = 20;
constexpr int kLocalSc = 4;
constexpr int kTotalSc = 512;
constexpr int64_t kVocab = 100000000;

// Zipf(s) over [0, vocab) by inverting the continuous power law.
int64_t Zipf(double u, double s, int64_t vocab) {
  const double a = 1.0 - s;
  const double x = std::pow((std::pow(static_cast<double>(vocab), a) - 1.0) * u + 1.0, 1.0 / a);
  return std::min<int64_t>(vocab - 1, static_cast<int64_t>(x) - 1);
}

const Batch& Workload(int64_t samples_per_sc) {
  static Batch batch;
  static int64_t made_for = -1;
  if (made_for == samples_per_sc) return batch;
  const int64_t samples = samples_per_sc * kLocalSc;
  batch.Resize(samples, 1, kFeatures);
  base::CounterRng rng(2026);
  for (int f = 0; f < kFeatures; ++f) {
    for (int64_t i = 0; i < samples; ++i) {
      const int64_t len = std::llround(std::exp(1.5 + 1.9 * rng.NextNormal()));
      for (int64_t k = 0; k < len; ++k) {
        const bool zipf = rng.NextDouble() < 0.4243;
        const double u = rng.NextDouble();
        batch.ids[f].push_back(zipf ? Zipf(u, 1.00278, kVocab)
                                    : std::min<int64_t>(kVocab - 1, static_cast<int64_t>(u * kVocab)));
      }
      batch.offsets[f][i + 1] = static_cast<int64_t>(batch.ids[f].size());
    }
  }
  made_for = samples_per_sc;
  return batch;
}

CooOptions Options() {
  CooOptions o;
  o.local_sparse_cores = kLocalSc;
  o.total_sparse_cores = kTotalSc;
  o.max_ids_per_chip_per_sample = 1 << 30;
  for (int f = 0; f < kFeatures; ++f) o.features.push_back({f, kVocab, config::TableConfig::SUM});
  return o;
}

MinibatchOptions SplitOptions(TableLimit limit) {
  MinibatchOptions o;
  o.local_sparse_cores = kLocalSc;
  o.total_sparse_cores = kTotalSc;
  o.limits.tables.assign(kFeatures, limit);
  o.limits.table_names.assign(kFeatures, "t");
  return o;
}

// Limits at `fraction` of the observed per-partition maxima (at least 1).
TableLimit ObservedLimit(const PartitionedCoo& coo, double fraction) {
  MinibatchSplitter probe(SplitOptions(TableLimit{TableLimit::kUnlimited - 1, TableLimit::kUnlimited - 1}));
  probe.PlanLocal(coo);
  int32_t ids = 0, unique = 0;
  for (const PartitionCount& c : probe.counts()) {
    ids = std::max(ids, c.ids);
    unique = std::max(unique, c.unique_ids);
  }
  return TableLimit{std::max<int32_t>(1, static_cast<int32_t>(ids * fraction)),
                    std::max<int32_t>(1, static_cast<int32_t>(unique * fraction))};
}

// fraction: limits at this fraction of the observed maxima (1 = fits; 0.25 =
// forced minibatching).
void Run(benchmark::State& state, double fraction) {
  const Batch& batch = Workload(state.range(0));
  CooBuilder builder(Options());
  PartitionedCoo coo;
  if (!builder.Build(batch, &coo).ok()) state.SkipWithError("build failed");
  MinibatchOptions so = SplitOptions(ObservedLimit(coo, fraction));
  so.allow_id_dropping = true;  // a single hot row may exceed a quarter
  MinibatchSplitter splitter(so);
  std::vector<PartitionedCoo> minibatches;
  std::vector<int64_t> dropped;
  // Warm-up: the first call grows every buffer (page faults dominate it).
  (void)splitter.Split(coo, splitter.PlanLocal(coo), &minibatches, &dropped);
  int64_t ids = 0, mbs = 0, iterations = 0;
  for (auto _ : state) {
    absl::Status st = builder.Build(batch, &coo);
    const uint64_t boundaries = splitter.PlanLocal(coo);
    if (st.ok()) st = splitter.Split(coo, boundaries, &minibatches, &dropped);
    benchmark::DoNotOptimize(st);
    ids += coo.ids_total;
    mbs += static_cast<int64_t>(minibatches.size());
    ++iterations;
  }
  state.counters["ids/s"] = benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
  state.counters["ids/step"] = static_cast<double>(coo.ids_total);
  state.counters["minibatches"] = iterations ? static_cast<double>(mbs) / iterations : 0;
}

// The stages alone, to show where the time goes.
void BM_CooBuild(benchmark::State& state) {
  const Batch& batch = Workload(state.range(0));
  CooBuilder builder(Options());
  PartitionedCoo coo;
  (void)builder.Build(batch, &coo);  // warm-up: grows the buffers
  int64_t ids = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(builder.Build(batch, &coo));
    ids += coo.ids_total;
  }
  state.counters["ids/s"] = benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
}

void BM_PartitionStats(benchmark::State& state) {
  const Batch& batch = Workload(state.range(0));
  CooBuilder builder(Options());
  PartitionedCoo coo;
  (void)builder.Build(batch, &coo);
  MinibatchSplitter splitter(SplitOptions(ObservedLimit(coo, 1.0)));
  int64_t ids = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(splitter.PlanLocal(coo));
    ids += coo.ids_total;
  }
  state.counters["ids/s"] = benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
}

void BM_Preprocess(benchmark::State& state) { Run(state, 1.0); }
void BM_PreprocessForcedMinibatching(benchmark::State& state) { Run(state, 0.25); }

BENCHMARK(BM_CooBuild)->Arg(2048)->Arg(16384)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PartitionStats)->Arg(2048)->Arg(16384)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Preprocess)->Arg(2048)->Arg(16384)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PreprocessForcedMinibatching)->Arg(2048)->Arg(16384)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace lemrt::host

BENCHMARK_MAIN();
