// Host preprocessing throughput: CooBuilder on one chip's local batch
// (4 SparseCores per chip, 128 chips, multi-hot Zipf-ish ids). Reports ids/s.
#include <cmath>

#include "base/random.h"
#include "benchmark/benchmark.h"
#include "host/preprocess/coo.h"

namespace lemrt::host {
namespace {

void BM_CooBuild(benchmark::State& state) {
  const int features = 20;
  const int64_t samples = state.range(0);
  Batch batch;
  batch.Resize(samples, 1, features);
  base::CounterRng rng(42);
  for (int f = 0; f < features; ++f) {
    for (int64_t i = 0; i < samples; ++i) {
      const int len = 1 + static_cast<int>(std::min(50.0, std::exp(1.5 + 1.9 * rng.NextNormal())));
      for (int k = 0; k < len; ++k) {
        const double u = rng.NextDouble();
        batch.ids[f].push_back(static_cast<int64_t>(std::pow(1e8, u)) - 1);
      }
      batch.offsets[f][i + 1] = static_cast<int64_t>(batch.ids[f].size());
    }
  }
  CooOptions o;
  o.local_sparse_cores = 4;
  o.total_sparse_cores = 512;
  o.max_ids_per_chip_per_sample = 1 << 20;
  for (int f = 0; f < features; ++f) {
    o.features.push_back(FeatureSpec{.table = f,
                                     .vocab_size = 100000000,
                                     .combiner = config::TableConfig::SUM,
                                     .name = "",
                                     .table_name = "",
                                     .sc_shift = 0});
  }
  CooBuilder builder(o);
  layout::PartitionedCoo coo;
  int64_t ids = 0;
  for (auto _ : state) {
    auto st = builder.Build(batch, &coo);
    benchmark::DoNotOptimize(st);
    ids += coo.ids_total;
  }
  state.counters["ids/s"] = benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CooBuild)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lemrt::host

BENCHMARK_MAIN();
