#include "runtime/observability/model_checksum.h"

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

uint64_t ModelRowHash(int table, int64_t global_row, const float* values, int dim) {
  const uint64_t key =
      base::HashKeys({static_cast<uint64_t>(table), static_cast<uint64_t>(global_row)});
  return HashFloats(std::span<const float>(values, dim), key);
}

std::string ModelChecksum(uint64_t row_hash_sum, std::span<const float> dense_params) {
  return absl::StrFormat("%016x", base::Mix64(row_hash_sum) ^ HashFloats(dense_params, 0xD5));
}

}  // namespace lemrt::runtime
