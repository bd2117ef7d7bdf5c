#include "host/formats/binary_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/crc32c.h"
#include "base/regular_file.h"
#include "base/status_macros.h"
#include "google/protobuf/text_format.h"

namespace lemrt::host {

BinaryFile::~BinaryFile() {
  if (data_ != nullptr) munmap(const_cast<char*>(data_), bytes_);
}

absl::StatusOr<std::unique_ptr<BinaryFile>> BinaryFile::Open(const std::string& path) {
  auto file = std::unique_ptr<BinaryFile>(new BinaryFile(path));
  LEMRT_RETURN_IF_ERROR(file->Map());
  return file;
}

absl::Status BinaryFile::NotBinary(const std::string& what) const {
  return absl::InvalidArgumentError(
      absl::StrCat("'", path_, "' is not a lemrt binary file: ", what, "."));
}

absl::Status BinaryFile::MapBytes() {
  // A FIFO or device is refused, never blocked on.
  LEMRT_ASSIGN_OR_RETURN(const int fd, base::OpenRegularFile(path_, "input file"));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return absl::ErrnoToStatus(err, absl::StrCat("cannot stat '", path_, "'"));
  }
  bytes_ = st.st_size;
  if (bytes_ < kBinaryHeaderBytes) {
    close(fd);
    return NotBinary(absl::StrFormat("it has %d bytes, less than the %d-byte header", bytes_,
                                     kBinaryHeaderBytes));
  }
  void* data = mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (data == MAP_FAILED) return absl::ErrnoToStatus(errno, absl::StrCat("cannot mmap '", path_, "'"));
  data_ = static_cast<const char*>(data);
  return absl::OkStatus();
}

absl::Status BinaryFile::ReadMeta() {
  auto header = DecodeBinaryHeader(std::string_view(data_, kBinaryHeaderBytes));
  if (!header.ok()) return NotBinary(std::string(header.status().message()));
  header_ = *header;
  const BinaryHeader& h = header_;
  // Compared by division: corrupt counts times entry sizes can overflow.
  const int64_t meta_end = h.index_offset;
  if (h.num_records < 0 || h.num_blocks < 0 || h.records_per_block == 0 ||
      h.columns_offset < kBinaryHeaderBytes || h.columns_bytes < 0 ||
      h.columns_offset > bytes_ - h.columns_bytes || meta_end != h.columns_offset + h.columns_bytes ||
      (bytes_ - meta_end) / kBinaryIndexEntryBytes != h.num_blocks ||
      (bytes_ - meta_end) % kBinaryIndexEntryBytes != 0 ||
      h.num_blocks != (h.num_records + h.records_per_block - 1) / h.records_per_block) {
    return NotBinary(absl::StrFormat(
        "its header (%d records in %d blocks, columns at %d, index at %d) does not fit its %d "
        "bytes (truncated?)",
        h.num_records, h.num_blocks, h.columns_offset, h.index_offset, bytes_));
  }
  const uint32_t crc = base::Crc32c(data_ + h.columns_offset, bytes_ - h.columns_offset);
  if (crc != h.meta_crc) {
    return NotBinary(absl::StrFormat("its column list and block index fail their CRC-32C checksum "
                                     "(stored %08x, computed %08x): the file is corrupt",
                                     h.meta_crc, crc));
  }
  const std::string text(data_ + h.columns_offset, h.columns_bytes);
  if (!google::protobuf::TextFormat::ParseFromString(text, &columns_)) {
    return NotBinary("its column list does not parse");
  }
  return absl::OkStatus();
}

absl::Status BinaryFile::ReadIndex() {
  const BinaryHeader& h = header_;
  const int64_t meta_end = h.index_offset;
  int64_t expect_offset = kBinaryHeaderBytes;
  for (int64_t k = 0; k < h.num_blocks; ++k) {
    const BinaryBlock b = DecodeBinaryBlock(data_ + meta_end + k * kBinaryIndexEntryBytes);
    const int64_t records =
        std::min<int64_t>(h.records_per_block, h.num_records - k * h.records_per_block);
    if (b.offset != expect_offset || b.bytes < 4 * int64_t{b.records} ||
        b.bytes > h.columns_offset - b.offset || b.records != records) {
      return NotBinary(absl::StrFormat("the index entry of block %d does not fit the file", k));
    }
    expect_offset += b.bytes;
    blocks_.push_back(b);
  }
  return absl::OkStatus();
}

absl::Status BinaryFile::Map() {
  LEMRT_RETURN_IF_ERROR(MapBytes());
  LEMRT_RETURN_IF_ERROR(ReadMeta());
  LEMRT_RETURN_IF_ERROR(ReadIndex());
  verified_.assign(header_.num_blocks, 0);
  madvise(const_cast<char*>(data_), bytes_, MADV_WILLNEED);
  return absl::OkStatus();
}

absl::Status BinaryFile::VerifyBlock(int64_t k) {
  const BinaryBlock& b = blocks_[k];
  const char* p = data_ + b.offset;
  auto corrupt = [&](const std::string& what) {
    const int64_t first = k * header_.records_per_block + 1;
    return absl::DataLossError(absl::StrFormat(
        "'%s': block %d (records %d-%d) %s: the file is corrupt; convert its source again with "
        "lemrt_convert",
        path_, k, first, first + b.records - 1, what));
  };
  const uint32_t crc = base::Crc32c(p, b.bytes);
  if (crc != b.crc) {
    return corrupt(absl::StrFormat("fails its CRC-32C checksum (stored %08x, computed %08x)",
                                   b.crc, crc));
  }
  const int64_t area = b.bytes - 4 * int64_t{b.records};
  uint32_t last = 0;
  for (uint32_t i = 0; i < b.records; ++i) {
    uint32_t end;
    std::memcpy(&end, p + 4 * i, 4);
    if (end < last || end > area) return corrupt("has a record table out of order");
    last = end;
  }
  verified_[k] = 1;
  return absl::OkStatus();
}

absl::Status BinaryFile::Read(int64_t first, int64_t count, RecordBatch* out) {
  const int64_t per_block = header_.records_per_block;
  for (int64_t r = first; r < first + count; ++r) {
    const int64_t k = r / per_block;
    if (!verified_[k]) LEMRT_RETURN_IF_ERROR(VerifyBlock(k));
    const BinaryBlock& b = blocks_[k];
    const char* table = data_ + b.offset;
    const char* area = table + 4 * int64_t{b.records};
    const int64_t i = r - k * per_block;
    uint32_t begin = 0, end;
    if (i > 0) std::memcpy(&begin, table + 4 * (i - 1), 4);
    std::memcpy(&end, table + 4 * i, 4);
    out->Append(std::string_view(area + begin, end - begin));
  }
  return absl::OkStatus();
}

std::string BinaryFile::Where(int64_t record) const {
  return absl::StrCat(path_, ", record ", record + 1);
}

}  // namespace lemrt::host
