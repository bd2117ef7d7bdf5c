// Simulated quantization of the forward lookup (reference section 13): each
// gathered row of a quantized table is quantized to num_buckets evenly spaced
// levels in [low, high] and dequantized back to f32 before pooling, so the
// model trains against the quantization noise while the table keeps (and the
// optimizer updates) its f32 rows. Gradients pass straight through: the
// backward pass treats quantize-dequantize as the identity.
//
//   step  = (high - low) / (num_buckets - 1)
//   level = round((clip(v, low, high) - low) / step)      in [0, num_buckets)
//   v'    = low + level x step
//
// so |v' - v| <= step / 2 for v in [low, high]; values outside are clipped.
// Immutable after construction; thread-safe.
#ifndef LEMRT_DEVICE_SPARSECORE_QUANTIZATION_H_
#define LEMRT_DEVICE_SPARSECORE_QUANTIZATION_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "proto/config.pb.h"

namespace lemrt::device {

struct QuantizationParams {
  int num_buckets = 256;  // levels, >= 2
  float low = 0;          // < high
  float high = 1;
  // Distance between adjacent levels.
  float step() const { return (high - low) / static_cast<float>(num_buckets - 1); }
};

// Quantizes and dequantizes `values` in place (see the formula above).
void QuantizeDequantize(const QuantizationParams& params, std::span<float> values);

// Post-training int8 quantization of one table row (lemrt_train
// --eval_quantized): per row, offset = min(row), scale = (max(row) -
// min(row)) / 255, code = round((v - offset) / scale) in [0, 255] (stored as
// uint8), v' = offset + code x scale; a row of equal values has scale 0 and
// comes back exactly. Stored, a row of dim floats takes dim code bytes plus
// kInt8RowOverheadBytes (f32 scale and offset) instead of 4 x dim bytes.
// Replaces `row` by its dequantized value; returns max |v' - v| (<= scale / 2).
constexpr int64_t kInt8RowOverheadBytes = 8;
float Int8RoundTripRow(std::span<float> row);

// The quantization of every table of a validated config.
class TableQuantization {
 public:
  TableQuantization() = default;
  static TableQuantization FromConfig(const config::RunConfig& config);

  // True when some table is quantized.
  bool any() const { return any_; }
  // Table `table`'s parameters; null when its lookups read f32 rows.
  const QuantizationParams* table(int table) const {
    return table < static_cast<int>(tables_.size()) && tables_[table] ? &*tables_[table]
                                                                     : nullptr;
  }

  // Applies QuantizeDequantize to the gathered rows [begin, end) of a
  // SparseCore's lookup: row u is table RowKeyTable(unique_keys[u])'s (base/row_key.h) and lies at
  // gathered[unique_offsets[u] .. unique_offsets[u + 1]) (the layout of
  // SparseCoreStepState). Rows of unquantized tables are left alone.
  void ApplyToGathered(std::span<const uint64_t> unique_keys,
                       std::span<const int64_t> unique_offsets, int64_t begin, int64_t end,
                       float* gathered) const;

 private:
  bool any_ = false;
  std::vector<std::optional<QuantizationParams>> tables_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_QUANTIZATION_H_
