#include "device/sparsecore/table_shard.h"

#include <cstring>

#include "base/random.h"

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

TableShard::TableShard(const config::TableConfig& table, int table_index, int global_sc,
                       int total_sc, uint64_t seed, const Optimizer& optimizer,
                       bool initialize, base::IdPermutation permutation)
    : dim_(table.dim()),
      global_sc_(global_sc),
      total_sc_(total_sc),
      local_rows_(table.vocab_size() > global_sc
                      ? (table.vocab_size() - global_sc + total_sc - 1) / total_sc
                      : 0),
      reciprocal_(total_sc >= 2 && total_sc <= (1 << 16)
                      ? ~uint64_t{0} / static_cast<uint64_t>(total_sc) + 1
                      : 0),
      slot_stride_(optimizer.SlotFloats(table.dim())),
      optimizer_(optimizer),
      permutation_(permutation),
      weights_(local_rows_ * dim_),
      slots_(local_rows_ * slot_stride_) {
  if (!initialize) return;
  for (int64_t r = 0; r < local_rows_; ++r) {
    InitialRow(table, table_index, OriginalRow(r), seed,
               std::span<float>(weights_.data() + r * dim_, dim_));
  }
  if (slot_stride_ > 0) {
    for (int64_t r = 0; r < local_rows_; ++r) {
      optimizer_.InitSlots(std::span<float>(slots_.data() + r * slot_stride_, slot_stride_));
    }
  }
}

}  // namespace lemrt::device
