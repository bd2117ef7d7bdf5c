#include "device/sparsecore/table_shard.h"

#include <cstring>
#include <vector>

#include "base/random.h"
#include "device/sparsecore/row_kernels_bf16.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

// Eight lanes of 64-bit integers, doubles and floats (GCC/Clang vector
// extensions: AVX-512 where the target has it, narrower vectors otherwise).
typedef uint64_t U64x8 __attribute__((vector_size(64)));
typedef double F64x8 __attribute__((vector_size(64)));
typedef float F32x8 __attribute__((vector_size(32)));

// base::Mix64 on eight lanes.
inline U64x8 Mix64x8(U64x8 x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

void InitialRow(const config::TableConfig& table, int table_index, int64_t row, uint64_t seed,
                std::span<float> out) {
  const uint64_t key = base::HashKeys(
      {seed, 0xE3B0C442ULL, static_cast<uint64_t>(table_index), static_cast<uint64_t>(row)});
  base::CounterRng rng(key);
  if (table.initializer().has_normal()) {
    const double stddev = table.initializer().normal().stddev();
    for (float& v : out) v = static_cast<float>(rng.NextNormal() * stddev);
    return;
  }
  // Element k is value k + 1 of the row's stream: its top 53 bits as a
  // double d in [0, 1), (2 d - 1) x scale rounded to float. Eight lanes at a
  // time compute exactly that expression (2 d is exact, so a contracted
  // multiply-add rounds alike); the tail goes through the stream itself.
  const double scale = table.initializer().uniform().scale();
  const size_t n = out.size();
  size_t k = 0;
  U64x8 counter = {1, 2, 3, 4, 5, 6, 7, 8};
  for (; k + 8 <= n; k += 8, counter += 8) {
    const U64x8 bits = Mix64x8(key + base::CounterRng::kStep * counter) >> 11;
    const F64x8 d = __builtin_convertvector(bits, F64x8) * 0x1.0p-53;
    const F32x8 v = __builtin_convertvector((2.0 * d - 1.0) * scale, F32x8);
    std::memcpy(out.data() + k, &v, sizeof(v));
  }
  rng.Skip(k);
  for (; k < n; ++k) out[k] = static_cast<float>((2.0 * rng.NextDouble() - 1.0) * scale);
}

TableShard::TableShard(const config::TableConfig& table, int table_index, int residue, int total_sc,
                       uint64_t seed, const Optimizer& optimizer, bool initialize,
                       base::IdPermutation permutation)
    : dim_(table.dim()),
      residue_(residue),
      total_sc_(total_sc),
      local_rows_(layout::RowsOfResidue(table.vocab_size(), residue, total_sc)),
      reciprocal_(total_sc >= 2 && total_sc <= (1 << 16)
                      ? ~uint64_t{0} / static_cast<uint64_t>(total_sc) + 1
                      : 0),
      slot_stride_(optimizer.SlotFloats(table.dim())),
      optimizer_(optimizer),
      permutation_(permutation),
      table_index_(table_index),
      seed_(seed),
      bf16_(config::IsBf16(table.dtype())),
      bf16_slots_(config::IsBf16(table.slot_dtype())) {
  if (bf16_) {
    weights_bf16_.resize(local_rows_ * dim_);
  } else {
    weights_.resize(local_rows_ * dim_);
  }
  if (bf16_slots_) {
    slots_bf16_.resize(local_rows_ * slot_stride_);
  } else {
    slots_.resize(local_rows_ * slot_stride_);
  }
  if (!initialize) return;
  std::vector<float> row(dim_);
  for (int64_t r = 0; r < local_rows_; ++r) {
    if (bf16_) {
      InitialRow(table, table_index, OriginalRow(r), seed, row);
      WriteRows(r, 1, row.data());
    } else {
      InitialRow(table, table_index, OriginalRow(r), seed,
                 std::span<float>(weights_.data() + r * dim_, dim_));
    }
  }
  if (slot_stride_ == 0) return;
  std::vector<float> slots(slot_stride_);
  for (int64_t r = 0; r < local_rows_; ++r) {
    optimizer_.InitSlots(slots);
    WriteSlots(r, 1, slots.data());
  }
}

const void* TableShard::slots_address(int64_t local_row) const {
  if (bf16_slots_) return slots_bf16_.data() + local_row * slot_stride_;
  return slots_.data() + local_row * slot_stride_;
}

void TableShard::ReadRows(int64_t begin, int64_t n, float* out) const {
  if (!bf16_) {
    std::memcpy(out, weights_.data() + begin * dim_, sizeof(float) * n * dim_);
    return;
  }
  base::WidenBf16(std::span<const uint16_t>(weights_bf16_.data() + begin * dim_, n * dim_), out);
}

void TableShard::WriteRows(int64_t begin, int64_t n, const float* in) {
  if (!bf16_) {
    std::memcpy(weights_.data() + begin * dim_, in, sizeof(float) * n * dim_);
    return;
  }
  base::NarrowBf16Nearest(std::span<const float>(in, n * dim_),
                          weights_bf16_.data() + begin * dim_);
}

void TableShard::ReadSlots(int64_t begin, int64_t n, float* out) const {
  const int64_t count = n * slot_stride_;
  if (count == 0) return;  // no slots (SGD): memcpy may not see a null pointer
  if (!bf16_slots_) {
    std::memcpy(out, slots_.data() + begin * slot_stride_, sizeof(float) * count);
    return;
  }
  base::WidenBf16(std::span<const uint16_t>(slots_bf16_.data() + begin * slot_stride_, count),
                  out);
}

void TableShard::WriteSlots(int64_t begin, int64_t n, const float* in) {
  const int64_t count = n * slot_stride_;
  if (count == 0) return;  // no slots (SGD): memcpy may not see a null pointer
  if (!bf16_slots_) {
    std::memcpy(slots_.data() + begin * slot_stride_, in, sizeof(float) * count);
    return;
  }
  base::NarrowBf16Nearest(std::span<const float>(in, count),
                          slots_bf16_.data() + begin * slot_stride_);
}

TableShard::RoundingKeys TableShard::StepRoundingKeys(int64_t step) const {
  return {base::Bf16StepKey(seed_, table_index_, step),
          base::Bf16StepKey(seed_, table_index_, step + (int64_t{1} << 62))};
}

void TableShard::RoundAsUpdated(int64_t original_row, const RoundingKeys& keys,
                                std::span<float> row, std::span<float> slots) const {
  std::vector<uint16_t> bits;
  auto round = [&](std::span<float> v, uint64_t step_key) {
    bits.resize(v.size());
    NarrowBf16RowStochastic(v.data(), static_cast<int64_t>(v.size()),
                            base::Bf16RowKey(step_key, original_row), bits.data());
    WidenBf16Row(bits.data(), static_cast<int64_t>(v.size()), v.data());
  };
  if (bf16_) round(row, keys.rows);
  if (bf16_slots_) round(slots, keys.slots);
}

void TableShard::UpdateRounded(int64_t local_row, std::span<const float> grad, int64_t step,
                               float learning_rate, const RoundingKeys& keys) {
  // Rows up to kStackFloats wide are widened on the stack; wider ones (rare)
  // in a heap buffer.
  constexpr int64_t kStackFloats = 1024;
  alignas(64) float stack[kStackFloats];
  std::vector<float> heap;
  float* w = stack;
  if (dim_ + slot_stride_ > kStackFloats) {
    heap.resize(dim_ + slot_stride_);
    w = heap.data();
  }
  float* s = w + dim_;
  uint16_t* row_bf16 = bf16_ ? weights_bf16_.data() + local_row * dim_ : nullptr;
  uint16_t* slots_bf16 = bf16_slots_ ? slots_bf16_.data() + local_row * slot_stride_ : nullptr;
  if (bf16_) {
    WidenBf16Row(row_bf16, dim_, w);
  } else {
    std::memcpy(w, weights_.data() + local_row * dim_, sizeof(float) * dim_);
  }
  if (bf16_slots_) {
    WidenBf16Row(slots_bf16, slot_stride_, s);
  } else {
    ReadSlots(local_row, 1, s);
  }
  optimizer_.Apply(std::span<float>(w, dim_), std::span<float>(s, slot_stride_), grad, step,
                   learning_rate);
  const int64_t row = OriginalRow(local_row);
  if (bf16_) {
    NarrowBf16RowStochastic(w, dim_, base::Bf16RowKey(keys.rows, row), row_bf16);
  } else {
    std::memcpy(weights_.data() + local_row * dim_, w, sizeof(float) * dim_);
  }
  if (slot_stride_ == 0) return;
  if (bf16_slots_) {
    NarrowBf16RowStochastic(s, slot_stride_, base::Bf16RowKey(keys.slots, row), slots_bf16);
  } else {
    std::memcpy(slots_.data() + local_row * slot_stride_, s, sizeof(float) * slot_stride_);
  }
}

}  // namespace lemrt::device
