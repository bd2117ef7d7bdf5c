// The synthetic source on the multi-hot workload (examples/configs/
// multihot_large.pbtxt: 26 tables x 10^6 rows, 1..70 ids per feature per
// sample, 70% Zipf(1.05), batch 512 on one rank): one TrainBatch (sampling the
// ids, the dense features and the planted teacher's label) with the teacher
// values w and h precomputed for the first `cached` ids of each table (0: none,
// every id computes them; 4096: the default) or more. The batches are the
// same for every size. exact_hidden:1 computes every sample's pair term from
// libm's hidden vectors (the definition; the default computes them from
// bounded approximations and falls back only where a bit could differ: the
// same batches). Thread CPU time, so rows compare on a loaded machine;
// counters: ms_per_batch, ns_per_id and fill_s (the caches' one-time fill,
// wall seconds). Larger caches measured slower: their random reads miss the
// CPU caches and cost about what computing the values does.
//
//   build/bin/bench_synthetic
#include <chrono>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "benchmarks/thread_cpu_timer.h"
#include "glog/logging.h"
#include "host/input/synthetic_source.h"
#include "proto/config_loader.h"

namespace lemrt::host {
namespace {

config::RunConfig MultiHotConfig() {
  std::string text = "topology { num_chips: 1 sparse_cores_per_chip: 4 }\n";
  for (int t = 0; t < 26; ++t) {
    const std::string n = std::to_string(t);
    text += "tables { name: 't" + n + "' vocab_size: 1000000 dim: 64 }\n";
    text += "features { name: 'f" + n + "' table: 't" + n + "' max_sequence_length: 70 }\n";
  }
  text += R"pb(
model { num_dense_features: 13 bottom_mlp: [ 128, 64 ] top_mlp: [ 128, 1 ] }
training { global_batch: 512 steps: 30 seed: 2026 }
data { synthetic { zipf_fraction: 0.7 zipf_exponent: 1.05 } }
)pb";
  auto c = config::ParseConfig(text, "bench_synthetic", "", 1);
  CHECK(c.ok()) << c.status();
  return *c;
}

void BM_SyntheticTrainBatch(benchmark::State& state) {
  static const config::RunConfig config = MultiHotConfig();
  const int64_t cached = state.range(0);
  const bool exact_hidden = state.range(1) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto source = SyntheticSource::CreateWithCachedIds(config, 0, 1, cached, exact_hidden);
  CHECK(source.ok()) << source.status();
  const double fill_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Batch batch;
  int64_t step = 0;
  CHECK((*source)->TrainBatch(step++, &batch).ok());  // buffers grown
  int64_t ids = 0;
  for (int f = 0; f < batch.num_features(); ++f) ids += static_cast<int64_t>(batch.ids[f].size());
  double seconds = 0;
  for (auto _ : state) {
    const double s =
        bench::SecondsPerCall(1, [&] { CHECK((*source)->TrainBatch(step++, &batch).ok()); });
    seconds += s;
    state.SetIterationTime(s);
  }
  state.counters["ms_per_batch"] = seconds / state.iterations() * 1e3;
  state.counters["ns_per_id"] = seconds / state.iterations() / ids * 1e9;
  state.counters["fill_s"] = fill_s;
}
BENCHMARK(BM_SyntheticTrainBatch)
    ->ArgNames({"cached", "exact_hidden"})
    ->Args({0, 0})
    ->Args({4096, 0})
    ->Args({4096, 1})
    ->Args({65536, 0})
    ->Args({1 << 20, 0})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lemrt::host

BENCHMARK_MAIN();
