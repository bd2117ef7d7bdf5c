#include "device/sparsecore/table_init.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace lemrt::device {
namespace {

// Rows [begin, end) of table t's shard on `sc`, written in place.
void InitializeShardRows(const config::RunConfig& config, int t, const Optimizer& optimizer,
                         int64_t begin, int64_t end, TableShard& shard) {
  const auto& table = config.tables(t);
  const uint64_t seed = config.training().seed();
  for (int64_t r = begin; r < end; ++r) {
    InitialRow(table, t, shard.GlobalRow(r), seed, shard.mutable_row(r));
    optimizer.InitSlots(shard.mutable_row_slots(r));
  }
}

void InitializeOnHost(const config::RunConfig& config, std::span<SparseCore* const> scs,
                      std::span<const Optimizer* const> optimizers) {
  std::vector<float> rows, slots;
  for (int t = 0; t < config.tables_size(); ++t) {
    const int dim = config.tables(t).dim();
    const int64_t slot_stride = int64_t{optimizers[t]->slots_per_param()} * dim;
    int64_t chip_rows = 0;
    for (SparseCore* sc : scs) chip_rows += sc->shard(t).local_rows();
    // The chip's rows of table t, SparseCore after SparseCore, built on the host.
    rows.assign(chip_rows * dim, 0.0f);
    slots.assign(chip_rows * slot_stride, 0.0f);
    int64_t at = 0;
    for (SparseCore* sc : scs) {
      const TableShard& shard = sc->shard(t);
      for (int64_t r = 0; r < shard.local_rows(); ++r, ++at) {
        InitialRow(config.tables(t), t, shard.GlobalRow(r), config.training().seed(),
                   std::span<float>(rows.data() + at * dim, dim));
        optimizers[t]->InitSlots(std::span<float>(slots.data() + at * slot_stride, slot_stride));
      }
    }
    // Copy in.
    at = 0;
    for (SparseCore* sc : scs) {
      TableShard& shard = sc->mutable_shard(t);
      const int64_t n = shard.local_rows();
      if (n > 0) {
        std::memcpy(shard.mutable_weights().data(), rows.data() + at * dim,
                    sizeof(float) * n * dim);
      }
      if (slot_stride > 0 && n > 0) {
        std::memcpy(shard.mutable_row_slots(0).data(), slots.data() + at * slot_stride,
                    sizeof(float) * n * slot_stride);  // slots are contiguous, row-major
      }
      at += n;
    }
  }
}

}  // namespace

TableInitMode TableInitModeOf(const config::SparseCoreConfig& sc) {
  if (sc.enable_fast_table_initialization()) return TableInitMode::kDeviceParallel;
  return sc.initialize_tables_on_host() ? TableInitMode::kHost : TableInitMode::kDevice;
}

const char* TableInitModeName(TableInitMode mode) {
  switch (mode) {
    case TableInitMode::kHost:
      return "host";
    case TableInitMode::kDevice:
      return "device";
    case TableInitMode::kDeviceParallel:
      return "device_parallel";
  }
  return "unknown";
}

void InitializeTables(const config::RunConfig& config, std::span<SparseCore* const> scs,
                      std::span<const Optimizer* const> optimizers, TableInitMode mode,
                      TilePool* pool) {
  if (mode == TableInitMode::kHost) {
    InitializeOnHost(config, scs, optimizers);
    return;
  }
  if (mode == TableInitMode::kDevice) {
    for (SparseCore* sc : scs) {
      for (int t = 0; t < sc->num_tables(); ++t) {
        TableShard& shard = sc->mutable_shard(t);
        InitializeShardRows(config, t, *optimizers[t], 0, shard.local_rows(), shard);
      }
    }
    return;
  }
  // kDeviceParallel: one task per (SparseCore, tile); each writes its own rows.
  const int tiles = scs.empty() ? 1 : scs[0]->num_tiles();
  const int tasks = static_cast<int>(scs.size()) * tiles;
  auto task = [&](int k) {
    SparseCore* sc = scs[k / tiles];
    const int tile = k % tiles;
    for (int t = 0; t < sc->num_tables(); ++t) {
      TableShard& shard = sc->mutable_shard(t);
      const int64_t n = shard.local_rows();
      InitializeShardRows(config, t, *optimizers[t], n * tile / tiles, n * (tile + 1) / tiles,
                          shard);
    }
  };
  if (pool != nullptr) {
    pool->Run(tasks, task);
  } else {
    for (int k = 0; k < tasks; ++k) task(k);
  }
}

}  // namespace lemrt::device
