// Host preprocessing of one chip on the workload of the public SparseCore
// preprocessing library's own benchmark: 20 features, 4 SparseCores per chip,
// 128 chips (512 SparseCores), 16,384 samples per SparseCore, vocabulary 1e8,
// ids per sample round(exp(Normal(1.5, 1.9))), each id Zipf(1.00278) with
// probability 0.4243 and uniform otherwise. Measures COO + per-sample dedup +
// mod-shard partition (CooBuilder), per-partition stats (PlanLocal) and the
// minibatch buffer fill (Split), single-threaded, in steady state (buffers
// grown by a warm-up call); reports ids/s. BM_PreprocessWorkers runs the
// trainer's own arrangement: HostStage's local half (batch copy as the data
// read, COO, dedup, partition, stats) on a HostPrefetcher's worker threads and
// the collective half (split agreement on a one-rank communicator, buffer
// fill) on the consumer thread, over 8 steps per iteration; its ids/s are per
// wall second, so on a loaded machine they measure the load too.
// BM_CooBuildWeighted builds the same batch with a weight on every id.
//
//   build/bin/bench_preprocess [--benchmark_filter=...]
//   build/bin/bench_preprocess --write_workload=FILE [--samples_per_sc=16384]
//
// --write_workload writes the workload's batch (the ids BM_Preprocess/N
// preprocesses) to FILE and exits, for a peer fed the same ids
// (scripts/compare_preprocess.sh). The file, little-endian int64 words:
// features, samples, local SparseCores, total SparseCores, vocabulary; then
// per feature its samples + 1 offsets and its offsets[samples] ids.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <memory>

#include <sys/resource.h>

#include "base/huge_pages.h"
#include "base/random.h"
#include "benchmarks/thread_cpu_timer.h"
#include "benchmark/benchmark.h"
#include "host/preprocess/coo.h"
#include "host/input/data_source.h"
#include "host/preprocess/minibatch.h"
#include "runtime/comm/self_communicator.h"
#include "runtime/step/host_prefetcher.h"
#include "runtime/step/host_stage.h"

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

// The same batch with a weight per id (uniform in [0.5, 1.5)) on every
// feature: the weighted build's cost against the plain one's.
const Batch& WeightedWorkload(int64_t samples_per_sc) {
  static Batch batch;
  static int64_t made_for = -1;
  if (made_for == samples_per_sc) return batch;
  batch = Workload(samples_per_sc);
  base::CounterRng rng(2027);
  for (int f = 0; f < kFeatures; ++f) {
    batch.weights[f].resize(batch.ids[f].size());
    for (float& w : batch.weights[f]) w = static_cast<float>(0.5 + rng.NextDouble());
  }
  made_for = samples_per_sc;
  return batch;
}

// count_partitions: the builder counts the partitions (as HostStage does
// when limits are set); false: PlanLocal sorts each segment's keys.
CooOptions Options(bool count_partitions = true) {
  CooOptions o;
  o.local_sparse_cores = kLocalSc;
  o.total_sparse_cores = kTotalSc;
  o.max_ids_per_chip_per_sample = 1 << 30;
  o.count_partitions = count_partitions;
  for (int f = 0; f < kFeatures; ++f) {
    o.features.push_back(FeatureSpec{.table = f,
                                     .vocab_size = kVocab,
                                     .combiner = config::TableConfig::SUM,
                                     .name = "",
                                     .table_name = "",
                                     .sc_shift = 0});
  }
  return o;
}

MinibatchOptions SplitOptions(layout::TableLimit limit) {
  MinibatchOptions o;
  o.local_sparse_cores = kLocalSc;
  o.total_sparse_cores = kTotalSc;
  o.limits.tables.assign(kFeatures, limit);
  o.limits.table_names.assign(kFeatures, "t");
  return o;
}

