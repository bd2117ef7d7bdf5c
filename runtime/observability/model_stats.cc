#include "runtime/observability/model_stats.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "runtime/observability/model_checksum.h"
#include "runtime/observability/row_block_stats.h"

namespace lemrt::runtime {
namespace {

// Rows a block: a multiple of the eight lanes, and enough work (~1 MiB of
// fp32 rows at dim 32) that claiming blocks costs nothing measurable.
constexpr int64_t kBlockRows = 8192;

struct Block {
  const device::TableShard* shard = nullptr;
  int table = 0;
  int64_t begin = 0;  // Local rows [begin, end).
  int64_t end = 0;
};

std::vector<Block> Blocks(const SparseCoreStage& sparse) {
  std::vector<Block> blocks;
  for (const auto& sc : sparse.sparse_cores()) {
    for (int t = 0; t < sc->num_tables(); ++t) {
      const device::TableShard& shard = sc->shard(t);
      for (int64_t b = 0; b < shard.local_rows(); b += kBlockRows) {
        blocks.push_back({&shard, t, b, std::min(shard.local_rows(), b + kBlockRows)});
      }
    }
  }
  return blocks;
}

// One block's statistics; `original_rows` and `widened` are scratch.
RowBlockStats BlockStats(const Block& block, std::vector<int64_t>* original_rows,
                         std::vector<float>* widened) {
  const device::TableShard& shard = *block.shard;
  const int64_t rows = block.end - block.begin;
  original_rows->resize(rows);
  for (int64_t i = 0; i < rows; ++i) (*original_rows)[i] = shard.OriginalRow(block.begin + i);
  const float* values;
  if (shard.bf16()) {
    // BF16 rows are hashed as their (exact) fp32 values, so a checkpoint
    // converted from BF16 to FP32 keeps the checksum.
    widened->resize(rows * shard.dim());
    shard.ReadRows(block.begin, rows, widened->data());
    values = widened->data();
  } else {
    values = shard.row(block.begin);
  }
  RowBlockStats stats;
  AddRowBlock(block.table, original_rows->data(), values, rows, shard.dim(), &stats);
  return stats;
}

// This rank's rows: blocks claimed in turn by `threads` threads, their
// statistics combined in block order (the float sum too), so the result does
// not depend on the thread count.
RowBlockStats LocalRowStats(const SparseCoreStage& sparse, int threads) {
  const std::vector<Block> blocks = Blocks(sparse);
  std::vector<RowBlockStats> per_block(blocks.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    std::vector<int64_t> original_rows;
    std::vector<float> widened;
    for (size_t i = next++; i < blocks.size(); i = next++) {
      per_block[i] = BlockStats(blocks[i], &original_rows, &widened);
    }
  };
  std::vector<std::thread> helpers;
  for (int i = 1; i < std::min<int64_t>(threads, blocks.size()); ++i) helpers.emplace_back(worker);
  worker();
  for (std::thread& th : helpers) th.join();
  RowBlockStats all;
  for (const RowBlockStats& b : per_block) all.Add(b);
  return all;
}

}  // namespace

absl::StatusOr<ModelStats> ComputeModelStats(Communicator& comm, const SparseCoreStage& sparse,
                                             std::span<const float> dense_params, int threads) {
  RowBlockStats rows = LocalRowStats(sparse, threads);
  absl::Status st = comm.AllReduceSum(std::span<uint64_t>(&rows.hash_sum, 1));
  if (!st.ok()) return st;
  double sum_sq = rows.float_sum;
  st = comm.AllReduceSum(std::span<double>(&sum_sq, 1));
  if (!st.ok()) return st;
  base::NormalizeExact(rows.exact);
  st = comm.AllReduceSum(std::span<int64_t>(rows.exact));
  if (!st.ok()) return st;
  RowBlockStats all;
  all.Add(rows);
  for (float v : dense_params) {
    sum_sq += double{v} * v;
    all.AddRowSquares(double{v} * v);
  }
  ModelStats stats;
  // Exact, so the same at every world size, unless a value reached 2^32 in
  // magnitude (or is not finite): then the float sum (NaN for NaN).
  stats.params_l2 = std::sqrt(all.special() ? sum_sq : all.ExactSquares());
  stats.checksum = ModelChecksum(rows.hash_sum, dense_params);
  return stats;
}

}  // namespace lemrt::runtime
