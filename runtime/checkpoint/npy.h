// Writes a 2-D float32 array as a NumPy .npy file (format version 1.0,
// little-endian '<f4', C order), so a checkpoint's table can be read with
// numpy.load. Thread-compatible.
//
//   "\x93NUMPY" 0x01 0x00 | uint16 header length | header text padded with
//   spaces to a multiple of 64 bytes, ending in '\n' | rows x cols floats
#ifndef LEMRT_RUNTIME_CHECKPOINT_NPY_H_
#define LEMRT_RUNTIME_CHECKPOINT_NPY_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace lemrt::checkpoint {

// The .npy header for a [rows x cols] float32 array.
std::string NpyHeader(int64_t rows, int64_t cols);

// Writes `values` (rows x cols floats, row-major) to `path` atomically.
// Precondition: values.size() == rows * cols. Errors name the file and the
// OS error: "cannot write '…/p.npy.tmp': No space left on device".
absl::Status WriteNpy(const std::string& path, int64_t rows, int64_t cols,
                      std::span<const float> values);

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_NPY_H_
