#include "runtime/hot_rows/hot_row_replicas.h"

#include <algorithm>
#include <cmath>

#include "base/exact_sum.h"
#include "device/sparsecore/quantization.h"
#include "glog/logging.h"

namespace lemrt::runtime {

HotRowReplicas::HotRowReplicas(host::HotRowSet set, std::span<const int> table_dims,
                               std::span<const device::Optimizer* const> optimizers,
                               bool exact_sums)
    : set_(std::move(set)),
      dims_(table_dims.begin(), table_dims.end()),
      optimizers_(optimizers.begin(), optimizers.end()),
      exact_sums_(exact_sums) {
  CHECK_LE(set_.num_tables(), static_cast<int>(dims_.size()));
  int64_t weights = 0, slots = 0;
  for (int t = 0; t < set_.num_tables(); ++t) {
    for (size_t i = 0; i < set_.rows(t).size(); ++i) {
      slot_table_.push_back(t);
      weight_offset_.push_back(weights);
      slot_offset_.push_back(slots);
      weights += dims_[t];
      slots += optimizers_[t]->SlotFloats(dims_[t]);
    }
  }
  weights_.assign(weights, 0.0f);
  slots_.assign(slots, 0.0f);
  local_.resize(weights + set_.slots());
  if (exact_sums_) exact_.resize(base::ExactSlots(weights) + set_.slots());
}

int64_t HotRowReplicas::bytes() const {
  return static_cast<int64_t>(weights_.size() + slots_.size()) * sizeof(float);
}

void HotRowReplicas::FindOwned(std::span<const std::unique_ptr<device::SparseCore>> scs) {
  owned_.clear();
  for (size_t l = 0; l < scs.size(); ++l) {
    for (int t = 0; t < set_.num_tables(); ++t) {
      const device::TableShard& shard = scs[l]->shard(t);
      const std::span<const int64_t> rows = set_.rows(t);
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t local = shard.LocalRow(rows[i]);
        if (local < shard.local_rows() && shard.GlobalRow(local) == rows[i]) {
          owned_.push_back({set_.first_slot(t) + static_cast<int32_t>(i), static_cast<int>(l), local});
        }
      }
    }
  }
}

absl::Status HotRowReplicas::Refresh(Communicator& comm,
                                     std::span<const std::unique_ptr<device::SparseCore>> scs) {
  FindOwned(scs);
  // Owners contribute their rows, everyone else -0.0f: x + -0 == x for
  // every x, so the sum is each row's bits whatever the reduction order.
  const size_t w = weights_.size();
  std::vector<float> all(w + slots_.size(), -0.0f);
  for (const Owned& o : owned_) {
    // Widened exactly where the table stores bf16.
    const device::TableShard& shard = scs[o.sc]->shard(TableOf(o.slot));
    shard.ReadRows(o.local_row, 1, all.data() + weight_offset_[o.slot]);
    shard.ReadSlots(o.local_row, 1, all.data() + w + slot_offset_[o.slot]);
  }
  absl::Status st = comm.AllReduceSum(std::span<float>(all));
  if (!st.ok()) return st;
  std::copy(all.begin(), all.begin() + w, weights_.begin());
  std::copy(all.begin() + w, all.end(), slots_.begin());
  return absl::OkStatus();
}

void HotRowReplicas::Lookup(std::span<const host::HotEntry> hot,
                            std::span<const int> feature_offsets, int width,
                            std::span<float> activations, bool int8) const {
  std::vector<float> rounded;
  for (const host::HotEntry& e : hot) {
    const int dim = dims_[TableOf(e.slot)];
    const float* r = row(e.slot);
    if (int8) {
      rounded.assign(r, r + dim);
      device::Int8RoundTripRow(rounded);
      r = rounded.data();
    }
    float* out = activations.data() + int64_t{e.row} * width + feature_offsets[e.feature];
    for (int k = 0; k < dim; ++k) out[k] += e.gain * r[k];
  }
}

