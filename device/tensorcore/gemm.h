// The TensorCore's matrix products: every GEMM of the dense layers (the
// forward XW, the backward dY W^T and X^T dY, the feature projections) goes
// through Gemm below, so the backend and its threads are chosen here and
// nowhere else.
//
// Backend: oneDNN's sgemm (libdnnl, Debian's libdnnl-dev), measured against
// OpenBLAS, BLIS and Eigen on the model's shapes (docs/performance.md, "The
// dense stage"). Each call is split into blocks of C whose sizes depend only
// on (trans_a, trans_b, m, n, k); each block is one single-threaded backend
// call, run on some thread of the team. A block's values therefore do not
// depend on which thread ran it nor on how many threads the team has: the
// bits of C are a function of the inputs and the shape only.
//
// Products in bf16 (GemmPrecision::kBf16, model.dense_dtype: BF16) run on
// oneDNN's bf16 GEMM, blocked the same way: each block rounds its part of
// the blocked operand to bf16 into a scratch of the thread that runs it (the
// operand every block reads whole is rounded once per thread and call), then
// accumulates in fp32.
//
// Thread-safety: Gemm may run concurrently on distinct teams (or with a null
// team); one team serves one caller at a time (see thread_team.h).
#ifndef LEMRT_DEVICE_TENSORCORE_GEMM_H_
#define LEMRT_DEVICE_TENSORCORE_GEMM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "device/tensorcore/thread_team.h"

namespace lemrt::device {

// The number format of a Gemm's products; C and the epilogue are fp32 in both.
//   kFp32  single precision throughout (oneDNN's sgemm).
//   kBf16  every element of op(A) and op(B) is first rounded to the nearest
//          bf16 (ties to even, NaNs stay NaNs: base/bf16.h's
//          FloatToBf16Nearest, the same bits on every CPU), and the exact
//          products of the rounded values are summed in fp32 by oneDNN's
//          bf16 GEMM (avx512_bf16 or AMX instructions; subnormal bf16 inputs
//          count as 0). Callers check CheckBf16Products() first
//          (CreateDenseModel does); a rejected call is a CHECK failure.
enum class GemmPrecision { kFp32, kBf16 };

// OK when this CPU runs kBf16 products: oneDNN's effective instruction set
// (its DNNL_MAX_CPU_ISA environment variable may lower it) includes
// avx512_bf16 (avx512_core_bf16) or AMX. Else FailedPrecondition, a sentence
// naming model.dense_dtype and the instruction set found. There is no
// emulation: a CPU without either would run bf16 products slower than fp32.
absl::Status CheckBf16Products();

// Applied to each block of C right after its product, while it is in cache.
struct GemmEpilogue {
  // [n] floats added to every row of C; null: none.
  const float* bias = nullptr;
  // Then C = max(C, 0).
  bool relu = false;
  // Then, the backward of a ReLU whose output was `relu_output` [m x n]
  // (row stride relu_output_ld): C = relu_output > 0 ? C * relu_scale : 0,
  // the multiplication only where relu_scale != 1 (inverted dropout after
  // the ReLU). Null: none.
  const float* relu_output = nullptr;
  int64_t relu_output_ld = 0;
  float relu_scale = 1.0f;
};

// A product's operands already rounded to bf16, for kBf16 products only: where
// not null, `a` holds FloatToBf16Nearest (base/bf16.h) of every element of A,
// stored as A is (same layout and leading dimension), and the product reads it
// instead of rounding A; likewise `b` for B. A caller that multiplies one
// operand several times (a layer's X, W and deltas) rounds it once.
struct Bf16Operands {
  const uint16_t* a = nullptr;
  const uint16_t* b = nullptr;
};

// Row-major, single precision:
//
//   C [m x n] = op(A) [m x k] * op(B) [k x n]   (then the epilogue)
//
// op(A) = A, stored [m x k] with row stride lda >= k, or, trans_a, A^T with
// A stored [k x m], lda >= m; likewise op(B) = B stored [k x n] (ldb >= n)
// or, trans_b, B^T with B stored [n x k] (ldb >= k); C is [m x n] with
// ldc >= n and is overwritten (k == 0: C = 0, then the epilogue). The
// layers' three shapes are
//
//   forward   Y  = X W       Gemm(team, false, false, batch, out, in, ...)
//   backward  dX = dY W^T    Gemm(team, false, true,  batch, in, out, ...)
//   backward  dW = X^T dY    Gemm(team, true,  false, in, out, batch, ...)
//
// C must not overlap A, B or the bias. m, n, k >= 0 (CHECKed). team: the
// threads to use; null runs every block on the calling thread. precision:
// the products' number format (above); rounded: operands given in bf16
// (above; kBf16 only, CHECKed), the same bits as rounding them here.
void Gemm(ThreadTeam* team, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
          const GemmEpilogue& epilogue = {}, GemmPrecision precision = GemmPrecision::kFp32,
          const Bf16Operands& rounded = {});

// One Gemm call cut into its blocks, to run with other independent work in
// one fork-join (ParallelForGroups, thread_team.h): tasks() blocks, block i
// run by (*this)(i) with exactly the bits it has under Gemm. Holds the
// pointers it was given (they must outlive it); the arguments' contract is
// Gemm's. Immutable; run once: with bf16 products a thread rounds the
// operand that every block reads whole once per object, so its values must
// not change between the object's first block and its last.
class GemmTasks {
 public:
  GemmTasks(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
            int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
            const GemmEpilogue& epilogue = {}, GemmPrecision precision = GemmPrecision::kFp32,
            const Bf16Operands& rounded = {});
  int tasks() const { return blocks_; }
  void operator()(int block) const;
  TaskGroup group() const {
    return Tasks(blocks_, *this, 2.0 * static_cast<double>(m_) * n_ * k_);
  }

 private:
  bool trans_a_, trans_b_;
  int64_t m_, n_, k_;
  const float* a_;
  int64_t lda_;
  const float* b_;
  int64_t ldb_;
  float* c_;
  int64_t ldc_;
  GemmEpilogue epilogue_;
  GemmPrecision precision_;
  Bf16Operands rounded_;
  bool rows_;
  int64_t block_;
  int blocks_;
  uint64_t call_ = 0;  // bf16: the key of the shared operand's rounding
};

// The backend alone, as one call with its own threading on `threads` threads
// of its own (no blocks, no epilogue): the reference bench_dense measures the
// blocked Gemm against. Not for the model (its bits may depend on threads).
void BackendGemm(int threads, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                 int64_t ldc);

// How Gemm splits a call: C is cut along `rows` (true: row blocks of C and
// op(A)) or columns (of C and op(B)) into `blocks` blocks of `block` rows or
// columns (the last may be shorter). A function of the shape only.
struct GemmBlocking {
  bool rows = true;
  int64_t block = 0;
  int blocks = 0;
};
GemmBlocking GemmBlockingFor(int64_t m, int64_t n, int64_t k);

// "oneDNN 2.6.3 sgemm", or for kBf16 "oneDNN 2.6.3 gemm_bf16bf16f32 (bf16
// products, fp32 accumulation)": for logs and the run summary.
std::string GemmBackendName(GemmPrecision precision = GemmPrecision::kFp32);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_GEMM_H_
