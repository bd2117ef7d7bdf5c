// The rows of one embedding table owned by one SparseCore, with their
// optimizer slots. Which rows those are is the row placement's
// (layout/row_placement.h): the placed rows of one residue r mod N
// (N = SparseCores over all chips), r, r + N, r + 2N, ..., placed row p at
// local row p / N. With id shuffling the placed row is P(j) of the table's
// original row j: the lookups and updates see only placed rows, and
// OriginalRow maps them back for initialisation, checkpoints and the model
// checksum. Thread-compatible.
//
//   weights_: [local_rows x dim] floats        (TableConfig.dtype FP32)
//       or    [local_rows x dim] bf16 (uint16)  (BF16: weights_bf16_)
//   slots_:   [local_rows x SlotFloats(dim)] floats, or bf16 with
//             slot_dtype BF16 (slots_bf16_) (row-major, so one row's slots
//             are contiguous and laid out as Optimizer expects:
//             slots_per_param x dim slot-major, then the row slots)
//
// BF16 rows and slots (base/bf16.h): readers widen them to fp32 exactly
// (ReadRows, ReadSlots); Update widens the row and slots, applies the
// optimizer in fp32 and writes them back with stochastic rounding keyed by
// base::Bf16RoundingKey(seed, table_index, original row, step) (the slots
// with the key of step + 2^62, an independent stream), so the bits do not
// depend on the world size or on threads; the vector paths of
// row_kernels_bf16.h do the conversions. WriteRows / WriteSlots round to
// nearest (initialisation, checkpoint restore).
#ifndef LEMRT_DEVICE_SPARSECORE_TABLE_SHARD_H_
#define LEMRT_DEVICE_SPARSECORE_TABLE_SHARD_H_

#include <cstdint>
#include <span>
#include <vector>

#include "base/bf16.h"
#include "base/id_permutation.h"
#include "base/row_key.h"
#include "device/optimizers/optimizer.h"
#include "device/sparsecore/table_allocator.h"
#include "glog/logging.h"
#include "layout/row_placement.h"
#include "proto/config.pb.h"

namespace lemrt::device {

class TableShard {
 public:
  // Initialises every owned row from (seed, table_index, original row) so
  // the model's initial state is the same whatever the world size and id
  // shuffling. `optimizer` must outlive the shard. With `initialize` false,
  // rows and slots are left zero for the caller to fill (table_init.h: host
  // or on-device start-up). `permutation` is the table's id shuffling
  // (the identity when off); its size must be 0 or vocab_size.
  // `residue` is layout::RowPlacement::ShardResidue of the owning SparseCore.
  TableShard(const config::TableConfig& table, int table_index, int residue, int total_sc,
             uint64_t seed, const Optimizer& optimizer, bool initialize = true,
             base::IdPermutation permutation = {});
  TableShard(const TableShard&) = delete;
  TableShard& operator=(const TableShard&) = delete;

  int dim() const { return dim_; }
  int64_t local_rows() const { return local_rows_; }
  // The global (placed) row at `local_row`: what COO entries' col hold.
  int64_t GlobalRow(int64_t local_row) const { return local_row * total_sc_ + residue_; }
  // The table's original row id at `local_row` (GlobalRow without id
  // shuffling): the layout-free row of checkpoints and the model checksum.
  int64_t OriginalRow(int64_t local_row) const { return permutation_.Inverse(GlobalRow(local_row)); }
  const base::IdPermutation& permutation() const { return permutation_; }
  // global_row / N (layout::RowPlacement::LocalRow). For 0 <= global_row < 2^48 (every key row,
  // base/row_key.h) and N <= 2^16 it is the high half of global_row x ceil(2^64 / N), exact
  // since global_row x N < 2^64: a multiply instead of a 64-bit division per
  // id in the gather.
  int64_t LocalRow(int64_t global_row) const {
    if (total_sc_ == 1) return global_row;
    if (reciprocal_ != 0 &&
        static_cast<uint64_t>(global_row) < static_cast<uint64_t>(base::kMaxKeyRows)) {
      return static_cast<int64_t>(
          (static_cast<unsigned __int128>(static_cast<uint64_t>(global_row)) * reciprocal_) >> 64);
    }
    return global_row / total_sc_;
  }
  // Whether rows (bf16()) and slots (bf16_slots()) are stored as bf16.
  bool bf16() const { return bf16_; }
  bool bf16_slots() const { return bf16_slots_; }
  // Bytes of one stored element of a row (4 or 2) and of one row.
  int element_bytes() const { return bf16_ ? 2 : 4; }
  int64_t row_bytes() const { return int64_t{dim_} * element_bytes(); }
  // The fp32 row at `local_row`; FP32 tables only (DCHECK).
  const float* row(int64_t local_row) const {
    DCHECK(!bf16_);
    return weights_.data() + local_row * dim_;
  }
  // The bf16 row at `local_row`; BF16 tables only (DCHECK).
  const uint16_t* row_bf16(int64_t local_row) const {
    DCHECK(bf16_);
    return weights_bf16_.data() + local_row * dim_;
  }
  // The stored row and slots of `local_row`, whatever the format (prefetch).
  const void* row_address(int64_t local_row) const {
    return bf16_ ? static_cast<const void*>(row_bf16(local_row)) : row(local_row);
  }
  const void* slots_address(int64_t local_row) const;
  int64_t slots_bytes_per_row() const { return slot_stride_ * (bf16_slots_ ? 2 : 4); }

