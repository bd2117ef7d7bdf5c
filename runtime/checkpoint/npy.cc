#include "runtime/checkpoint/npy.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/regular_file.h"
#include "base/text_file.h"
#include "glog/logging.h"
#include "runtime/checkpoint/durable_files.h"

namespace lemrt::checkpoint {

std::string NpyHeader(int64_t rows, int64_t cols) {
  std::string dict =
      absl::StrFormat("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols);
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

namespace {

// The text after "'key':" in the header dict, up to the next `end`
// character (excluded), stripped; nullopt when the key is absent.
std::optional<std::string> DictValue(const std::string& dict, const std::string& key, char end) {
  const std::string quoted = absl::StrCat("'", key, "':");
  const size_t at = dict.find(quoted);
  if (at == std::string::npos) return std::nullopt;
  const size_t begin = at + quoted.size();
  const size_t stop = dict.find(end, begin + 1);
  if (stop == std::string::npos) return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(dict.substr(begin, stop - begin)));
}

// Parses "(R, C" (the shape's text before ')') into rows and cols.
bool ParseShape(const std::string& text, int64_t* rows, int64_t* cols) {
  if (text.empty() || text[0] != '(') return false;
  std::vector<std::string> parts = absl::StrSplit(text.substr(1), ',', absl::SkipWhitespace());
  return parts.size() == 2 && absl::SimpleAtoi(parts[0], rows) &&
         absl::SimpleAtoi(parts[1], cols) && *rows >= 0 && *cols >= 0;
}

// The array in the bytes of the .npy file `path`.
absl::StatusOr<NpyArray> ParseNpy(const std::string& bytes, const std::string& path) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(".npy file '", path, "' ", what, "."));
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    return bad("is not a NumPy .npy file (its first bytes are not \"\\x93NUMPY\")");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const size_t len_bytes = major == 1 ? 2 : 4;
  if ((major != 1 && major != 2) || bytes.size() < 8 + len_bytes) {
    return bad(absl::StrFormat("has format version %d, expected 1 or 2", major));
  }
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) {
    header_len |= size_t{static_cast<unsigned char>(bytes[8 + i])} << (8 * i);
  }
  const size_t data_at = 8 + len_bytes + header_len;
  if (data_at > bytes.size()) return bad("is truncated inside its header");
  const std::string dict = bytes.substr(8 + len_bytes, header_len);
  const std::string descr = DictValue(dict, "descr", ',').value_or("(none)");
  if (descr != "'<f4'") {
    return bad(
        absl::StrFormat("has dtype %s, expected '<f4' (little-endian float32, as lemrt_ckpt "
                        "export writes)",
                        descr));
  }
  if (DictValue(dict, "fortran_order", ',').value_or("") != "False") {
    return bad("is not in C (row-major) order (fortran_order is not False)");
  }
  NpyArray a;
  const std::string shape = DictValue(dict, "shape", ')').value_or("(none)");
  if (!ParseShape(shape, &a.rows, &a.cols)) {
    return bad(absl::StrFormat("has shape %s), expected a 2-D shape (rows, cols)", shape));
  }
  // The shape's bytes without overflow, checked against the file's before
  // anything is allocated.
  int64_t needed = 0;
  if (__builtin_mul_overflow(a.rows, a.cols, &needed) ||
      __builtin_mul_overflow(needed, int64_t{4}, &needed)) {
    return bad(
        absl::StrFormat("has shape (%d, %d), more floats than a file can hold", a.rows, a.cols));
  }
  const int64_t data_bytes = static_cast<int64_t>(bytes.size() - data_at);
  if (needed > data_bytes) {
    return bad(absl::StrFormat("is truncated: shape (%d, %d) needs %d bytes of data, it has %d",
                               a.rows, a.cols, needed, data_bytes));
  }
  if (needed != data_bytes) {
    return bad(absl::StrFormat("has %d bytes of data, shape (%d, %d) needs %d", data_bytes, a.rows,
                               a.cols, needed));
  }
  a.values.resize(a.rows * a.cols);
  if (!a.values.empty()) std::memcpy(a.values.data(), bytes.data() + data_at, needed);
  return a;
}

}  // namespace

absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  // A regular file only (a directory, FIFO or /dev/zero is refused unread),
  // so reading it whole reads what is on disk, however large its header says
  // the array is.
  absl::StatusOr<int> fd = base::OpenRegularFile(path, ".npy file");
  if (absl::IsNotFound(fd.status())) {
    return absl::NotFoundError(absl::StrCat(".npy file '", path, "' is missing."));
  }
  if (!fd.ok()) return fd.status();
  absl::StatusOr<std::string> bytes =
      base::ReadToEnd(*fd, std::numeric_limits<int64_t>::max(), path, ".npy file");
  close(*fd);
  if (!bytes.ok()) return bytes.status();
  return ParseNpy(*bytes, path);
}

}  // namespace lemrt::checkpoint
