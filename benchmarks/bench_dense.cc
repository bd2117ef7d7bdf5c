// The dense step (DenseModel::ForwardBackward) against the GEMM backend
// alone, in one binary, for the model and batch of every example config
// (examples/configs/*.pbtxt; also batches 128, 512 and 1024 of the Criteo
// shape, the ones scripts/compare_torch.sh trains), and, as BM_CrossDense,
// the Criteo shape's bottom MLP and features with the other interactions:
// dcn_v2 (3 cross layers of rank 128) and concat, top 512-256-1 on
// x_0 = [z_0, embeddings] (width 432), at batches 128 and 1024.
//
// For each (model, batch) and each thread count T in {1, all cores}:
//   model: one training step of the dense model on a ThreadTeam of T threads
//          (blocked GEMMs, fused bias + ReLU, interaction or cross layers'
//          elementwise terms, losses, copies);
//   ref:   the same step's matrix products only, each as one call of the
//          backend with its own threading on T threads: the GEMMs (per
//          layer Y = X W, dW = X^T dY and, where the model needs it, dX =
//          dY W^T; the same for each feature projection and each cross
//          layer's V_l, U_l or W_l; device::BackendGemm) and, for the dot
//          interaction, its batched products as the reference DLRM forms
//          them (torch.bmm): G = Z Z^T per sample forward and dZ = S Z
//          backward (S: the [n x n] symmetric matrix of the pair
//          gradients), on oneDNN's batched matmul (BatchedInteraction).
// Both use the products' FLOP count, so of_ref = ref time / model time: the
// share of the backend's speed the whole step reaches (target >= 0.85).
// The two alternate in rounds (wall time; T > 1 needs it), and the counters
// are medians over the rounds (of_ref_min / of_ref_max: the range).
//
// BM_DenseBf16/<model>/batch/threads (where the CPU has avx512_bf16 or AMX):
// the same step with model.dense_dtype FP32 and BF16, alternated in rounds
// in one process; bf16_x = fp32 step time / bf16 step time (median over
// the rounds, bf16_x_min / bf16_x_max: the range), and gemm_bf16_x the same
// ratio for the step's GEMMs alone (the blocked Gemm on the calling thread,
// GemmPrecision kFp32 vs kBf16): what the products' number format allows;
// gemm_rounded_bf16_x with the operands given rounded (Bf16Operands, as the
// MLP layers give theirs): the products' gain without the rounding.
// One thread: thread CPU time (robust to other load); more: wall time.
// BM_ProductPeak (x86-64 with avx512_bf16): one core's peak of the two
// instructions the kernels are made of, 28 independent chains each, thread
// CPU time: fma_GFLOPs (vfmadd231ps zmm, 32 flops), dpbf16_GFLOPs
// (vdpbf16ps zmm, 64 flops) and dpbf16_of_fma, the ceiling of bf16_x.
//
//   build/bin/bench_dense [--benchmark_filter=criteo] [--rounds=N]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "base/bf16.h"
#include "benchmarks/thread_cpu_timer.h"
#include "device/tensorcore/dense_model.h"
#include "device/tensorcore/gemm.h"
#include "device/tensorcore/thread_team.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "proto/config_loader.h"
#include "runtime/threads/thread_budget.h"

#ifndef LEMRT_SOURCE_DIR
#define LEMRT_SOURCE_DIR "."
#endif

