// Writes a 2-D float32 array as a NumPy .npy file (format version 1.0,
// little-endian '<f4', C order), so a checkpoint's table can be read with
// numpy.load, and reads such a file back (lemrt_ckpt import).
// Thread-compatible.
//
//   "\x93NUMPY" 0x01 0x00 | uint16 header length | header text padded with
//   spaces to a multiple of 64 bytes, ending in '\n' | rows x cols floats
#ifndef LEMRT_RUNTIME_CHECKPOINT_NPY_H_
#define LEMRT_RUNTIME_CHECKPOINT_NPY_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lemrt::checkpoint {

// The .npy header for a [rows x cols] float32 array.
std::string NpyHeader(int64_t rows, int64_t cols);

// Writes `values` (rows x cols floats, row-major) to `path` atomically.
// Precondition: values.size() == rows * cols. Errors name the file and the
// OS error: "cannot write '…/p.npy.tmp': No space left on device".
absl::Status WriteNpy(const std::string& path, int64_t rows, int64_t cols,
                      std::span<const float> values);

// A 2-D float32 array read from a .npy file.
struct NpyArray {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<float> values;  // rows x cols, row-major
};

// Reads a 2-D little-endian float32 C-order .npy file (versions 1.0 and 2.0,
// as numpy.save and WriteNpy write it). InvalidArgument sentences naming
// the file and what it holds against what is read: another dtype ("has
// dtype '<f8', expected '<f4' (float32)"), Fortran order, a shape that is
// not 2-D, a size that does not match the header; NotFound when missing;
// InvalidArgument "… is a directory, not a regular file; …" for anything not
// a regular file (base/regular_file.h: a FIFO or /dev/zero is refused, never
// read). Reads the header, then only the data bytes its shape needs.
absl::StatusOr<NpyArray> ReadNpy(const std::string& path);

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_NPY_H_
