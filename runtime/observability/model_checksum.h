// The model checksum of the run summary and the checkpoint manifest, from
// its parts: a hash of each embedding row keyed by (table, global row), summed
// mod 2^64 so the order and placement of rows do not matter, combined with a
// hash of the dense parameters. ComputeModelStats (model_stats.h) computes it
// over the chips; readers of a saved model (lemrt_ckpt verify) row by row.
// Pure functions; thread-safe.
#ifndef LEMRT_RUNTIME_OBSERVABILITY_MODEL_CHECKSUM_H_
#define LEMRT_RUNTIME_OBSERVABILITY_MODEL_CHECKSUM_H_

#include <cstdint>
#include <span>
#include <string>

namespace lemrt::runtime {

// The hash of row `global_row` of table `table`: `dim` floats at `values`.
uint64_t ModelRowHash(int table, int64_t global_row, const float* values, int dim);

// 16 hex digits from the sum of every row's ModelRowHash and the dense
// parameters.
std::string ModelChecksum(uint64_t row_hash_sum, std::span<const float> dense_params);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_MODEL_CHECKSUM_H_