void HotRowReplicas::SumLocal(std::span<const host::HotEntry> hot,
                              std::span<const int> feature_offsets, int width,
                              std::span<const float> d_activations) {
  const int64_t g = static_cast<int64_t>(weights_.size());
  if (exact_sums_) {
    std::fill(exact_.begin(), exact_.end(), 0);
    int64_t& specials = exact_[base::ExactSlots(g) - 1];
    for (const host::HotEntry& e : hot) {
      const int dim = dims_[TableOf(e.slot)];
      const float* d = d_activations.data() + int64_t{e.row} * width + feature_offsets[e.feature];
      int64_t* limbs = exact_.data() + weight_offset_[e.slot] * base::kExactLimbs;
      for (int k = 0; k < dim; ++k) {
        specials += base::AddExact(e.gain * d[k], limbs + k * base::kExactLimbs) ? 0 : 1;
      }
      exact_[base::ExactSlots(g) + e.slot] = 1;  // touched
    }
    return;
  }
  std::fill(local_.begin(), local_.end(), 0.0f);
  for (const host::HotEntry& e : hot) {
    const int dim = dims_[TableOf(e.slot)];
    const float* d = d_activations.data() + int64_t{e.row} * width + feature_offsets[e.feature];
    float* acc = local_.data() + weight_offset_[e.slot];
    for (int k = 0; k < dim; ++k) acc[k] += e.gain * d[k];
    local_[g + e.slot] = 1.0f;  // touched
  }
}

absl::Status HotRowReplicas::SumOverChips(Communicator& comm) {
  // One all-reduce: every chip gets the same sum, as the dense gradients'
  // all-reduce relies on (runtime/step/tensorcore_stage.h), in place.
  if (!exact_sums_) return comm.AllReduceSum(std::span<float>(local_));
  absl::Status st = comm.AllReduceSum(std::span<int64_t>(exact_));
  if (!st.ok()) return st;
  const size_t g = weights_.size();
  base::ExactValues(std::span<const int64_t>(exact_.data(), base::ExactSlots(g)),
                    std::span<float>(local_.data(), g));
  for (size_t s = 0; s < local_.size() - g; ++s) {
    local_[g + s] = exact_[base::ExactSlots(g) + s] != 0 ? 1.0f : 0.0f;
  }
  return absl::OkStatus();
}

absl::Status HotRowReplicas::Update(std::span<const host::HotEntry> hot,
                                    std::span<const int> feature_offsets, int width,
                                    std::span<const float> d_activations, int64_t step,
                                    Communicator& comm,
                                    std::span<const std::unique_ptr<device::SparseCore>> scs) {
  const int64_t g = static_cast<int64_t>(weights_.size());
  SumLocal(hot, feature_offsets, width, d_activations);
  absl::Status st = SumOverChips(comm);
  if (!st.ok()) return st;
  const std::vector<float>& total = local_;
  for (int t = 0; t < set_.num_tables(); ++t) {
    if (set_.rows(t).empty()) continue;
    const float lr = optimizers_[t]->LearningRateAt(step);
    const int dim = dims_[t];
    const int64_t slot_floats = optimizers_[t]->SlotFloats(dim);
    const int32_t first = set_.first_slot(t);
    // BF16 rows and slots round as their owner's Update would (every
    // SparseCore holds a shard of every table, which knows the rule).
    const device::TableShard& rule = scs.front()->shard(t);
    const bool round = rule.bf16() || rule.bf16_slots();
    const device::TableShard::RoundingKeys keys =
        round ? rule.StepRoundingKeys(step) : device::TableShard::RoundingKeys{};
    for (int32_t s = first; s < first + static_cast<int32_t>(set_.rows(t).size()); ++s) {
      if (total[g + s] == 0.0f) continue;  // no chip looked it up this step
      const std::span<float> w(row(s), dim);
      const std::span<float> slots(slots_.data() + slot_offset_[s], slot_floats);
      optimizers_[t]->Apply(w, slots, std::span<const float>(total.data() + weight_offset_[s], dim),
                            step, lr);
      if (round) {
        const int64_t original = rule.permutation().Inverse(set_.rows(t)[s - first]);
        rule.RoundAsUpdated(original, keys, w, slots);
      }
    }
  }
  // Write-back: the owners' shards hold the model. The replicas of untouched rows did not change.
  for (const Owned& o : owned_) {
    if (total[g + o.slot] == 0.0f) continue;
    const int t = TableOf(o.slot);
    // BF16 parts hold bf16 values already: written back exactly.
    device::TableShard& shard = scs[o.sc]->mutable_shard(t);
    shard.WriteRows(o.local_row, 1, row(o.slot));
    shard.WriteSlots(o.local_row, 1, slots_.data() + slot_offset_[o.slot]);
  }
  return absl::OkStatus();
}

}  // namespace lemrt::runtime
