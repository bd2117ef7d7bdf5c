// The replicas of hot rows on one chip (TableConfig.hot_rows; the rows:
// host/preprocess/hot_rows.h). Every chip holds every hot row (weights and optimizer
// slots), looks up its own samples' hot entries there, and applies the same
// update to it: each step the chips' hot-row gradients are summed by one
// all-reduce, which gives every chip the same bits (as the dense gradients'
// all-reduce does), so every replica stays the same; each touched row is updated once with
// its table's optimizer as update number `step` (what its owner SparseCore
// would have done with the same summed gradient).
// After the update each chip writes the rows it owns back to its
// SparseCores' shards, so the shards stay the model: checkpoints, exports,
// the model checksum and evaluation read them unchanged. BF16 tables: the
// replicas hold the widened (fp32) rows and slots, and each update is
// rounded as the owner's TableShard::Update rounds it (RoundAsUpdated: the
// same key on every chip), so the write-back is exact.
//
// Per step and chip: one all-reduce of n floats, n = the hot rows' dim + 1
// (the gradients and a touch count per row); with exact sums (training.
// world_size_independent), of n int64 values, n = 4 x the dim + 1 + rows:
// each entry's gain x gradient is added exactly (base/exact_sum.h), so the
// summed gradients do not depend on how the samples are split over chips.
// Thread-compatible.
#ifndef LEMRT_RUNTIME_HOT_ROWS_HOT_ROW_REPLICAS_H_
#define LEMRT_RUNTIME_HOT_ROWS_HOT_ROW_REPLICAS_H_

#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "device/optimizers/optimizer.h"
#include "device/sparsecore/sparse_core.h"
#include "host/preprocess/hot_rows.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

class HotRowReplicas {
 public:
  // `table_dims[t]`: table t's dim; `optimizers[t]`: its optimizer (must
  // outlive the replicas). The replicas start zero: Refresh fills them.
  HotRowReplicas(host::HotRowSet set, std::span<const int> table_dims,
                 std::span<const device::Optimizer* const> optimizers, bool exact_sums = false);

  const host::HotRowSet& set() const { return set_; }
  // Bytes of the replicas per chip (weights and slots).
  int64_t bytes() const;

  // Collective: copies every hot row's weights and slots from the
  // SparseCore that owns it (on some rank) into every rank's replicas. Run
  // after the tables are initialised or restored.
  absl::Status Refresh(Communicator& comm,
                       std::span<const std::unique_ptr<device::SparseCore>> scs);

  // activations[e.row x width + feature_offsets[e.feature] + k] += e.gain x
  // row k of e.slot's replica, for each entry in order; with `int8`, of the
  // row's int8 round trip (device::Int8RoundTripRow, as the SparseCores'
  // int8 lookups of lemrt_train --eval_quantized).
  void Lookup(std::span<const host::HotEntry> hot, std::span<const int> feature_offsets,
              int width, std::span<float> activations, bool int8 = false) const;

  // Collective: the update of a step whose Lookup saw `hot`. Sums each hot
  // row's gradient gain x d_activations over this chip's entries, sums them
  // over the chips, applies the optimizer to
  // each row some chip touched (update number `step`, 1-based), and writes
  // the rows owned by `scs` back to their shards.
  absl::Status Update(std::span<const host::HotEntry> hot, std::span<const int> feature_offsets,
                      int width, std::span<const float> d_activations, int64_t step,
                      Communicator& comm,
                      std::span<const std::unique_ptr<device::SparseCore>> scs);

 private:
  // Table of slot s.
  int TableOf(int32_t slot) const { return slot_table_[slot]; }
  float* row(int32_t slot) { return weights_.data() + weight_offset_[slot]; }
  const float* row(int32_t slot) const { return weights_.data() + weight_offset_[slot]; }
  // A hot row this chip's SparseCore `sc` owns, at `local_row` of its shard.
  struct Owned {
    int32_t slot;
    int sc;
    int64_t local_row;
  };
  // Fills owned_ from the shards of `scs`.
  void FindOwned(std::span<const std::unique_ptr<device::SparseCore>> scs);

  host::HotRowSet set_;
  std::vector<int> dims_;
  std::vector<const device::Optimizer*> optimizers_;
  std::vector<int> slot_table_;
  std::vector<int64_t> weight_offset_;  // per slot, into weights_ (and grads_)
  std::vector<int64_t> slot_offset_;    // per slot, into slots_
  std::vector<float> weights_, slots_;
  std::vector<Owned> owned_;  // Refresh
  // Update's scratch: this chip's sums (gradients, then a touch count per
  // slot), summed over the chips in place.
  std::vector<float> local_;
  // With exact sums: the gradients' limbs and special count, then a touch
  // count per slot (all-reduced), converted into local_.
  bool exact_sums_;
  std::vector<int64_t> exact_;
  // Update's local sums into local_ (float) or exact_ (exact sums).
  void SumLocal(std::span<const host::HotEntry> hot, std::span<const int> feature_offsets,
                int width, std::span<const float> d_activations);
  // The all-reduce of those sums, leaving the totals in local_.
  absl::Status SumOverChips(Communicator& comm);
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_HOT_ROWS_HOT_ROW_REPLICAS_H_