// Limits at `fraction` of the observed per-partition maxima (at least 1).
layout::TableLimit ObservedLimit(const layout::PartitionedCoo& coo, double fraction) {
  MinibatchSplitter probe(SplitOptions(
      layout::TableLimit{layout::TableLimit::kUnlimited - 1, layout::TableLimit::kUnlimited - 1}));
  probe.PlanLocal(coo);
  int32_t ids = 0, unique = 0;
  for (const layout::PartitionCount& c : probe.counts()) {
    ids = std::max(ids, c.ids);
    unique = std::max(unique, c.unique_ids);
  }
  return layout::TableLimit{std::max<int32_t>(1, static_cast<int32_t>(ids * fraction)),
                            std::max<int32_t>(1, static_cast<int32_t>(unique * fraction))};
}

// The floor: one streaming pass that reads every id of the batch and writes
// one layout::CooEntry per id in input order (no dedup, sort or partition): the bytes
// any preprocessing must move (8 read + 24 written per id). Returns the
// entries written.
int64_t StreamFloor(const Batch& batch, std::vector<layout::CooEntry>* out) {
  layout::CooEntry* o = out->data();
  int64_t k = 0;
  for (int f = 0; f < batch.num_features(); ++f) {
    const int64_t* ids = batch.ids[f].data();
    const std::vector<int64_t>& offsets = batch.offsets[f];
    for (int64_t row = 0; row < batch.num_samples; ++row) {
      for (int64_t i = offsets[row]; i < offsets[row + 1]; ++i) {
        o[k++] = {ids[i], static_cast<int32_t>(row), f, f, 1.0f};
      }
    }
  }
  return k;
}

// Page faults so far (minor ones: memory the kernel maps on first touch) of
// the calling thread (RUSAGE_THREAD) or the process (RUSAGE_SELF). A step in
// steady state takes none.
int64_t PageFaults(int who) {
  rusage u;
  getrusage(who, &u);
  return u.ru_minflt + u.ru_majflt;
}
int64_t ThreadPageFaults() { return PageFaults(RUSAGE_THREAD); }
int64_t ProcessPageFaults() { return PageFaults(RUSAGE_SELF); }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// fraction: limits at this fraction of the observed maxima (1 = fits; 0.25 =
// forced minibatching). Each iteration times the preprocessing and then the
// floor (StreamFloor), both in CPU seconds of this thread; the counters are
// medians over the iterations: ns_per_id (preprocessing), floor_ns_per_id,
// x_floor (the per-iteration ratio). ids/s is per wall second (on a loaded
// machine it measures the load too; ids/cpu_s does not).
void Run(benchmark::State& state, double fraction) {
  const Batch& batch = Workload(state.range(0));
  CooBuilder builder(Options());
  layout::PartitionedCoo coo;
  if (!builder.Build(batch, &coo).ok()) state.SkipWithError("build failed");
  MinibatchOptions so = SplitOptions(ObservedLimit(coo, fraction));
  so.allow_id_dropping = true;  // a single hot row may exceed a quarter
  MinibatchSplitter splitter(so);
  std::vector<layout::PartitionedCoo> minibatches;
  std::vector<int64_t> dropped;
  // On huge pages as the builder's entries (base/huge_pages.h): the floor
  // moves the same bytes the same way.
  std::vector<layout::CooEntry> floor_out;
  base::ReserveOnHugePages(&floor_out, static_cast<size_t>(coo.ids_total));
  floor_out.resize(static_cast<size_t>(coo.ids_total));
  // Warm-up: the timed path twice, as a step of one minibatch swaps the COO's
  // buffers with its minibatch's: both must have held the whole step before
  // the steady state (once each grows every buffer; page faults dominate it).
  for (int i = 0; i < 2; ++i) {
    (void)builder.Build(batch, &coo);
    splitter.SplitVocabulary(&coo, splitter.PlanLocal(coo), &minibatches);
    (void)splitter.Enforce(&minibatches, &dropped);
  }
  benchmark::DoNotOptimize(StreamFloor(batch, &floor_out));
  int64_t ids = 0, mbs = 0, iterations = 0, faults = 0;
  double cpu_s = 0;
  std::vector<double> ns, floor_ns, ratio;
  for (auto _ : state) {
    const int64_t faults0 = ThreadPageFaults();
    const double t0 = bench::ThreadCpuSeconds();
    absl::Status st = builder.Build(batch, &coo);
    const uint64_t boundaries = splitter.PlanLocal(coo);
    // As HostStage::Finish: a step of one minibatch is moved, not copied.
    if (st.ok()) {
      splitter.SplitVocabulary(&coo, boundaries, &minibatches);
      st = splitter.Enforce(&minibatches, &dropped);
    }
    benchmark::DoNotOptimize(st);
    const double t1 = bench::ThreadCpuSeconds();
    faults += ThreadPageFaults() - faults0;
    state.PauseTiming();
    benchmark::DoNotOptimize(StreamFloor(batch, &floor_out));
    const double t2 = bench::ThreadCpuSeconds();
    state.ResumeTiming();
    const double n = static_cast<double>(coo.ids_total);
    ns.push_back((t1 - t0) * 1e9 / n);
    floor_ns.push_back((t2 - t1) * 1e9 / n);
    ratio.push_back((t1 - t0) / (t2 - t1));
    cpu_s += t1 - t0;
    ids += coo.ids_total;
    mbs += static_cast<int64_t>(minibatches.size());
    ++iterations;
  }
  state.counters["ids/s"] = benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
  state.counters["ids/cpu_s"] = cpu_s > 0 ? ids / cpu_s : 0;
  state.counters["ns_per_id"] = Median(ns);
  state.counters["floor_ns_per_id"] = Median(floor_ns);
  state.counters["x_floor"] = Median(ratio);
  state.counters["ids/step"] = static_cast<double>(coo.ids_total);
  state.counters["minibatches"] = iterations ? static_cast<double>(mbs) / iterations : 0;
  state.counters["faults/step"] = iterations ? static_cast<double>(faults) / iterations : 0;
}

