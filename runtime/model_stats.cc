#include "runtime/model_stats.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/random.h"

namespace lemrt::runtime {
namespace {

uint64_t HashFloats(std::span<const float> values, uint64_t seed) {
  uint64_t h = seed;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    h = base::Mix64(h ^ bits);
  }
  return h;
}

}  // namespace

absl::StatusOr<ModelStats> ComputeModelStats(Communicator& comm, const SparseCoreStage& sparse,
                                             std::span<const float> dense_params) {
  uint64_t row_hash_sum = 0;
  double sum_sq = 0;
  for (const auto& sc : sparse.sparse_cores()) {
    for (int t = 0; t < sc->num_tables(); ++t) {
      const device::TableShard& shard = sc->shard(t);
      for (int64_t r = 0; r < shard.local_rows(); ++r) {
        std::span<const float> row(shard.row(r), shard.dim());
        row_hash_sum += HashFloats(row, base::HashKeys({static_cast<uint64_t>(t),
                                                        static_cast<uint64_t>(shard.GlobalRow(r))}));
        for (float v : row) sum_sq += double{v} * v;
      }
    }
  }
  absl::Status st = comm.AllReduceSum(std::span<uint64_t>(&row_hash_sum, 1));
  if (!st.ok()) return st;
  st = comm.AllReduceSum(std::span<double>(&sum_sq, 1));
  if (!st.ok()) return st;
  for (float v : dense_params) sum_sq += double{v} * v;
  const uint64_t checksum = base::Mix64(row_hash_sum) ^ HashFloats(dense_params, 0xD5);
  ModelStats stats;
  stats.params_l2 = std::sqrt(sum_sq);
  stats.checksum = absl::StrFormat("%016x", checksum);
  return stats;
}

}  // namespace lemrt::runtime
