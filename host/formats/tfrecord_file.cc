#include "host/formats/tfrecord_file.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/crc32c.h"
#include "base/regular_file.h"
#include "base/status_macros.h"
#include "host/formats/gzip_members.h"
#include "glog/logging.h"

namespace lemrt::host {
namespace {

gzFile Gz(void* f) { return static_cast<gzFile>(f); }

uint32_t MaskedCrc(const void* data, size_t n) { return base::MaskCrc32c(base::Crc32c(data, n)); }

// Reads `n` bytes, fewer only at the end of the file.
absl::StatusOr<size_t> ReadFull(GzipReader& in, char* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    LEMRT_ASSIGN_OR_RETURN(const size_t got, in.Read(out + done, n - done));
    if (got == 0) break;
    done += got;
  }
  return done;
}

}  // namespace

TfRecordFile::~TfRecordFile() {
  if (file_ != nullptr) gzclose(Gz(file_));
}

absl::StatusOr<std::unique_ptr<TfRecordFile>> TfRecordFile::Open(const std::string& path) {
  // A FIFO or device is refused, never blocked on.
  LEMRT_ASSIGN_OR_RETURN(const int fd, base::OpenRegularFile(path, "input file"));
  auto file = std::unique_ptr<TfRecordFile>(new TfRecordFile(path));
  file->file_ = gzdopen(fd, "rb");
  if (file->file_ == nullptr) {
    close(fd);
    return absl::ResourceExhaustedError(absl::StrCat("cannot open '", path, "': out of memory"));
  }
  gzbuffer(Gz(file->file_), 1 << 20);
  LEMRT_RETURN_IF_ERROR(file->Index());
  return file;
}