// The stages alone, to show where the time goes. BM_CooBuild/samples/count:
// count = 1 with the partition counting, 0 without.
// BM_CooBuildWeighted: the same on WeightedWorkload.
void CooBuild(benchmark::State& state, const Batch& batch) {
  CooBuilder builder(Options(state.range(1) != 0));
  layout::PartitionedCoo coo;
  (void)builder.Build(batch, &coo);  // warm-up: grows the buffers
  int64_t ids = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(builder.Build(batch, &coo));
    ids += coo.ids_total;
  }
  state.counters["ids/s"] = benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
}
void BM_CooBuild(benchmark::State& state) { CooBuild(state, Workload(state.range(0))); }
void BM_CooBuildWeighted(benchmark::State& state) {
  CooBuild(state, WeightedWorkload(state.range(0)));
}

// The per-partition counts from sorted keys (PlanLocal's path when the
// builder did not count them).
void BM_PartitionStats(benchmark::State& state) {
  const Batch& batch = Workload(state.range(0));
  CooBuilder builder(Options(false));
  layout::PartitionedCoo coo;
  (void)builder.Build(batch, &coo);
  MinibatchSplitter splitter(SplitOptions(ObservedLimit(coo, 1.0)));
  (void)splitter.PlanLocal(coo);  // warm-up: grows the buffers
  int64_t ids = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(splitter.PlanLocal(coo));
    ids += coo.ids_total;
  }
  state.counters["ids/s"] = benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
}

