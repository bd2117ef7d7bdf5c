#include "device/sparsecore/debug_checks.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"

namespace lemrt::device {
namespace {

// A NaN with a recognisable payload: no computation produces it by chance.
float GuardValue() {
  const uint32_t bits = 0x7FBADBADu;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

bool IsGuard(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits == 0x7FBADBADu;
}

}  // namespace

void PlaceGuards(int64_t payload, std::vector<float>* buf) {
  buf->resize(payload + 2 * kGuardFloats);
  const float g = GuardValue();
  for (int64_t i = 0; i < kGuardFloats; ++i) {
    (*buf)[i] = g;
    (*buf)[kGuardFloats + payload + i] = g;
  }
}

absl::Status VerifyGuards(const std::vector<float>& buf, std::string_view buffer_name,
                          std::string_view where) {
  const int64_t payload = static_cast<int64_t>(buf.size()) - 2 * kGuardFloats;
  for (int64_t i = 0; i < kGuardFloats; ++i) {
    if (!IsGuard(buf[i])) {
      return absl::InternalError(absl::StrFormat(
          "buffer sanitizer: %s: the guard words before staging buffer '%s' were overwritten "
          "(word %d of %d)",
          where, buffer_name, i, kGuardFloats));
    }
    if (!IsGuard(buf[kGuardFloats + payload + i])) {
      return absl::InternalError(absl::StrFormat(
          "buffer sanitizer: %s: the guard words after staging buffer '%s' (%d floats) were "
          "overwritten (word %d of %d)",
          where, buffer_name, payload, i, kGuardFloats));
    }
  }
  return absl::OkStatus();
}

int64_t FirstNonFinite(std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace lemrt::device
