#include "device/tensorcore/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "device/tensorcore/lanes.h"
#include "device/tensorcore/relu_gradient.h"
#include "glog/logging.h"
#include "oneapi/dnnl/dnnl.h"

namespace lemrt::device {
namespace {

// A block's work: large enough that the backend's per-call cost (packing
// the replicated operand, a few microseconds of setup) stays small, small
// enough that a step's GEMMs split into several blocks per thread.
constexpr double kBlockFlops = 8e6;
constexpr int64_t kMinBlock = 128;
constexpr int64_t kBlockAlign = 16;
// A product that would be one block is cut in two from this much work on,
// when both halves keep kMinSplitBlock lines.
constexpr double kSplitFlops = 3e6;
constexpr int64_t kMinSplitBlock = 32;

int64_t RoundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// oneDNN runs its sgemm on OpenMP threads; every thread that calls it here
// asks for one, so that the blocks, not oneDNN, decide the parallelism. The
// OpenMP thread count is a per-thread setting.
void UseOneOpenMpThread() {
  thread_local bool done = false;
  if (!done) {
    omp_set_num_threads(1);
    done = true;
  }
}

void CallBackend(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  const dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f,
                                      a, lda, b, ldb, 0.0f, c, ldc);
  CHECK_EQ(st, dnnl_success) << "dnnl_sgemm rejected m=" << m << " n=" << n << " k=" << k
                             << " lda=" << lda << " ldb=" << ldb << " ldc=" << ldc;
}

// The epilogue on a block of C [rows x cols] (bias and relu_output already
// offset to the block).
void ApplyEpilogue(const GemmEpilogue& e, int64_t rows, int64_t cols, const float* bias,
                   const float* relu_output, float* c, int64_t ldc) {
  // c = c + bias, then c > 0 ? c : 0 (NaN and -0 become +0), element-wise,
  // 8 columns at a time and the rest one by one; then the ReLU gradient.
  using V = lanes::Lanes<8>;
  const V zero = {};
  for (int64_t r = 0; r < rows; ++r) {
    float* row = c + r * ldc;
    if (bias != nullptr || e.relu) {
      int64_t j = 0;
      for (; j + 8 <= cols; j += 8) {
        V v = lanes::Load<8>(row + j);
        if (bias != nullptr) v += lanes::Load<8>(bias + j);
        if (e.relu) v = v > zero ? v : zero;
        lanes::Store<8>(row + j, v);
      }
      for (; j < cols; ++j) {
        float v = row[j];
        if (bias != nullptr) v += bias[j];
        if (e.relu) v = v > 0.0f ? v : 0.0f;
        row[j] = v;
      }
    }
    if (relu_output != nullptr) {
      ReluGradient(relu_output + r * e.relu_output_ld, row, row, cols, e.relu_scale);
    }
  }
}

}  // namespace

GemmBlocking GemmBlockingFor(int64_t m, int64_t n, int64_t k) {
  // Cut the larger side of C: the operand every block then re-reads (and
  // the backend re-packs) is the one of the smaller side.
  GemmBlocking g;
  g.rows = m >= n;
  const int64_t along = g.rows ? m : n;
  const int64_t across = g.rows ? n : m;
  if (along == 0) return g;
  const double flops_per_line = 2.0 * static_cast<double>(across) * static_cast<double>(k);
  int64_t block = flops_per_line > 0 ? static_cast<int64_t>(kBlockFlops / flops_per_line) : along;
  block = std::max(RoundUp(block, kBlockAlign), kMinBlock);
  int64_t blocks = (along + block - 1) / block;
  // A product of about one block's work but too few lines for two blocks of
  // kMinBlock still goes in two, so that two threads share it.
  if (blocks == 1 && flops_per_line * static_cast<double>(along) >= kSplitFlops &&
      along >= 2 * kMinSplitBlock) {
    blocks = 2;
  }
  // Blocks of equal size, up to the alignment.
  g.block = std::min(RoundUp((along + blocks - 1) / blocks, kBlockAlign), along);
  g.blocks = static_cast<int>((along + g.block - 1) / g.block);
  return g;
}

GemmTasks::GemmTasks(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                     int64_t ldc, const GemmEpilogue& epilogue)
    : trans_a_(trans_a), trans_b_(trans_b), m_(m), n_(n), k_(k), a_(a), lda_(lda), b_(b),
      ldb_(ldb), c_(c), ldc_(ldc), epilogue_(epilogue) {
  CHECK_GE(m, 0);
  CHECK_GE(n, 0);
  CHECK_GE(k, 0);
  const GemmBlocking g = GemmBlockingFor(m, n, k);
  rows_ = g.rows;
  block_ = g.block;
  blocks_ = m == 0 || n == 0 ? 0 : g.blocks;
}

void GemmTasks::operator()(int i) const {
  UseOneOpenMpThread();
  const int64_t begin = i * block_;
  const int64_t len = std::min(block_, (rows_ ? m_ : n_) - begin);
  const int64_t rows = rows_ ? len : m_;
  const int64_t cols = rows_ ? n_ : len;
  // Row blocks take rows of op(A) and C; column blocks columns of op(B)
  // and C. op(A) row r is A's row r, or column r when transposed.
  const float* ab = rows_ ? a_ + (trans_a_ ? begin : begin * lda_) : a_;
  const float* bb = rows_ ? b_ : b_ + (trans_b_ ? begin * ldb_ : begin);
  float* cb = rows_ ? c_ + begin * ldc_ : c_ + begin;
  if (k_ == 0) {
    for (int64_t r = 0; r < rows; ++r) std::memset(cb + r * ldc_, 0, sizeof(float) * cols);
  } else {
    CallBackend(trans_a_, trans_b_, rows, cols, k_, ab, lda_, bb, ldb_, cb, ldc_);
  }
  const float* bias =
      epilogue_.bias == nullptr ? nullptr : epilogue_.bias + (rows_ ? 0 : begin);
  const float* relu_output = epilogue_.relu_output;
  if (relu_output != nullptr) {
    relu_output += rows_ ? begin * epilogue_.relu_output_ld : begin;
  }
  ApplyEpilogue(epilogue_, rows, cols, bias, relu_output, cb, ldc_);
}

void Gemm(ThreadTeam* team, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
          const GemmEpilogue& epilogue) {
  const GemmTasks tasks(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, epilogue);
  const TaskGroup group = tasks.group();
  ParallelForGroups(team, {&group, 1});
}

void BackendGemm(int threads, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                 int64_t ldc) {
  UseOneOpenMpThread();
  omp_set_num_threads(std::max(1, threads));
  CallBackend(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
  omp_set_num_threads(1);
}

std::string GemmBackendName() {
  const dnnl_version_t* v = dnnl_version();
  return absl::StrFormat("oneDNN %d.%d.%d sgemm", v->major, v->minor, v->patch);
}

}  // namespace lemrt::device