// The buffer fill alone (Split of a step that fits: one minibatch).
void BM_SplitFill(benchmark::State& state) {
  const Batch& batch = Workload(state.range(0));
  CooBuilder builder(Options());
  layout::PartitionedCoo coo;
  (void)builder.Build(batch, &coo);
  MinibatchSplitter splitter(SplitOptions(ObservedLimit(coo, 1.0)));
  std::vector<layout::PartitionedCoo> minibatches;
  std::vector<int64_t> dropped;
  const uint64_t boundaries = splitter.PlanLocal(coo);
  (void)splitter.Split(coo, boundaries, &minibatches, &dropped);
  int64_t ids = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(splitter.Split(coo, boundaries, &minibatches, &dropped));
    ids += coo.ids_total;
  }
  state.counters["ids/s"] = benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The workload as a data source: every step is the same batch, copied (the
// data read).
class WorkloadSource : public DataSource {
 public:
  explicit WorkloadSource(const Batch& batch) : batch_(batch) {}
  absl::Status TrainBatch(int64_t, Batch* batch) override {
    *batch = batch_;
    return absl::OkStatus();
  }
  absl::Status EvalBatch(int64_t, Batch* batch) override { return TrainBatch(0, batch); }
  int64_t num_eval_chunks() const override { return 0; }
  int64_t num_eval_samples() const override { return 0; }
  bool has_teacher() const override { return false; }

 private:
  const Batch& batch_;
};

// The workload's config as the host stage reads it (not validated: one rank
// stands for chip 0 of 128).
config::RunConfig WorkloadConfig(bool allow_id_dropping) {
  config::RunConfig c;
  c.mutable_topology()->set_num_chips(kTotalSc / kLocalSc);
  c.mutable_topology()->set_sparse_cores_per_chip(kLocalSc);
  c.mutable_sparse_core()->set_max_ids_per_chip_per_sample(1 << 30);
  c.mutable_sparse_core()->set_allow_id_dropping(allow_id_dropping);
  c.mutable_sparse_core()->set_disable_table_stacking(true);
  for (int f = 0; f < kFeatures; ++f) {
    auto* t = c.add_tables();
    t->set_name("t" + std::to_string(f));
    t->set_vocab_size(kVocab);
    t->set_dim(8);
    auto* feature = c.add_features();
    feature->set_name("f" + std::to_string(f));
    feature->set_table(t->name());
  }
  c.mutable_training()->set_steps(1 << 20);
  return c;
}

// range(0): samples per SparseCore; range(1): worker threads; fraction as Run.
void RunWorkers(benchmark::State& state, double fraction) {
  const Batch& batch = Workload(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  constexpr int kDepth = 2;
  constexpr int64_t kStepsPerIteration = 8;
  CooBuilder builder(Options());
  layout::PartitionedCoo coo;
  (void)builder.Build(batch, &coo);
  layout::PartitionLimits limits;
  limits.tables.assign(kFeatures, ObservedLimit(coo, fraction));
  for (int f = 0; f < kFeatures; ++f) limits.table_names.push_back("t" + std::to_string(f));
  coo = layout::PartitionedCoo();  // give its memory back
  const config::RunConfig config = WorkloadConfig(/*allow_id_dropping=*/fraction < 1);
  WorkloadSource source(batch);
  runtime::SelfCommunicator comm;
  runtime::HostStage host(config, comm, source, limits);
  std::vector<layout::PartitionedCoo> minibatches;
  int64_t step = 0, ids = 0, mbs = 0;
  auto run_steps = [&](runtime::HostPrefetcher& prefetcher, int64_t n) {
    for (int64_t i = 0; i < n; ++i, ++step) {
      runtime::HostWork& w = prefetcher.Take(step);
      absl::Status st = host.Finish(w, nullptr, &minibatches);
      if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
      ids += w.coo.ids_total;
      mbs += static_cast<int64_t>(minibatches.size());
      prefetcher.Release(w);
    }
  };
  // One prefetcher for the warm-up (every item's buffers grow once) and the
  // measured steps, with steps to prefetch after the measured ones: the
  // workers are busy at both ends of the window (steady state), so the work
  // they do inside it is kStepsPerIteration steps' worth.
  constexpr int64_t kWarmUpSteps = kDepth + 1;
  runtime::HostPrefetcher prefetcher(host, threads, kDepth, 0,
                                     kWarmUpSteps + kStepsPerIteration + kDepth + threads);
  run_steps(prefetcher, kWarmUpSteps);
  ids = mbs = 0;
  int64_t steps = 0;
  double cpu0 = 0;
  int64_t faults0 = 0;
  for (auto _ : state) {  // one iteration (Iterations(1))
    faults0 = ProcessPageFaults();
    cpu0 = ProcessCpuSeconds();
    run_steps(prefetcher, kStepsPerIteration);
    steps += kStepsPerIteration;
  }
  const double cpu = ProcessCpuSeconds() - cpu0;
  const int64_t faults = ProcessPageFaults() - faults0;
  state.counters["ids/s"] = benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
  // CPU seconds of every thread (workers and consumer): on a loaded machine
  // ids/s measures the load; ids per CPU-second x workers is the rate the
  // workers reach with a core each.
  state.counters["ids/cpu_s"] = cpu > 0 ? ids / cpu : 0;
  state.counters["ids/cpu_s_x_workers"] = cpu > 0 ? threads * ids / cpu : 0;
  state.counters["minibatches"] = steps ? static_cast<double>(mbs) / steps : 0;
  state.counters["faults/step"] = steps ? static_cast<double>(faults) / steps : 0;
}

void BM_PreprocessWorkers(benchmark::State& state) { RunWorkers(state, 1.0); }
void BM_PreprocessWorkersForcedMinibatching(benchmark::State& state) { RunWorkers(state, 0.25); }

void BM_Preprocess(benchmark::State& state) { Run(state, 1.0); }
void BM_PreprocessForcedMinibatching(benchmark::State& state) { Run(state, 0.25); }

BENCHMARK(BM_CooBuild)->Args({2048, 1})->Args({16384, 1})->Args({16384, 0})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CooBuildWeighted)->Args({16384, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PartitionStats)->Arg(2048)->Arg(16384)->Unit(benchmark::kMillisecond)->UseRealTime();
// Five alternated rounds of preprocessing and floor each (medians).
BENCHMARK(BM_Preprocess)
    ->Arg(2048)
    ->Arg(16384)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);
BENCHMARK(BM_PreprocessForcedMinibatching)
    ->Arg(2048)
    ->Arg(16384)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);
