// A TFRecord file as records (docs/data.md "TFRecord"): each record is
//   uint64 length | uint32 masked_crc32c(length) | data[length] |
//   uint32 masked_crc32c(data)
// (little-endian; masked as in base/crc32c.h). gzip-compressed files are
// recognised by their magic bytes and decompressed on the fly (zlib).
// Opening reads the file once (decompressing it, checking every gzip member,
// record length and data checksum: host/formats/gzip_members.h) and keeps the offset
// of every kIndexStride-th record; a read verifies each record's data
// checksum again. A corrupt record is a DataLoss error naming the
// file and the record. Thread-compatible.
#ifndef LEMRT_HOST_FORMATS_TFRECORD_FILE_H_
#define LEMRT_HOST_FORMATS_TFRECORD_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "host/input/record_file.h"

namespace lemrt::host {

class TfRecordFile : public RecordFile {
 public:
  static constexpr int64_t kIndexStride = 1024;
  // Records larger than this are taken for corrupt framing.
  static constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 30;

  // Errors: NotFound / PermissionDenied naming the path; DataLoss naming
  // the file and record for a bad length checksum or a file that ends
  // inside a record.
  static absl::StatusOr<std::unique_ptr<TfRecordFile>> Open(const std::string& path);
  ~TfRecordFile() override;

  const std::string& path() const override { return path_; }
  int64_t num_records() const override { return static_cast<int64_t>(num_records_); }
  absl::Status Read(int64_t first, int64_t count, RecordBatch* out) override;
  std::string Where(int64_t record) const override;
  bool compressed() const { return compressed_; }

 private:
  explicit TfRecordFile(std::string path) : path_(std::move(path)) {}
  absl::Status Index();
  absl::Status Seek(int64_t record);
  // Reads the header of the record at the current position: false at a
  // clean end of file.
  absl::StatusOr<bool> ReadHeader(int64_t record, uint64_t* length);
  // Checks record `record`'s 12-byte header (length, its checksum) and
  // sets `length`.
  absl::Status CheckHeader(const char* header, int64_t record, uint64_t* length) const;
  absl::Status ReadExactly(void* out, size_t n, int64_t record, const char* what);

  const std::string path_;
  void* file_ = nullptr;  // gzFile
  bool compressed_ = false;
  int64_t num_records_ = 0;
  std::vector<int64_t> index_;  // (uncompressed) offset of record k * kIndexStride
  int64_t next_record_ = -1;
  std::vector<char> scratch_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_TFRECORD_FILE_H_
