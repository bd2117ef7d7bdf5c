#include "device/sparsecore/quantization.h"

#include <algorithm>
#include <cmath>

#include "base/row_key.h"

namespace lemrt::device {

void QuantizeDequantize(const QuantizationParams& params, std::span<float> values) {
  const float low = params.low;
  const float high = params.high;
  const float step = params.step();
  const float inv_step = 1.0f / step;
  const float max_level = static_cast<float>(params.num_buckets - 1);
  for (float& v : values) {
    const float clipped = std::clamp(v, low, high);
    // nearbyint: round half to even, the same on every rank and thread.
    const float level = std::min(max_level, std::nearbyint((clipped - low) * inv_step));
    v = low + level * step;
  }
}

float Int8RoundTripRow(std::span<float> row) {
  if (row.empty()) return 0;
  const auto [lo, hi] = std::minmax_element(row.begin(), row.end());
  const float offset = *lo;
  const float scale = (*hi - *lo) / 255.0f;
  if (!(scale > 0)) return 0;  // constant row: exact
  float max_error = 0;
  for (float& v : row) {
    const float code = std::clamp(std::nearbyint((v - offset) / scale), 0.0f, 255.0f);
    const float back = offset + code * scale;
    max_error = std::max(max_error, std::abs(back - v));
    v = back;
  }
  return max_error;
}

TableQuantization TableQuantization::FromConfig(const config::RunConfig& config) {
  TableQuantization q;
  q.tables_.resize(config.tables_size());
  for (int t = 0; t < config.tables_size(); ++t) {
    if (!config.tables(t).has_quantization()) continue;
    const auto& qc = config.tables(t).quantization();
    q.tables_[t] = QuantizationParams{qc.num_buckets(), qc.low(), qc.high()};
    q.any_ = true;
  }
  return q;
}

void TableQuantization::ApplyToGathered(std::span<const uint64_t> unique_keys,
                                        std::span<const int64_t> unique_offsets, int64_t begin,
                                        int64_t end, float* gathered) const {
  for (int64_t u = begin; u < end; ++u) {
    const QuantizationParams* params = table(base::RowKeyTable(unique_keys[u]));
    if (params == nullptr) continue;
    QuantizeDequantize(*params, std::span<float>(gathered + unique_offsets[u],
                                                 unique_offsets[u + 1] - unique_offsets[u]));
  }
}

}  // namespace lemrt::device