BENCHMARK(BM_SplitFill)->Arg(16384)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PreprocessWorkers)
    ->Args({16384, 1})
    ->Args({16384, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK(BM_PreprocessWorkersForcedMinibatching)
    ->Args({16384, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

// The workload of `samples_per_sc` samples per SparseCore to `path` (the
// format in the file comment); false with errno set when a write fails.
bool WriteWorkload(const std::string& path, int64_t samples_per_sc) {
  const Batch& batch = Workload(samples_per_sc);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const int64_t header[] = {kFeatures, batch.num_samples, kLocalSc, kTotalSc, kVocab};
  bool ok = std::fwrite(header, sizeof(header), 1, f) == 1;
  for (int k = 0; ok && k < kFeatures; ++k) {
    ok = std::fwrite(batch.offsets[k].data(), sizeof(int64_t), batch.offsets[k].size(), f) ==
             batch.offsets[k].size() &&
         std::fwrite(batch.ids[k].data(), sizeof(int64_t), batch.ids[k].size(), f) ==
             batch.ids[k].size();
  }
  return std::fclose(f) == 0 && ok;
}

// The value of flag `--name=` in argv, or empty.
std::string FlagValue(int argc, char** argv, const std::string& name) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return argv[i] + prefix.size();
  }
  return "";
}

}  // namespace
}  // namespace lemrt::host

int main(int argc, char** argv) {
  const std::string workload = lemrt::host::FlagValue(argc, argv, "write_workload");
  if (!workload.empty()) {
    const std::string samples = lemrt::host::FlagValue(argc, argv, "samples_per_sc");
    const int64_t per_sc = samples.empty() ? 16384 : std::atoll(samples.c_str());
    if (per_sc <= 0) {
      std::fprintf(stderr, "--samples_per_sc is '%s'; give a positive number\n", samples.c_str());
      return 2;
    }
    if (!lemrt::host::WriteWorkload(workload, per_sc)) {
      std::fprintf(stderr, "cannot write the workload to %s: %s\n", workload.c_str(),
                   std::strerror(errno));
      return 1;
    }
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