namespace lemrt::device {
namespace {

using Clock = std::chrono::steady_clock;

int g_rounds = 7;

struct GemmCall {
  bool ta, tb;
  int64_t m, n, k;
};

// The GEMMs of one training step of `spec` on `batch` samples, as the model
// issues them (mlp.cc, dlrm_dense.cc, cross_network.cc).
std::vector<GemmCall> StepGemms(const DenseModelSpec& spec, int64_t batch) {
  const DlrmShape& shape = spec.shape;
  std::vector<GemmCall> calls;
  auto layer = [&](int64_t in, int64_t out, bool needs_dx) {
    calls.push_back({false, false, batch, out, in});
    calls.push_back({true, false, in, out, batch});
    if (needs_dx) calls.push_back({false, true, batch, in, out});
  };
  int64_t in = shape.num_dense;
  for (size_t l = 0; l < shape.bottom.size(); ++l) {
    layer(in, shape.bottom[l], l > 0);
    in = shape.bottom[l];
  }
  const int64_t d = shape.bottom.back();
  if (spec.interaction == Interaction::kDot) {
    for (int dim : shape.feature_dims) {
      if (dim != d) layer(dim, d, true);
    }
    const int64_t f1 = static_cast<int64_t>(shape.feature_dims.size()) + 1;
    in = d + f1 * (f1 - 1) / 2;
  } else {
    in = d;
    for (int dim : shape.feature_dims) in += dim;
    if (spec.interaction == Interaction::kDcnV2) {
      const int64_t r = spec.cross_low_rank;
      for (int l = 0; l < spec.cross_layers; ++l) {
        if (r > 0) {
          layer(in, r, true);  // t = x V
          layer(r, in, true);  // a = t U
        } else {
          layer(in, in, true);  // a = x W
        }
      }
    }
  }
  for (int w : shape.top) {
    layer(in, w, true);
    in = w;
  }
  return calls;
}

double Flops(const std::vector<GemmCall>& calls) {
  double f = 0;
  for (const GemmCall& c : calls) f += 2.0 * c.m * c.n * c.k;
  return f;
}

// The dot interaction's products on oneDNN's batched matmul, as the
// reference DLRM forms them: forward G [n x n] = Z Z^T, backward dZ [n x d]
// = S Z, per sample (Z: the sample's n vectors of width d, packed).
class BatchedInteraction {
 public:
  BatchedInteraction(int64_t batch, int64_t n, int64_t d)
      : batch_(batch), n_(n), d_(d), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_),
        z_(batch * n * d, 0.01f), g_(batch * n * n, 0.02f), dz_(batch * n * d) {
    using dnnl::memory;
    const memory::desc z({batch, n, d}, memory::data_type::f32, memory::dims{n * d, d, 1});
    const memory::desc zt({batch, d, n}, memory::data_type::f32, memory::dims{n * d, 1, d});
    const memory::desc g({batch, n, n}, memory::data_type::f32, memory::dims{n * n, n, 1});
    forward_ = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(z, zt, g), engine_));
    backward_ = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(g, z, z), engine_));
    z_mem_ = memory(z, engine_, z_.data());
    zt_mem_ = memory(zt, engine_, z_.data());
    g_mem_ = memory(g, engine_, g_.data());
    dz_mem_ = memory(z, engine_, dz_.data());
  }

  double Flops() const { return 2.0 * 2.0 * batch_ * n_ * n_ * d_; }

  void Run(int threads) {
    omp_set_num_threads(threads);
    forward_.execute(stream_, {{DNNL_ARG_SRC, z_mem_}, {DNNL_ARG_WEIGHTS, zt_mem_},
                               {DNNL_ARG_DST, g_mem_}});
    backward_.execute(stream_, {{DNNL_ARG_SRC, g_mem_}, {DNNL_ARG_WEIGHTS, z_mem_},
                                {DNNL_ARG_DST, dz_mem_}});
    stream_.wait();
    // As BackendGemm: the calling thread's own oneDNN calls (the model's
    // blocks) must stay on one OpenMP thread.
    omp_set_num_threads(1);
  }

 private:
  int64_t batch_, n_, d_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::matmul forward_, backward_;
  std::vector<float> z_, g_, dz_;
  dnnl::memory z_mem_, zt_mem_, g_mem_, dz_mem_;
};

