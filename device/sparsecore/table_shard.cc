#include "device/sparsecore/table_shard.h"

#include "base/random.h"

namespace lemrt::device {

void InitialRow(const config::TableConfig& table, int table_index, int64_t row, uint64_t seed,
                std::span<float> out) {
  base::CounterRng rng(base::HashKeys({seed, 0xE3B0C442ULL, static_cast<uint64_t>(table_index),
                                       static_cast<uint64_t>(row)}));
  if (table.initializer().has_normal()) {
    const double stddev = table.initializer().normal().stddev();
    for (float& v : out) v = static_cast<float>(rng.NextNormal() * stddev);
    return;
  }
  const double scale = table.initializer().uniform().scale();
  for (float& v : out) v = static_cast<float>((2.0 * rng.NextDouble() - 1.0) * scale);
}

TableShard::TableShard(const config::TableConfig& table, int table_index, int global_sc,
                       int total_sc, uint64_t seed, const Optimizer& optimizer,
                       bool initialize)
    : dim_(table.dim()),
      global_sc_(global_sc),
      total_sc_(total_sc),
      local_rows_(table.vocab_size() > global_sc
                      ? (table.vocab_size() - global_sc + total_sc - 1) / total_sc
                      : 0),
      reciprocal_(total_sc >= 2 && total_sc <= (1 << 16)
                      ? ~uint64_t{0} / static_cast<uint64_t>(total_sc) + 1
                      : 0),
      slot_stride_(int64_t{optimizer.slots_per_param()} * table.dim()),
      optimizer_(optimizer),
      weights_(local_rows_ * dim_),
      slots_(local_rows_ * slot_stride_) {
  if (!initialize) return;
  for (int64_t r = 0; r < local_rows_; ++r) {
    InitialRow(table, table_index, GlobalRow(r), seed,
               std::span<float>(weights_.data() + r * dim_, dim_));
  }
  if (slot_stride_ > 0) {
    for (int64_t r = 0; r < local_rows_; ++r) {
      optimizer_.InitSlots(std::span<float>(slots_.data() + r * slot_stride_, slot_stride_));
    }
  }
}

}  // namespace lemrt::device