absl::Status TfRecordFile::ReadExactly(void* out, size_t n, int64_t record, const char* what) {
  size_t done = 0;
  while (done < n) {
    const int want = static_cast<int>(std::min<size_t>(n - done, 1 << 30));
    const int got = gzread(Gz(file_), static_cast<char*>(out) + done, want);
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(Gz(file_), &code);
      return absl::DataLossError(absl::StrFormat("'%s', record %d: read error (%s)", path_,
                                                 record + 1, message));
    }
    if (got == 0) {
      return absl::DataLossError(absl::StrFormat(
          "'%s', record %d: the file ends inside the record's %s (truncated?)", path_, record + 1,
          what));
    }
    done += static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

absl::Status TfRecordFile::CheckHeader(const char* header, int64_t record,
                                       uint64_t* length) const {
  uint32_t crc;
  std::memcpy(length, header, 8);
  std::memcpy(&crc, header + 8, 4);
  if (MaskedCrc(header, 8) != crc) {
    return absl::DataLossError(absl::StrFormat(
        "'%s', record %d: the length fails its CRC-32C checksum: the file is corrupt or not a "
        "TFRecord file",
        path_, record + 1));
  }
  if (*length > kMaxRecordBytes) {
    return absl::DataLossError(absl::StrFormat("'%s', record %d: a record of %d bytes is too large",
                                               path_, record + 1, *length));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> TfRecordFile::ReadHeader(int64_t record, uint64_t* length) {
  char header[12];
  const int got = gzread(Gz(file_), header, 1);
  if (got == 0) return false;  // a clean end between records
  if (got < 0) {
    int code = 0;
    return absl::DataLossError(absl::StrFormat("'%s', record %d: read error (%s)", path_,
                                               record + 1, gzerror(Gz(file_), &code)));
  }
  LEMRT_RETURN_IF_ERROR(ReadExactly(header + 1, 11, record, "length"));
  LEMRT_RETURN_IF_ERROR(CheckHeader(header, record, length));
  return true;
}

absl::Status TfRecordFile::Index() {
  // One pass that decompresses and checks every gzip member (damage between
  // members would end gzread early without an error) and every record's
  // framing and checksums, so that a corrupt or truncated file fails here,
  // naming its record, rather than in the middle of training.
  LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<GzipReader> in, GzipReader::Open(path_));
  compressed_ = in->compressed();
  index_.clear();
  int64_t offset = 0;
  const auto cut_short = [this](int64_t record, const char* what) {
    return absl::DataLossError(absl::StrFormat(
        "'%s', record %d: the file ends inside the record's %s (truncated?)", path_, record + 1,
        what));
  };
  for (int64_t record = 0;; ++record) {
    if (record % kIndexStride == 0) index_.push_back(offset);
    char header[12];
    LEMRT_ASSIGN_OR_RETURN(const size_t got, ReadFull(*in, header, sizeof(header)));
    if (got == 0) {  // a clean end between records
      num_records_ = record;
      break;
    }
    if (got < sizeof(header)) return cut_short(record, "length");
    uint64_t length = 0;
    if (absl::Status st = CheckHeader(header, record, &length); !st.ok()) {
      return absl::Status(st.code(), absl::StrCat(st.message(), in->Position()));
    }
    scratch_.resize(length + 4);  // the data and its checksum
    LEMRT_ASSIGN_OR_RETURN(const size_t data_got, ReadFull(*in, scratch_.data(), length + 4));
    if (data_got < length + 4) {
      return cut_short(record, data_got < length ? "data" : "data checksum");
    }
    uint32_t crc;
    std::memcpy(&crc, scratch_.data() + length, 4);
    if (MaskedCrc(scratch_.data(), length) != crc) {
      return absl::DataLossError(absl::StrFormat(
          "'%s', record %d: the data fails its CRC-32C checksum: the file is corrupt%s", path_,
          record + 1, in->Position()));
    }
    offset += 12 + static_cast<int64_t>(length) + 4;
  }
  std::vector<char>().swap(scratch_);
  index_.resize((num_records_ + kIndexStride - 1) / kIndexStride);
  next_record_ = -1;
  return absl::OkStatus();
}

absl::Status TfRecordFile::Seek(int64_t record) {
  const int64_t entry = record / kIndexStride;
  if (gzseek(Gz(file_), static_cast<z_off_t>(index_[entry]), SEEK_SET) < 0) {
    return absl::DataLossError(absl::StrCat("cannot seek in '", path_, "'."));
  }
  next_record_ = entry * kIndexStride;
  while (next_record_ < record) {
    uint64_t length = 0;
    LEMRT_ASSIGN_OR_RETURN(const bool more, ReadHeader(next_record_, &length));
    if (!more || gzseek(Gz(file_), static_cast<z_off_t>(length + 4), SEEK_CUR) < 0) {
      return absl::DataLossError(absl::StrCat("'", path_, "' changed while being read."));
    }
    ++next_record_;
  }
  return absl::OkStatus();
}

absl::Status TfRecordFile::Read(int64_t first, int64_t count, RecordBatch* out) {
  CHECK(first >= 0 && count >= 0 && first + count <= num_records_);
  if (count == 0) return absl::OkStatus();
  if (first != next_record_) LEMRT_RETURN_IF_ERROR(Seek(first));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t record = next_record_;
    uint64_t length = 0;
    LEMRT_ASSIGN_OR_RETURN(const bool more, ReadHeader(record, &length));
    if (!more) return absl::DataLossError(absl::StrCat("'", path_, "' changed while being read."));
    char* data = out->AppendUninitialized(length);
    LEMRT_RETURN_IF_ERROR(ReadExactly(data, length, record, "data"));
    uint32_t crc;
    LEMRT_RETURN_IF_ERROR(ReadExactly(&crc, 4, record, "data checksum"));
    if (MaskedCrc(data, length) != crc) {
      next_record_ = -1;
      return absl::DataLossError(absl::StrFormat(
          "'%s', record %d: the data fails its CRC-32C checksum: the file is corrupt", path_,
          record + 1));
    }
    ++next_record_;
  }
  return absl::OkStatus();
}

std::string TfRecordFile::Where(int64_t record) const {
  return absl::StrCat(path_, ", record ", record + 1);
}

}  // namespace lemrt::host