template <typename Fn>
double WallSecondsPerCall(int reps, Fn&& fn) {
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < reps; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - t0).count() / reps;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void BM_DenseStep(benchmark::State& state, DenseModelSpec spec, int64_t batch, int threads) {
  ThreadTeam team(threads);
  auto model = CreateDenseModel(spec, batch, 1, &team).value();
  std::vector<float> dense(batch * spec.shape.num_dense, 0.5f);
  std::vector<float> emb(batch * model->embedding_width());
  for (size_t i = 0; i < emb.size(); ++i) emb[i] = 0.01f * static_cast<float>(i % 13);
  std::vector<float> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<float>(i % 2);
  std::vector<float> d_emb(emb.size());
  auto step = [&] {
    benchmark::DoNotOptimize(model->ForwardBackward(batch, dense.data(), emb.data(),
                                                    labels.data(), 1.0f / batch, d_emb.data()));
  };

  const std::vector<GemmCall> calls = StepGemms(spec, batch);
  struct Buffers {
    std::vector<float> a, b, c;
  };
  std::vector<Buffers> bufs;
  for (const GemmCall& c : calls) {
    bufs.push_back({std::vector<float>(c.m * c.k, 0.01f), std::vector<float>(c.k * c.n, 0.02f),
                    std::vector<float>(c.m * c.n)});
  }
  std::unique_ptr<BatchedInteraction> interaction;
  if (spec.interaction == Interaction::kDot) {
    interaction = std::make_unique<BatchedInteraction>(
        batch, static_cast<int64_t>(spec.shape.feature_dims.size()) + 1, spec.shape.bottom.back());
  }
  auto reference = [&] {
    for (size_t i = 0; i < calls.size(); ++i) {
      const GemmCall& c = calls[i];
      BackendGemm(threads, c.ta, c.tb, c.m, c.n, c.k, bufs[i].a.data(), c.ta ? c.m : c.k,
                  bufs[i].b.data(), c.tb ? c.k : c.n, bufs[i].c.data(), c.n);
    }
    if (interaction) interaction->Run(threads);
    benchmark::ClobberMemory();
  };

  for (auto _ : state) step();
  // Alternating rounds of about 0.2 s each side.
  step();
  reference();
  const double one = std::max(1e-6, WallSecondsPerCall(1, step));
  const int reps = std::max(1, static_cast<int>(0.2 / one));
  std::vector<double> model_s, ref_s, ratio;
  for (int r = 0; r < g_rounds; ++r) {
    model_s.push_back(WallSecondsPerCall(reps, step));
    ref_s.push_back(WallSecondsPerCall(reps, reference));
    ratio.push_back(ref_s.back() / model_s.back());
  }
  const double flops = Flops(calls) + (interaction ? interaction->Flops() : 0.0);
  state.counters["threads"] = threads;
  state.counters["step_ms"] = Median(model_s) * 1e3;
  state.counters["GFLOPs"] = flops / Median(model_s) * 1e-9;
  state.counters["ref_GFLOPs"] = flops / Median(ref_s) * 1e-9;
  state.counters["of_ref"] = Median(ratio);
  state.counters["of_ref_min"] = *std::min_element(ratio.begin(), ratio.end());
  state.counters["of_ref_max"] = *std::max_element(ratio.begin(), ratio.end());
}

// The step's GEMMs alone on the calling thread in one precision.
class StepProducts {
 public:
  StepProducts(const DenseModelSpec& spec, int64_t batch) : calls_(StepGemms(spec, batch)) {
    for (const GemmCall& c : calls_) {
      Buffers& b = bufs_.emplace_back();
      b.a.assign(c.m * c.k, 0.01f);
      b.b.assign(c.k * c.n, 0.02f);
      b.c.resize(c.m * c.n);
      b.a16.resize(b.a.size());
      b.b16.resize(b.b.size());
      base::NarrowBf16Nearest(b.a, b.a16.data());
      base::NarrowBf16Nearest(b.b, b.b16.data());
    }
  }
  // rounded (kBf16 only): the operands given rounded.
  void Run(GemmPrecision precision, bool rounded = false) {
    for (size_t i = 0; i < calls_.size(); ++i) {
      const GemmCall& c = calls_[i];
      const Bf16Operands given = rounded ? Bf16Operands{bufs_[i].a16.data(), bufs_[i].b16.data()}
                                         : Bf16Operands{};
      Gemm(nullptr, c.ta, c.tb, c.m, c.n, c.k, bufs_[i].a.data(), c.ta ? c.m : c.k,
           bufs_[i].b.data(), c.tb ? c.k : c.n, bufs_[i].c.data(), c.n, {}, precision, given);
    }
    benchmark::ClobberMemory();
  }

