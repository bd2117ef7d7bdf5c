#include "device/tensorcore/gemm.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <span>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/bf16.h"
#include "device/tensorcore/lanes.h"
#include "device/tensorcore/relu_gradient.h"
#include "glog/logging.h"
#include "oneapi/dnnl/dnnl.h"

// oneDNN's bf16 GEMM: row-major like dnnl_sgemm, A and B as bf16 bits, C in
// fp32. libdnnl 2.x exports it as a C symbol but its public header does not
// declare it; the local name keeps a future declaration from clashing.
// gemm_test checks it against a plain product for every transposition.
extern "C" dnnl_status_t LemrtDnnlGemmBf16(char transa, char transb, dnnl_dim_t m, dnnl_dim_t n,
                                           dnnl_dim_t k, float alpha, const uint16_t* a,
                                           dnnl_dim_t lda, const uint16_t* b, dnnl_dim_t ldb,
                                           float beta, float* c,
                                           dnnl_dim_t ldc) __asm__("dnnl_gemm_bf16bf16f32");

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

// Rounds the [rows x cols] matrix at `src` (row stride ld) into `dst`, packed
// (row stride cols), growing it as needed; returns dst's data.
const uint16_t* RoundToBf16(const float* src, int64_t rows, int64_t cols, int64_t ld,
                            std::vector<uint16_t>& dst) {
  const size_t need = static_cast<size_t>(rows * cols);
  if (dst.size() < need) dst.resize(need);
  for (int64_t r = 0; r < rows; ++r) {
    base::NarrowBf16Nearest(std::span<const float>(src + r * ld, static_cast<size_t>(cols)),
                            dst.data() + r * cols);
  }
  return dst.data();
}

// The rounded operands of the blocks one thread runs. The operand that every
// block of a call reads whole (B of row blocks, A of column blocks) is
// rounded once per thread and call, into one of two slots (the layers'
// backward runs two calls in one fork-join, whose blocks interleave); the
// other operand's part is rounded per block. The buffers grow to the largest
// seen and stay (the steady state allocates nothing).
class Bf16Scratch {
 public:
  // The shared operand of product `call`: rounded by this thread's first
  // block of the call, then kept for its other blocks.
  const uint16_t* Shared(uint64_t call, const float* src, int64_t rows, int64_t cols, int64_t ld) {
    for (Slot& slot : shared_) {
      if (slot.call == call) return slot.bits.data();
    }
    Slot& slot = shared_[replace_];
    replace_ ^= 1;
    slot.call = call;
    return RoundToBf16(src, rows, cols, ld, slot.bits);
  }
  const uint16_t* Part(const float* src, int64_t rows, int64_t cols, int64_t ld) {
    return RoundToBf16(src, rows, cols, ld, part_);
  }

 private:
  struct Slot {
    uint64_t call = 0;  // 0: empty
    std::vector<uint16_t> bits;
  };
  std::vector<uint16_t> part_;
  std::array<Slot, 2> shared_;
  int replace_ = 0;
};

// A key no earlier GemmTasks of this process has had (the rounding cache's
// key above; never 0).
uint64_t NewCallKey() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// CallBackend's contract with bf16 products: op(A) [m x k] and op(B) [k x n]
// are rounded into this thread's scratch first, the one of them that every
// block of call `call` reads whole (`shared_a`: A, else B) once per thread;
// an operand given rounded (`rounded`, in the stored layout) is not.
void CallBackendBf16(uint64_t call, bool shared_a, bool trans_a, bool trans_b, int64_t m,
                     int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                     int64_t ldb, const Bf16Operands& rounded, float* c, int64_t ldc) {
  thread_local Bf16Scratch scratch;
  // Stored shapes: A is [m x k], or [k x m] transposed; B [k x n] or [n x k].
  const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  const uint16_t* a16 = rounded.a;
  const uint16_t* b16 = rounded.b;
  if (a16 == nullptr) {
    a16 = shared_a ? scratch.Shared(call, a, a_rows, a_cols, lda)
                   : scratch.Part(a, a_rows, a_cols, lda);
    lda = a_cols;
  }
  if (b16 == nullptr) {
    b16 = shared_a ? scratch.Part(b, b_rows, b_cols, ldb)
                   : scratch.Shared(call, b, b_rows, b_cols, ldb);
    ldb = b_cols;
  }
  const dnnl_status_t st = LemrtDnnlGemmBf16(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k,
                                             1.0f, a16, lda, b16, ldb, 0.0f, c, ldc);
  CHECK_EQ(st, dnnl_success) << "dnnl_gemm_bf16bf16f32 rejected m=" << m << " n=" << n << " k=" << k
                             << " (was CheckBf16Products() OK?)";
}

const char* IsaName(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "another (not x86-64 AVX-512)";
  }
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

GemmTasks::GemmTasks(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                     const GemmEpilogue& epilogue, GemmPrecision precision,
                     const Bf16Operands& rounded)
    : trans_a_(trans_a),
      trans_b_(trans_b),
      m_(m),
      n_(n),
      k_(k),
      a_(a),
      lda_(lda),
      b_(b),
      ldb_(ldb),
      c_(c),
      ldc_(ldc),
      epilogue_(epilogue),
      precision_(precision),
      rounded_(rounded) {
  CHECK_GE(m, 0);
  CHECK_GE(n, 0);
  CHECK_GE(k, 0);
  const GemmBlocking g = GemmBlockingFor(m, n, k);
  rows_ = g.rows;
  block_ = g.block;
  blocks_ = m == 0 || n == 0 ? 0 : g.blocks;
  CHECK((rounded.a == nullptr && rounded.b == nullptr) || precision == GemmPrecision::kBf16)
      << "rounded operands are for bf16 products";
  if (precision == GemmPrecision::kBf16) call_ = NewCallKey();
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
  } else if (precision_ == GemmPrecision::kBf16) {
    // The rounded operands' blocks start where the fp32 ones' do.
    const Bf16Operands block16{
        rounded_.a == nullptr ? nullptr : rounded_.a + (ab - a_),
        rounded_.b == nullptr ? nullptr : rounded_.b + (bb - b_)};
    CallBackendBf16(call_, /*shared_a=*/!rows_, trans_a_, trans_b_, rows, cols, k_, ab, lda_, bb,
                    ldb_, block16, cb, ldc_);
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
          const GemmEpilogue& epilogue, GemmPrecision precision, const Bf16Operands& rounded) {
  const GemmTasks tasks(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, epilogue, precision,
                        rounded);
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

absl::Status CheckBf16Products() {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  // The ISA values are nested bit sets: AMX includes avx512_core_bf16.
  if ((isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "model.dense_dtype: BF16 needs a CPU with avx512_bf16 or AMX for its bf16 products, and "
      "oneDNN finds neither here (its instruction set: %s); use dense_dtype: FP32 on this "
      "machine",
      IsaName(isa)));
}

std::string GemmBackendName(GemmPrecision precision) {
  const dnnl_version_t* v = dnnl_version();
  if (precision == GemmPrecision::kBf16) {
    return absl::StrFormat("oneDNN %d.%d.%d gemm_bf16bf16f32 (bf16 products, fp32 accumulation)",
                           v->major, v->minor, v->patch);
  }
  return absl::StrFormat("oneDNN %d.%d.%d sgemm", v->major, v->minor, v->patch);
}

}  // namespace lemrt::device
