#include "device/sparsecore/table_init.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "base/random.h"

namespace lemrt::device {
namespace {

// Rows per unit of work: 256 rows of 64 floats are 64 KiB, so kHost's
// staging buffer stays in the core's cache between building and copying in.
constexpr int64_t kChunkRows = 256;

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

// Writes InitialRow (table_shard.h) of rows into `out`, bit for bit: the
// uniform initializer's elements eight at a time (each lane computes exactly
// the scalar expression: CounterRng value k + 1 of the row's key, its top 53
// bits as a double in [0, 1), (2 d - 1) x scale rounded to float; 2 d is
// exact, so a fused multiply-add gives the same value), the normal one and
// the tail of each row through InitialRow itself.
class RowFiller {
 public:
  RowFiller(const config::TableConfig& table, int table_index, uint64_t seed)
      : table_(table),
        table_index_(table_index),
        seed_(seed),
        uniform_(!table.initializer().has_normal()),
        scale_(table.initializer().uniform().scale()) {
    // Counter offsets of CounterRng::NextU64: value k of a row is
    // Mix64(key + kStep x (k + 1)).
    const int dim = table.dim();
    steps_.resize((dim + 7) / 8 * 8);
    for (size_t k = 0; k < steps_.size(); ++k) steps_[k] = kStep * (k + 1);
  }

  void Fill(int64_t global_row, float* out) const {
    const int dim = table_.dim();
    if (!uniform_ || dim < 8) {
      InitialRow(table_, table_index_, global_row, seed_, std::span<float>(out, dim));
      return;
    }
    const uint64_t key = base::HashKeys({seed_, 0xE3B0C442ULL,
                                         static_cast<uint64_t>(table_index_),
                                         static_cast<uint64_t>(global_row)});
    int k = 0;
    for (; k + 8 <= dim; k += 8) {
      U64x8 offsets;
      std::memcpy(&offsets, steps_.data() + k, sizeof(offsets));
      const U64x8 bits = Mix64x8(key + offsets) >> 11;
      const F64x8 d = __builtin_convertvector(bits, F64x8) * 0x1.0p-53;
      const F32x8 v = __builtin_convertvector((2.0 * d - 1.0) * scale_, F32x8);
      std::memcpy(out + k, &v, sizeof(v));
    }
    for (; k < dim; ++k) {
      const uint64_t x = base::Mix64(key + steps_[k]);
      out[k] = static_cast<float>((2.0 * ((x >> 11) * 0x1.0p-53) - 1.0) * scale_);
    }
  }

 private:
  static constexpr uint64_t kStep = 0x632be59bd9b4e019ULL;  // base::CounterRng's
  const config::TableConfig& table_;
  int table_index_;
  uint64_t seed_;
  bool uniform_;
  double scale_;
  std::vector<uint64_t> steps_;
};

// Rows [begin, end) of table t's shard, in place.
void FillRowsInPlace(const RowFiller& filler, const Optimizer& optimizer, int64_t begin,
                     int64_t end, TableShard& shard) {
  for (int64_t r = begin; r < end; ++r) {
    filler.Fill(shard.GlobalRow(r), shard.mutable_row(r).data());
    optimizer.InitSlots(shard.mutable_row_slots(r));
  }
}

// Rows [begin, end) of table t's shard built in `stage` (the host's buffer),
// then copied in.
void FillRowsStaged(const RowFiller& filler, const Optimizer& optimizer, int64_t begin,
                    int64_t end, TableShard& shard, std::vector<float>* stage) {
  const int64_t dim = shard.dim();
  const int64_t slot_stride = shard.mutable_row_slots(0).size();
  const int64_t n = end - begin;
  stage->resize(n * std::max(dim, slot_stride));
  for (int64_t i = 0; i < n; ++i) filler.Fill(shard.GlobalRow(begin + i), stage->data() + i * dim);
  std::memcpy(shard.mutable_row(begin).data(), stage->data(), sizeof(float) * n * dim);
  if (slot_stride == 0) return;
  for (int64_t i = 0; i < n; ++i) {
    optimizer.InitSlots(std::span<float>(stage->data() + i * slot_stride, slot_stride));
  }
  // Slots are contiguous, row-major.
  std::memcpy(shard.mutable_row_slots(begin).data(), stage->data(),
              sizeof(float) * n * slot_stride);
}

// One unit of work: rows [begin, end) of table `table` on SparseCore `sc`.
struct Chunk {
  SparseCore* sc;
  int table;
  int64_t begin, end;
};

// Chunks of at most kChunkRows rows of every (SparseCore, table) pair, the
// SparseCores' rows of [part / parts, (part + 1) / parts) of each shard.
void AppendChunks(SparseCore* sc, int part, int parts, std::vector<Chunk>* chunks) {
  for (int t = 0; t < sc->num_tables(); ++t) {
    const int64_t n = sc->shard(t).local_rows();
    const int64_t end = n * (part + 1) / parts;
    for (int64_t b = n * part / parts; b < end; b += kChunkRows) {
      chunks->push_back({sc, t, b, std::min(end, b + kChunkRows)});
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
      AppendChunks(scs[k / tiles], k % tiles, tiles, &chunks);
      for (const Chunk& c : chunks) {
        FillRowsInPlace(fillers[c.table], *optimizers[c.table], c.begin, c.end,
                        c.sc->mutable_shard(c.table));
      }
    };
    if (pool != nullptr) {
      pool->Run(tasks, task);
    } else {
      for (int k = 0; k < tasks; ++k) task(k);
    }
    return;
  }
  // kHost: host threads take chunks in turn, each building them in its own
  // staging buffer and copying them in.
  std::vector<Chunk> chunks;
  for (SparseCore* sc : scs) AppendChunks(sc, 0, 1, &chunks);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    std::vector<float> stage;
    for (size_t i = next++; i < chunks.size(); i = next++) {
      const Chunk& c = chunks[i];
      FillRowsStaged(fillers[c.table], *optimizers[c.table], c.begin, c.end,
                     c.sc->mutable_shard(c.table), &stage);
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