 private:
  struct Buffers {
    std::vector<float> a, b, c;
    std::vector<uint16_t> a16, b16;
  };
  std::vector<GemmCall> calls_;
  std::vector<Buffers> bufs_;
};

void BM_DenseBf16(benchmark::State& state, DenseModelSpec spec, int64_t batch, int threads) {
  ThreadTeam team(threads);
  spec.precision = GemmPrecision::kFp32;
  auto fp32 = CreateDenseModel(spec, batch, 1, &team).value();
  spec.precision = GemmPrecision::kBf16;
  auto bf16 = CreateDenseModel(spec, batch, 1, &team).value();
  std::vector<float> dense(batch * spec.shape.num_dense, 0.5f);
  std::vector<float> emb(batch * fp32->embedding_width());
  for (size_t i = 0; i < emb.size(); ++i) emb[i] = 0.01f * static_cast<float>(i % 13);
  std::vector<float> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<float>(i % 2);
  std::vector<float> d_emb(emb.size());
  auto step = [&](DenseModel& model) {
    return [&] {
      benchmark::DoNotOptimize(model.ForwardBackward(batch, dense.data(), emb.data(), labels.data(),
                                                     1.0f / batch, d_emb.data()));
    };
  };
  auto step32 = step(*fp32);
  auto step16 = step(*bf16);
  StepProducts products(spec, batch);
  auto gemm32 = [&] { products.Run(GemmPrecision::kFp32); };
  auto gemm16 = [&] { products.Run(GemmPrecision::kBf16); };
  auto gemm16_rounded = [&] { products.Run(GemmPrecision::kBf16, /*rounded=*/true); };
  for (auto _ : state) step16();
  step32();
  gemm32();
  gemm16();
  gemm16_rounded();
  auto seconds = [threads](int reps, auto&& fn) {
    if (threads > 1) return WallSecondsPerCall(reps, fn);
    const double t0 = bench::ThreadCpuSeconds();
    for (int i = 0; i < reps; ++i) fn();
    return (bench::ThreadCpuSeconds() - t0) / reps;
  };
  const double one = std::max(1e-6, seconds(1, step32));
  const int reps = std::max(1, static_cast<int>(0.2 / one));
  std::vector<double> ms32, ms16, ratio, gemm_ratio, rounded_ratio;
  for (int r = 0; r < g_rounds; ++r) {
    ms32.push_back(seconds(reps, step32) * 1e3);
    ms16.push_back(seconds(reps, step16) * 1e3);
    ratio.push_back(ms32.back() / ms16.back());
    const double g32 = seconds(reps, gemm32);
    gemm_ratio.push_back(g32 / seconds(reps, gemm16));
    rounded_ratio.push_back(g32 / seconds(reps, gemm16_rounded));
  }
  state.counters["threads"] = threads;
  state.counters["fp32_ms"] = Median(ms32);
  state.counters["bf16_ms"] = Median(ms16);
  state.counters["bf16_x"] = Median(ratio);
  state.counters["bf16_x_min"] = *std::min_element(ratio.begin(), ratio.end());
  state.counters["bf16_x_max"] = *std::max_element(ratio.begin(), ratio.end());
  state.counters["gemm_bf16_x"] = Median(gemm_ratio);
  state.counters["gemm_rounded_bf16_x"] = Median(rounded_ratio);
}

