#include "runtime/checkpoint/npy.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "runtime/checkpoint/durable_files.h"

namespace lemrt::checkpoint {

std::string NpyHeader(int64_t rows, int64_t cols) {
  std::string dict = absl::StrFormat(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols);
  // Magic (6) + version (2) + length (2) + dict + padding + '\n' is a
  // multiple of 64 bytes.
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string header("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(dict.size());
  header.push_back(static_cast<char>(len & 0xff));
  header.push_back(static_cast<char>(len >> 8));
  return header + dict;
}

absl::Status WriteNpy(const std::string& path, int64_t rows, int64_t cols,
                      std::span<const float> values) {
  CHECK_EQ(static_cast<int64_t>(values.size()), rows * cols);
  std::string bytes = NpyHeader(rows, cols);
  const size_t header = bytes.size();
  bytes.resize(header + 4 * values.size());
  if (!values.empty()) std::memcpy(bytes.data() + header, values.data(), 4 * values.size());
  // A .npy file is an output (predictions, an exported table), not a
  // checkpoint: its errors say only what could not be written, as the
  // other outputs' do.
  return WriteFileAtomically(path, bytes, /*prefix=*/"");
}

}  // namespace lemrt::checkpoint
