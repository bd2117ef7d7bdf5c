#include "device/sparsecore/table_init.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace lemrt::device {
namespace {

// Rows per unit of work: 256 rows of 64 floats are 64 KiB, so kHost's
// staging buffer stays in the core's cache between building and copying in.
constexpr int64_t kChunkRows = 256;
// The bytes of shard rows one kHost thread claims at a time: whole
// transparent huge pages (2 MiB) of the shard, so that two threads never
// fault in the same page (the second would wait for the first's zeroing of
// it) and the first touch of a table's pages, which costs more than
// computing their values, runs on every thread at once.
constexpr int64_t kClaimBytes = int64_t{4} << 20;

// Writes InitialRow (table_shard.h) of one table's original rows.
class RowFiller {
 public:
  RowFiller(const config::TableConfig& table, int table_index, uint64_t seed)
      : table_(table), table_index_(table_index), seed_(seed) {}

  void Fill(int64_t global_row, float* out) const {
    InitialRow(table_, table_index_, global_row, seed_, std::span<float>(out, table_.dim()));
  }

 private:
  const config::TableConfig& table_;
  int table_index_;
  uint64_t seed_;
};

void FillRowsStaged(const RowFiller& filler, const Optimizer& optimizer, int64_t begin,
                    int64_t end, TableShard& shard, std::vector<float>* stage);

// Rows [begin, end) of table t's shard, in place (BF16 rows or slots:
// through a staging buffer, kChunkRows rows at a time).
void FillRowsInPlace(const RowFiller& filler, const Optimizer& optimizer, int64_t begin,
                     int64_t end, TableShard& shard) {
  if (shard.bf16() || shard.bf16_slots()) {
    std::vector<float> stage;
    for (int64_t b = begin; b < end; b += kChunkRows) {
      FillRowsStaged(filler, optimizer, b, std::min(end, b + kChunkRows), shard, &stage);
    }
    return;
  }
  for (int64_t r = begin; r < end; ++r) {
    filler.Fill(shard.OriginalRow(r), shard.mutable_row(r).data());
    optimizer.InitSlots(shard.mutable_row_slots(r));
  }
}

// Rows [begin, end) of table t's shard built in `stage` (the host's buffer),
// then copied in.
void FillRowsStaged(const RowFiller& filler, const Optimizer& optimizer, int64_t begin,
                    int64_t end, TableShard& shard, std::vector<float>* stage) {
  const int64_t dim = shard.dim();
  const int64_t slot_stride = shard.slot_stride();
  const int64_t n = end - begin;
  stage->resize(n * std::max(dim, slot_stride));
  for (int64_t i = 0; i < n; ++i) filler.Fill(shard.OriginalRow(begin + i), stage->data() + i * dim);
  shard.WriteRows(begin, n, stage->data());
  if (slot_stride == 0) return;
  for (int64_t i = 0; i < n; ++i) {
    optimizer.InitSlots(std::span<float>(stage->data() + i * slot_stride, slot_stride));
  }
  // Slots are contiguous, row-major.
  shard.WriteSlots(begin, n, stage->data());
}

// One unit of work: rows [begin, end) of table `table` on SparseCore `sc`.
struct Chunk {
  SparseCore* sc;
  int table;
  int64_t begin, end;
};

// Chunks of at most `rows(shard)` rows of every (SparseCore, table) pair,
// the SparseCores' rows of [part / parts, (part + 1) / parts) of each shard.
template <typename RowsOf>
void AppendChunks(SparseCore* sc, int part, int parts, RowsOf rows, std::vector<Chunk>* chunks) {
  for (int t = 0; t < sc->num_tables(); ++t) {
    const TableShard& shard = sc->shard(t);
    const int64_t n = shard.local_rows();
    const int64_t end = n * (part + 1) / parts;
    const int64_t step = std::max<int64_t>(1, rows(shard));
    for (int64_t b = n * part / parts; b < end; b += step) {
      chunks->push_back({sc, t, b, std::min(end, b + step)});
    }
  }
}

int64_t ChunkRows(const TableShard&) { return kChunkRows; }

// Rows of `shard` in kClaimBytes of its rows and slots (at least kChunkRows).
int64_t ClaimRows(const TableShard& shard) {
  const int64_t row_bytes = shard.row_bytes() + shard.slots_bytes_per_row();
  return std::max(kChunkRows, kClaimBytes / std::max<int64_t>(1, row_bytes));
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
                      TilePool* pool, int host_threads) {
  const uint64_t seed = config.training().seed();
  std::vector<RowFiller> fillers;
  fillers.reserve(config.tables_size());
  for (int t = 0; t < config.tables_size(); ++t) fillers.emplace_back(config.tables(t), t, seed);
  if (mode == TableInitMode::kDevice) {
    for (SparseCore* sc : scs) {
      for (int t = 0; t < sc->num_tables(); ++t) {
        TableShard& shard = sc->mutable_shard(t);
        FillRowsInPlace(fillers[t], *optimizers[t], 0, shard.local_rows(), shard);
      }
    }
    return;
  }
  if (mode == TableInitMode::kDeviceParallel) {
    // One task per (SparseCore, tile); each writes its own share of rows.
    const int tiles = scs.empty() ? 1 : scs[0]->num_tiles();
    const int tasks = static_cast<int>(scs.size()) * tiles;
    auto task = [&](int k) {
      std::vector<Chunk> chunks;
      AppendChunks(scs[k / tiles], k % tiles, tiles, ChunkRows, &chunks);
      for (const Chunk& c : chunks) {
        FillRowsInPlace(fillers[c.table], *optimizers[c.table], c.begin, c.end,
                        c.sc->mutable_shard(c.table));
      }
    };
    RunOnPool(pool, tasks, task);
    return;
  }
  // kHost: host threads claim runs of kClaimBytes in turn, each building
  // them kChunkRows rows at a time in its own staging buffer and copying
  // them in (the copy is the first touch of the run's pages).
  std::vector<Chunk> chunks;
  for (SparseCore* sc : scs) AppendChunks(sc, 0, 1, ClaimRows, &chunks);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    std::vector<float> stage;
    for (size_t i = next++; i < chunks.size(); i = next++) {
      const Chunk& c = chunks[i];
      for (int64_t b = c.begin; b < c.end; b += kChunkRows) {
        FillRowsStaged(fillers[c.table], *optimizers[c.table], b, std::min(c.end, b + kChunkRows),
                       c.sc->mutable_shard(c.table), &stage);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < std::min<int64_t>(host_threads, chunks.size()); ++i) {
    threads.emplace_back(worker);
  }
  worker();
  for (std::thread& th : threads) th.join();
}

}  // namespace lemrt::device