#if defined(__x86_64__)
// 28 accumulators, so that the instruction's throughput, not its latency,
// bounds the loop; zmm30 and zmm31 hold the operands (zero: no subnormals).
#define LEMRT_28(op)                                                     \
  op " %%zmm30, %%zmm31, %%zmm0\n" op " %%zmm30, %%zmm31, %%zmm1\n" op   \
     " %%zmm30, %%zmm31, %%zmm2\n" op " %%zmm30, %%zmm31, %%zmm3\n" op   \
     " %%zmm30, %%zmm31, %%zmm4\n" op " %%zmm30, %%zmm31, %%zmm5\n" op   \
     " %%zmm30, %%zmm31, %%zmm6\n" op " %%zmm30, %%zmm31, %%zmm7\n" op   \
     " %%zmm30, %%zmm31, %%zmm8\n" op " %%zmm30, %%zmm31, %%zmm9\n" op   \
     " %%zmm30, %%zmm31, %%zmm10\n" op " %%zmm30, %%zmm31, %%zmm11\n" op \
     " %%zmm30, %%zmm31, %%zmm12\n" op " %%zmm30, %%zmm31, %%zmm13\n" op \
     " %%zmm30, %%zmm31, %%zmm14\n" op " %%zmm30, %%zmm31, %%zmm15\n" op \
     " %%zmm30, %%zmm31, %%zmm16\n" op " %%zmm30, %%zmm31, %%zmm17\n" op \
     " %%zmm30, %%zmm31, %%zmm18\n" op " %%zmm30, %%zmm31, %%zmm19\n" op \
     " %%zmm30, %%zmm31, %%zmm20\n" op " %%zmm30, %%zmm31, %%zmm21\n" op \
     " %%zmm30, %%zmm31, %%zmm22\n" op " %%zmm30, %%zmm31, %%zmm23\n" op \
     " %%zmm30, %%zmm31, %%zmm24\n" op " %%zmm30, %%zmm31, %%zmm25\n" op \
     " %%zmm30, %%zmm31, %%zmm26\n" op " %%zmm30, %%zmm31, %%zmm27\n"
#define LEMRT_CLOBBERS                                                                            \
  "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
      "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",   \
      "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm30", "xmm31"

// Seconds of thread CPU time per instruction of `loops` x 28 FMAs or bf16 dots.
double FmaLoop(int64_t loops) {
  const double t0 = bench::ThreadCpuSeconds();
  asm volatile(
      "vpxord %%zmm30, %%zmm30, %%zmm30\n vpxord %%zmm31, %%zmm31, %%zmm31\n mov %0, %%rcx\n"
      "1:\n" LEMRT_28("vfmadd231ps") "dec %%rcx\n jnz 1b\n"
      :
      : "r"(loops)
      : LEMRT_CLOBBERS);
  return (bench::ThreadCpuSeconds() - t0) / (28.0 * static_cast<double>(loops));
}

double DpBf16Loop(int64_t loops) {
  const double t0 = bench::ThreadCpuSeconds();
  asm volatile(
      "vpxord %%zmm30, %%zmm30, %%zmm30\n vpxord %%zmm31, %%zmm31, %%zmm31\n mov %0, %%rcx\n"
      "1:\n" LEMRT_28("vdpbf16ps") "dec %%rcx\n jnz 1b\n"
      :
      : "r"(loops)
      : LEMRT_CLOBBERS);
  return (bench::ThreadCpuSeconds() - t0) / (28.0 * static_cast<double>(loops));
}

void BM_ProductPeak(benchmark::State& state) {
  constexpr int64_t kLoops = 4'000'000;
  std::vector<double> fma, dot;
  for (auto _ : state) {
    for (int r = 0; r < g_rounds; ++r) {
      fma.push_back(32e-9 / FmaLoop(kLoops));
      dot.push_back(64e-9 / DpBf16Loop(kLoops));
    }
  }
  state.counters["fma_GFLOPs"] = Median(fma);
  state.counters["dpbf16_GFLOPs"] = Median(dot);
  state.counters["dpbf16_of_fma"] = Median(dot) / Median(fma);
}
#endif