  // The step keys of one update step's stochastic rounding (rows, slots):
  // base::Bf16StepKey of (seed, table_index, step) and of step + 2^62.
  // Callers updating many rows of a step compute them once.
  struct RoundingKeys {
    uint64_t rows = 0;
    uint64_t slots = 0;
  };
  RoundingKeys StepRoundingKeys(int64_t step) const;

  // Applies the optimizer to one row with gradient `grad` (dim floats) as
  // update number `step` (1-based) at `learning_rate` (see Optimizer::Apply);
  // BF16 rows and slots through fp32 and stochastic rounding (above), with
  // `keys` == StepRoundingKeys(step) (the overload without computes them).
  void Update(int64_t local_row, std::span<const float> grad, int64_t step, float learning_rate,
              const RoundingKeys& keys) {
    if (!bf16_ && !bf16_slots_) {
      optimizer_.Apply(std::span<float>(weights_.data() + local_row * dim_, dim_),
                       std::span<float>(slots_.data() + local_row * slot_stride_, slot_stride_),
                       grad, step, learning_rate);
      return;
    }
    UpdateRounded(local_row, grad, step, learning_rate, keys);
  }
  void Update(int64_t local_row, std::span<const float> grad, int64_t step,
              float learning_rate) {
    Update(local_row, grad, step, learning_rate,
           bf16_ || bf16_slots_ ? StepRoundingKeys(step) : RoundingKeys{});
  }
  // Rounds an updated row and its slots (fp32, in place) as Update stores
  // them for the row whose original id is `original_row`, with `keys` ==
  // StepRoundingKeys(step): BF16 parts stochastically to bf16 values (kept
  // widened), FP32 parts unchanged. What a copy of the row updated elsewhere
  // (a hot-row replica, runtime/hot_rows) applies to stay equal to the row
  // Update would have stored.
  void RoundAsUpdated(int64_t original_row, const RoundingKeys& keys, std::span<float> row,
                      std::span<float> slots) const;
  const Optimizer& optimizer() const { return optimizer_; }
  // Optimizer::SlotFloats(dim): slot values per row.
  int64_t slot_stride() const { return slot_stride_; }
  // One row's fp32 slots; FP32 slots only (DCHECK).
  std::span<const float> row_slots(int64_t local_row) const {
    DCHECK(!bf16_slots_);
    return std::span<const float>(slots_.data() + local_row * slot_stride_, slot_stride_);
  }

  // One row's fp32 weights and slots, writable; FP32 rows / slots only
  // (DCHECK; initialisation in place).
  std::span<float> mutable_row(int64_t local_row) {
    DCHECK(!bf16_);
    return std::span<float>(weights_.data() + local_row * dim_, dim_);
  }
  std::span<float> mutable_row_slots(int64_t local_row) {
    DCHECK(!bf16_slots_);
    return std::span<float>(slots_.data() + local_row * slot_stride_, slot_stride_);
  }

  // All fp32 rows ([local_rows x dim]); FP32 tables only (DCHECK).
  std::span<const float> weights() const {
    DCHECK(!bf16_);
    return weights_;
  }
  // All stored row bits, either format: [local_rows x row_bytes()] bytes.
  std::span<const uint8_t> weight_bytes() const {
    const void* p = bf16_ ? static_cast<const void*>(weights_bf16_.data()) : weights_.data();
    return std::span<const uint8_t>(static_cast<const uint8_t*>(p), local_rows_ * row_bytes());
  }

  // Rows [begin, begin + n) as fp32 (exact for BF16) into out[n x dim].
  void ReadRows(int64_t begin, int64_t n, float* out) const;
  // Writes rows [begin, begin + n) from in[n x dim] (BF16: rounded to
  // nearest-even).
  void WriteRows(int64_t begin, int64_t n, const float* in);
  // The slots of rows [begin, begin + n) as fp32 into out[n x slot_stride()],
  // and written from in[n x slot_stride()] (BF16: rounded to nearest-even).
  void ReadSlots(int64_t begin, int64_t n, float* out) const;
  void WriteSlots(int64_t begin, int64_t n, const float* in);

 private:
  // Update for BF16 rows or slots.
  void UpdateRounded(int64_t local_row, std::span<const float> grad, int64_t step,
                     float learning_rate, const RoundingKeys& keys);

  int dim_;
  int residue_;
  int total_sc_;
  int64_t local_rows_;
  // ceil(2^64 / total_sc_) for 2 <= total_sc_ <= 2^16, else 0 (LocalRow).
  uint64_t reciprocal_;
  int64_t slot_stride_;
  const Optimizer& optimizer_;
  base::IdPermutation permutation_;
  int table_index_;
  uint64_t seed_;
  bool bf16_;
  bool bf16_slots_;
  // Aligned rows on huge pages where possible (table_allocator.h); of each
  // pair, the one of the stored format is used and the other stays empty.
  std::vector<float, TableAllocator<float>> weights_;
  std::vector<uint16_t, TableAllocator<uint16_t>> weights_bf16_;
  std::vector<float, TableAllocator<float>> slots_;
  std::vector<uint16_t, TableAllocator<uint16_t>> slots_bf16_;
};

// The initial values of global row `row` of table `table_index`: element k
// is value k + 1 of the CounterRng keyed by (seed, table_index, row), a
// normal draw x stddev or a uniform one in [-scale, scale) by the table's
// initializer (uniform rows are computed eight elements at a time, the same
// values bit for bit).
void InitialRow(const config::TableConfig& table, int table_index, int64_t row, uint64_t seed,
                std::span<float> out);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_TABLE_SHARD_H_
