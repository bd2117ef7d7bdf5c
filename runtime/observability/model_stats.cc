#include "runtime/observability/model_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/exact_sum.h"
#include "base/random.h"
#include "runtime/observability/model_checksum.h"

namespace lemrt::runtime {
namespace {

// A sum of non-negative doubles (squares, or a row's sum of squares taken
// in a fixed order) in exact fixed point (base/exact_sum.h), so that
// params_l2 does not depend on which rank holds which row. Scaled by 2^-32
// (exact), terms from 2^-64 to 2^64 keep every bit (smaller ones lose
// theirs, far below the norm's precision), and a larger one is counted as
// special.
class ExactSquares {
 public:
  void Add(double square) {
    if (!base::AddExact(square * 0x1p-32, slots_)) ++slots_[base::kExactLimbs];
    if (++since_normalized_ == kNormalizeEvery) Normalize();
  }
  void Normalize() {
    base::NormalizeExact(slots_);
    since_normalized_ = 0;
  }
  // Limbs then the count of special terms (base::ExactSlots(1) values).
  std::span<int64_t> slots() { return slots_; }
  bool special() const { return slots_[base::kExactLimbs] != 0; }
  double sum() const { return base::ExactValue(slots_) * 0x1p32; }

 private:
  // A term adds below 2^32 to a limb: 2^28 terms stay below 2^60, and a sum
  // of 8 normalised ranks' limbs is far from overflowing.
  static constexpr int64_t kNormalizeEvery = int64_t{1} << 28;
  int64_t slots_[base::kExactLimbs + 1] = {};
  int64_t since_normalized_ = 0;
};

}  // namespace

absl::StatusOr<ModelStats> ComputeModelStats(Communicator& comm, const SparseCoreStage& sparse,
                                             std::span<const float> dense_params) {
  uint64_t row_hash_sum = 0;
  double sum_sq = 0;
  ExactSquares exact_sq;
  // Rows are hashed (ModelRowHash) kLanes at a time (independent Mix64
  // chains interleaved: the same hashes, several times faster than one chain
  // after another);
  // the squares are summed row after row in the original order.
  constexpr int64_t kLanes = 8;
  std::vector<float> widened;
  for (const auto& sc : sparse.sparse_cores()) {
    for (int t = 0; t < sc->num_tables(); ++t) {
      const device::TableShard& shard = sc->shard(t);
      const int dim = shard.dim();
      // BF16 rows are hashed as their (exact) fp32 values, so a checkpoint
      // converted from BF16 to FP32 keeps the checksum.
      widened.resize(shard.bf16() ? kLanes * dim : 0);
      for (int64_t r0 = 0; r0 < shard.local_rows(); r0 += kLanes) {
        const int64_t lanes = std::min(kLanes, shard.local_rows() - r0);
        uint64_t h[kLanes];
        const float* rows[kLanes];
        if (shard.bf16()) shard.ReadRows(r0, lanes, widened.data());
        for (int64_t l = 0; l < lanes; ++l) {
          h[l] = base::HashKeys(
              {static_cast<uint64_t>(t), static_cast<uint64_t>(shard.OriginalRow(r0 + l))});
          rows[l] = shard.bf16() ? widened.data() + l * dim : shard.row(r0 + l);
        }
        for (int d = 0; d < dim; ++d) {
          for (int64_t l = 0; l < lanes; ++l) {
            uint32_t bits;
            std::memcpy(&bits, rows[l] + d, sizeof(bits));
            h[l] = base::Mix64(h[l] ^ bits);
          }
        }
        for (int64_t l = 0; l < lanes; ++l) {
          row_hash_sum += h[l];
          // A row's squares in column order: the same bits wherever the row
          // lives; one exact addition a row keeps this pass cheap.
          double row_sq = 0;
          for (int d = 0; d < dim; ++d) row_sq += double{rows[l][d]} * rows[l][d];
          sum_sq += row_sq;
          exact_sq.Add(row_sq);
        }
      }
    }
  }
  absl::Status st = comm.AllReduceSum(std::span<uint64_t>(&row_hash_sum, 1));
  if (!st.ok()) return st;
  st = comm.AllReduceSum(std::span<double>(&sum_sq, 1));
  if (!st.ok()) return st;
  exact_sq.Normalize();
  st = comm.AllReduceSum(exact_sq.slots());
  if (!st.ok()) return st;
  exact_sq.Normalize();
  for (float v : dense_params) {
    sum_sq += double{v} * v;
    exact_sq.Add(double{v} * v);
  }
  ModelStats stats;
  // Exact, so the same at every world size, unless a value reached 2^32 in
  // magnitude (or is not finite): then the float sum (NaN for NaN).
  stats.params_l2 = std::sqrt(exact_sq.special() ? sum_sq : exact_sq.sum());
  stats.checksum = ModelChecksum(row_hash_sum, dense_params);
  return stats;
}

}  // namespace lemrt::runtime
