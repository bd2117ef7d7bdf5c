// The GEMMs of one DLRM training step on one candidate backend: how the
// TensorCore's backend (device/tensorcore/gemm.h) was chosen. Built once per
// library found at configure time (bench_gemm_eigen, bench_gemm_openblas,
// bench_gemm_blis, bench_gemm_onednn; Debian libopenblas-dev, libblis-dev,
// libdnnl-dev), so each binary links exactly one BLAS.
//
//   build/bin/bench_gemm_onednn [threads=1] [batch=1024] [reps=20] [shape=criteo|synthetic]
//
// Prints the median and best time of the step's GEMMs (per layer Y = X W,
// dW = X^T dY and, but for the first layer, dX = dY W^T) and their GFLOP/s;
// with DETAIL=1 each product. One thread: thread CPU time (robust to other
// load); more: wall time.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#if defined(LEMRT_GEMM_OPENBLAS)
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
constexpr const char* kBackend = "openblas";
#elif defined(LEMRT_GEMM_BLIS)
#include <blis.h>
constexpr const char* kBackend = "blis";
#elif defined(LEMRT_GEMM_ONEDNN)
#include <omp.h>

#include "oneapi/dnnl/dnnl.h"
constexpr const char* kBackend = "onednn";
#else
#include "Eigen/Core"
constexpr const char* kBackend = "eigen";
#endif

namespace {

struct Product {
  bool ta, tb;
  int m, n, k;
};

void Multiply(const Product& s, const float* a, const float* b, float* c) {
  [[maybe_unused]] const int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n, ldc = s.n;
#if defined(LEMRT_GEMM_OPENBLAS)
  cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans,
              s.m, s.n, s.k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
#elif defined(LEMRT_GEMM_BLIS)
  float one = 1, zero = 0;  // row-major: row stride ld, column stride 1
  bli_sgemm(s.ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s.tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
            s.m, s.n, s.k, &one, const_cast<float*>(a), lda, 1, const_cast<float*>(b), ldb, 1,
            &zero, c, ldc, 1);
#elif defined(LEMRT_GEMM_ONEDNN)
  dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a, lda, b, ldb, 0.0f, c,
             ldc);
#else
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Map = Eigen::Map<const M>;
  Eigen::Map<M> out(c, s.m, s.n);
  if (!s.ta && !s.tb) {
    out.noalias() = Map(a, s.m, s.k) * Map(b, s.k, s.n);
  } else if (!s.ta) {
    out.noalias() = Map(a, s.m, s.k) * Map(b, s.n, s.k).transpose();
  } else {
    out.noalias() = Map(a, s.k, s.m).transpose() * Map(b, s.k, s.n);
  }
#endif
}

void SetThreads(int threads) {
#if defined(LEMRT_GEMM_OPENBLAS)
  openblas_set_num_threads(threads);
#elif defined(LEMRT_GEMM_BLIS)
  bli_thread_set_num_threads(threads);
#elif defined(LEMRT_GEMM_ONEDNN)
  omp_set_num_threads(threads);
#else
  Eigen::setNbThreads(threads);
#endif
}

double Seconds(bool cpu) {
  timespec t;
  clock_gettime(cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int batch = argc > 2 ? std::atoi(argv[2]) : 1024;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 20;
  const std::string shape = argc > 4 ? argv[4] : "criteo";
  SetThreads(threads);
  // (in, out) of every layer: examples/configs/criteo_kaggle_shape.pbtxt or
  // dlrm_synthetic.pbtxt (10 features: top input 32 + 55 pairs).
  std::vector<std::pair<int, int>> layers = {{13, 512},  {512, 256}, {256, 64}, {64, 16},
                                             {367, 512}, {512, 256}, {256, 1}};
  if (shape == "synthetic") layers = {{13, 128}, {128, 64}, {64, 32}, {87, 128}, {128, 64}, {64, 1}};
  std::vector<Product> products;
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto [in, out] = layers[l];
    products.push_back({false, false, batch, out, in});
    if (l != 0) products.push_back({false, true, batch, in, out});
    products.push_back({true, false, in, out, batch});
  }
  std::vector<std::vector<float>> a, b, c;
  double flops = 0;
  for (const Product& p : products) {
    a.emplace_back(static_cast<size_t>(p.m) * p.k);
    b.emplace_back(static_cast<size_t>(p.k) * p.n, 0.02f);
    c.emplace_back(static_cast<size_t>(p.m) * p.n);
    for (size_t i = 0; i < a.back().size(); ++i) a.back()[i] = static_cast<float>(i % 17) * 0.01f;
    flops += 2.0 * p.m * p.n * p.k;
  }
  const bool cpu = threads == 1;
  std::vector<std::vector<double>> each(products.size());
  std::vector<double> total;
  for (int r = 0; r < reps + 3; ++r) {
    double sum = 0;
    for (size_t i = 0; i < products.size(); ++i) {
      const double t0 = Seconds(cpu);
      Multiply(products[i], a[i].data(), b[i].data(), c[i].data());
      const double dt = Seconds(cpu) - t0;
      if (r >= 3) each[i].push_back(dt);
      sum += dt;
    }
    if (r >= 3) total.push_back(sum);
  }
  std::printf("%-9s threads %d batch %d %s: step GEMMs %.3f ms median, %.3f best, %.1f GFLOP/s\n",
              kBackend, threads, batch, shape.c_str(), Median(total) * 1e3,
              *std::min_element(total.begin(), total.end()) * 1e3, flops / Median(total) * 1e-9);
  if (std::getenv("DETAIL") != nullptr) {
    for (size_t i = 0; i < products.size(); ++i) {
      const Product& p = products[i];
      std::printf("  %c%c m %5d n %4d k %5d  %8.1f us  %6.1f GFLOP/s\n", p.ta ? 'T' : 'N',
                  p.tb ? 'T' : 'N', p.m, p.n, p.k, Median(each[i]) * 1e6,
                  2.0 * p.m * p.n * p.k / Median(each[i]) * 1e-9);
    }
  }
  return 0;
}
