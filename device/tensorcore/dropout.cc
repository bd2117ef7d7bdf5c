#include "device/tensorcore/dropout.h"

#include "base/random.h"

namespace lemrt::device {
namespace {

// Keeps dropout's masks apart from every other stream keyed by the seed.
constexpr uint64_t kDropoutTag = 0xd40f0a75ULL;

uint64_t RowKey(const DropoutKey& key, int layer, int64_t row) {
  return base::HashKeys({key.seed, kDropoutTag, static_cast<uint64_t>(key.step),
                         static_cast<uint64_t>(key.first_sample +
                                               (key.rows != nullptr ? key.rows[row] : row)),
                         static_cast<uint64_t>(layer)});
}

uint64_t Threshold(float p) { return static_cast<uint64_t>(static_cast<double>(p) * 0x1.0p32); }

bool Kept(uint64_t row_key, int unit, uint64_t threshold) {
  return (base::Mix64(row_key + base::CounterRng::kStep * (static_cast<uint64_t>(unit) + 1)) >>
          32) >= threshold;
}

}  // namespace

bool DropoutKeeps(const DropoutKey& key, int layer, int64_t row, int unit, float p) {
  return p <= 0.0f || Kept(RowKey(key, layer, row), unit, Threshold(p));
}

void ApplyDropout(const DropoutKey& key, int layer, float p, int64_t batch, int width, float* y) {
  if (p <= 0.0f) return;
  const uint64_t threshold = Threshold(p);
  const float scale = 1.0f / (1.0f - p);
  for (int64_t r = 0; r < batch; ++r) {
    const uint64_t row_key = RowKey(key, layer, r);
    float* row = y + r * width;
    for (int u = 0; u < width; ++u) row[u] = Kept(row_key, u, threshold) ? row[u] * scale : 0.0f;
  }
}

}  // namespace lemrt::device