void Register(const std::string& name, const DenseModelSpec& spec, int64_t batch,
              int threads) {
  benchmark::RegisterBenchmark(name.c_str(), BM_DenseStep, spec, batch, threads)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(3)
      ->UseRealTime();
}

std::string Suffix(int64_t batch, int threads) {
  return "/batch:" + std::to_string(batch) + "/threads:" + std::to_string(threads);
}

// Every example config's model at its global batch (one rank), plus the
// Criteo shape at the batches the PyTorch comparison trains and with the
// other interactions (BM_CrossDense).
void RegisterAll() {
  const std::filesystem::path dir = std::filesystem::path(LEMRT_SOURCE_DIR) / "examples/configs";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".pbtxt") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  const int cores = runtime::AvailableCores();
  const bool bf16 = CheckBf16Products().ok();
  if (!bf16) {
    std::fprintf(stderr, "bench_dense: no BM_DenseBf16: %s\n",
                 std::string(CheckBf16Products().message()).c_str());
  }
  auto batch_of = [](const config::RunConfig& c) { return c.training().global_batch(); };
#if defined(__x86_64__)
  if (bf16) {
    benchmark::RegisterBenchmark("BM_ProductPeak", BM_ProductPeak)->Iterations(1);
  }
#endif
  std::vector<int> thread_counts = {1};
  if (cores > 1) thread_counts.push_back(cores);
  for (const auto& file : files) {
    auto config = config::LoadConfig(file.string(), "", 1);
    if (!config.ok()) {
      std::fprintf(stderr, "bench_dense: skipping %s: %s\n", file.c_str(),
                   std::string(config.status().message()).c_str());
      continue;
    }
    const DenseModelSpec spec = DenseModelSpecFromConfig(*config);
    std::vector<int64_t> batches = {config->training().global_batch()};
    if (file.stem() == "criteo_kaggle_shape") batches = {128, 512, 1024};
    for (int64_t batch : batches) {
      for (int threads : thread_counts) {
        Register(file.stem().string() + Suffix(batch, threads), spec, batch, threads);
      }
    }
    if (bf16 && (file.stem() == "criteo_kaggle_shape" || file.stem() == "dlrm_synthetic")) {
      for (int64_t batch : file.stem() == "dlrm_synthetic" ? std::vector<int64_t>{batch_of(*config)}
                                                           : std::vector<int64_t>{128, 1024}) {
        for (int threads : thread_counts) {
          benchmark::RegisterBenchmark(
              ("BM_DenseBf16/" + file.stem().string() + Suffix(batch, threads)).c_str(),
              BM_DenseBf16, spec, batch, threads)
              ->Unit(benchmark::kMillisecond)
              ->Iterations(1)
              ->UseRealTime();
        }
      }
    }
    if (file.stem() != "criteo_kaggle_shape") continue;
    for (Interaction interaction : {Interaction::kDcnV2, Interaction::kConcat}) {
      DenseModelSpec cross = spec;
      cross.interaction = interaction;
      cross.cross_layers = 3;
      cross.cross_low_rank = 128;
      const std::string kind = interaction == Interaction::kDcnV2 ? "dcn_v2" : "concat";
      for (int64_t batch : {128, 1024}) {
        for (int threads : thread_counts) {
          Register("BM_CrossDense/" + kind + Suffix(batch, threads), cross, batch, threads);
          if (bf16 && interaction == Interaction::kDcnV2 && batch == 1024) {
            benchmark::RegisterBenchmark(("BM_DenseBf16/" + kind + Suffix(batch, threads)).c_str(),
                                         BM_DenseBf16, cross, batch, threads)
                ->Unit(benchmark::kMillisecond)
                ->Iterations(1)
                ->UseRealTime();
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace lemrt::device

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--rounds=", 9) == 0) {
      lemrt::device::g_rounds = std::max(1, std::atoi(argv[i] + 9));
      std::copy(argv + i + 1, argv + argc, argv + i);
      --argc;
      --i;
    }
  }
  benchmark::Initialize(&argc, argv);
  lemrt::device::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
