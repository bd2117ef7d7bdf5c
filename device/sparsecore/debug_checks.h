// The SparseCores' debug checks (reference section 12), each off by default
// and switched on by a sparse_core config field:
//   debug_check_nan:    a NaN or Inf in a partial sum (the activations the
//                       SparseCore produces), in an incoming gradient, or in
//                       an updated table row is an error naming the stage,
//                       table and step.
//   debug_check_bounds: every gather/scatter index into a shard or a staging
//                       buffer is checked; a violation is an error naming the
//                       buffer and index instead of a wild read or write.
//   debug_guard_words:  guard words around the staging buffers are verified
//                       after each stage; corruption names the buffer.
// Stateless helpers; thread-safe.
#ifndef LEMRT_DEVICE_SPARSECORE_DEBUG_CHECKS_H_
#define LEMRT_DEVICE_SPARSECORE_DEBUG_CHECKS_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "proto/config.pb.h"

namespace lemrt::device {

struct DebugChecks {
  bool nan = false;
  bool bounds = false;
  bool guard_words = false;
  static DebugChecks FromConfig(const config::SparseCoreConfig& sc) {
    return {sc.debug_check_nan(), sc.debug_check_bounds(), sc.debug_guard_words()};
  }
  bool any() const { return nan || bounds || guard_words; }
};

// Guard floats on each side of a staging buffer:
//   [kGuardFloats guards][payload floats][kGuardFloats guards]
inline constexpr int64_t kGuardFloats = 8;

// Sizes `buf` for `payload` floats between guards and writes the guards.
void PlaceGuards(int64_t payload, std::vector<float>* buf);

// OK when both guards of `buf` (laid out by PlaceGuards) are intact; else
// Internal naming the buffer, the side and the first overwritten word.
absl::Status VerifyGuards(const std::vector<float>& buf, std::string_view buffer_name,
                          std::string_view where);

// Index of the first NaN or Inf in `values`, or -1.
int64_t FirstNonFinite(std::span<const float> values);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_DEBUG_CHECKS_H_
