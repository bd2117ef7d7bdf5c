// The rows of one embedding table owned by one SparseCore, with their
// optimizer slots. Mod sharding: global row j lives on SparseCore j % N at
// local row j / N (N = SparseCores over all chips). With id shuffling
// (proto/id_shuffle.h) the global row is the placed id P(j) of the table's
// original row j: the lookups and updates see only placed rows, and
// OriginalRow maps them back for initialisation, checkpoints and the model
// checksum. Thread-compatible.
//
//   weights_: [local_rows x dim] floats
//   slots_:   [local_rows x SlotFloats(dim)] floats (row-major, so one row's
//             slots are contiguous and laid out as Optimizer expects:
//             slots_per_param x dim slot-major, then the row slots)
#ifndef LEMRT_DEVICE_SPARSECORE_TABLE_SHARD_H_
#define LEMRT_DEVICE_SPARSECORE_TABLE_SHARD_H_

#include <cstdint>
#include <span>
#include <vector>

#include "base/id_permutation.h"
#include "base/row_key.h"
#include "device/optimizers/optimizer.h"
#include "device/sparsecore/table_allocator.h"
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
  TableShard(const config::TableConfig& table, int table_index, int global_sc, int total_sc,
             uint64_t seed, const Optimizer& optimizer, bool initialize = true,
             base::IdPermutation permutation = {});
  TableShard(const TableShard&) = delete;
  TableShard& operator=(const TableShard&) = delete;

  int dim() const { return dim_; }
  int64_t local_rows() const { return local_rows_; }
  // The global (placed) row at `local_row`: what COO entries' col hold.
  int64_t GlobalRow(int64_t local_row) const { return local_row * total_sc_ + global_sc_; }
  // The table's original row id at `local_row` (GlobalRow without id
  // shuffling): the layout-free row of checkpoints and the model checksum.
  int64_t OriginalRow(int64_t local_row) const { return permutation_.Inverse(GlobalRow(local_row)); }
  const base::IdPermutation& permutation() const { return permutation_; }
  // global_row / N. For 0 <= global_row < 2^48 (every key row,
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
  const float* row(int64_t local_row) const { return weights_.data() + local_row * dim_; }

  // Applies the optimizer to one row with gradient `grad` (dim floats) as
  // update number `step` (1-based) at `learning_rate` (see Optimizer::Apply).
  void Update(int64_t local_row, std::span<const float> grad, int64_t step,
              float learning_rate) {
    optimizer_.Apply(std::span<float>(weights_.data() + local_row * dim_, dim_),
                     std::span<float>(slots_.data() + local_row * slot_stride_, slot_stride_),
                     grad, step, learning_rate);
  }
  const Optimizer& optimizer() const { return optimizer_; }
  // One row's slots (Optimizer::SlotFloats(dim) floats).
  std::span<const float> row_slots(int64_t local_row) const {
    return std::span<const float>(slots_.data() + local_row * slot_stride_, slot_stride_);
  }

  // One row's weights and slots, writable (checkpoint restore).
  std::span<float> mutable_row(int64_t local_row) {
    return std::span<float>(weights_.data() + local_row * dim_, dim_);
  }
  std::span<float> mutable_row_slots(int64_t local_row) {
    return std::span<float>(slots_.data() + local_row * slot_stride_, slot_stride_);
  }

  std::span<const float> weights() const { return weights_; }
  std::span<float> mutable_weights() { return std::span<float>(weights_); }

 private:
  int dim_;
  int global_sc_;
  int total_sc_;
  int64_t local_rows_;
  // ceil(2^64 / total_sc_) for 2 <= total_sc_ <= 2^16, else 0 (LocalRow).
  uint64_t reciprocal_;
  int64_t slot_stride_;
  const Optimizer& optimizer_;
  base::IdPermutation permutation_;
  // Aligned rows on huge pages where possible (table_allocator.h).
  std::vector<float, TableAllocator<float>> weights_;
  std::vector<float, TableAllocator<float>> slots_;
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
