// A lemrt binary file (host/formats/binary_format.h) as records: memory-mapped, its
// header, column list and block index checked when opened, and each block's
// CRC-32C verified the first time a record of it is read (one bit per block
// remembers it). Thread-compatible.
#ifndef LEMRT_HOST_FORMATS_BINARY_FILE_H_
#define LEMRT_HOST_FORMATS_BINARY_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "host/formats/binary_format.h"
#include "host/input/record_file.h"
#include "proto/config.pb.h"

namespace lemrt::host {

class BinaryFile : public RecordFile {
 public:
  // Errors: NotFound / PermissionDenied naming the path; InvalidArgument
  // "'path' is not a lemrt binary file: ..." for a wrong magic, a version 1
  // file (convert again), a bad header or column/index checksum, or an index
  // that does not fit the file.
  static absl::StatusOr<std::unique_ptr<BinaryFile>> Open(const std::string& path);
  ~BinaryFile() override;

  const std::string& path() const override { return path_; }
  int64_t num_records() const override { return header_.num_records; }
  // Errors: DataLoss naming the file and block for a block whose checksum or
  // record table is wrong.
  absl::Status Read(int64_t first, int64_t count, RecordBatch* out) override;
  std::string Where(int64_t record) const override;
  // The columns the file stores.
  const config::InputSchema& columns() const { return columns_; }

 private:
  explicit BinaryFile(std::string path) : path_(std::move(path)) {}
  // Maps the file and checks it: MapBytes (open, size, mmap), ReadMeta (the
  // header fits the size, the column list's checksum, the columns parse),
  // ReadIndex (each block's index entry fits the file). Errors name the path.
  absl::Status Map();
  absl::Status MapBytes();
  absl::Status ReadMeta();
  absl::Status ReadIndex();
  // "'PATH' is not a lemrt binary file: WHAT."
  absl::Status NotBinary(const std::string& what) const;
  // Checks block `k` once: its checksum and record table.
  absl::Status VerifyBlock(int64_t k);

  const std::string path_;
  const char* data_ = nullptr;
  int64_t bytes_ = 0;
  BinaryHeader header_;
  config::InputSchema columns_;
  std::vector<BinaryBlock> blocks_;
  std::vector<uint8_t> verified_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_BINARY_FILE_H_
