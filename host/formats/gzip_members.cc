#include "host/formats/gzip_members.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/regular_file.h"
#include "base/status_macros.h"

namespace lemrt::host {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;

}  // namespace

GzipReader::GzipReader(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

GzipReader::~GzipReader() {
  if (initialised_) inflateEnd(&zs_);
  close(fd_);
}

absl::StatusOr<std::unique_ptr<GzipReader>> GzipReader::Open(const std::string& path) {
  LEMRT_ASSIGN_OR_RETURN(const int fd, base::OpenRegularFile(path, "input file"));
  auto reader = std::unique_ptr<GzipReader>(new GzipReader(path, fd));
  unsigned char magic[2];
  reader->compressed_ = pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (!reader->compressed_) return reader;
  if (inflateInit2(&reader->zs_, 16 + MAX_WBITS) != Z_OK) {
    return absl::ResourceExhaustedError("cannot start zlib's inflate (out of memory?)");
  }
  reader->initialised_ = true;
  reader->in_.resize(kChunkBytes);
  struct stat st;
  reader->size_ = fstat(fd, &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
  return reader;
}

absl::StatusOr<size_t> GzipReader::Read(void* out, size_t n) {
  char* bytes = static_cast<char*>(out);
  size_t done = 0;
  while (done < n) {
    if (out_pos_ == out_end_) {
      // The damage comes after the bytes returned so far.
      if (!pending_.ok()) {
        if (done > 0) break;
        return pending_;
      }
      out_.resize(kChunkBytes);
      LEMRT_ASSIGN_OR_RETURN(out_end_, ReadDirect(out_.data(), out_.size()));
      out_pos_ = 0;
      if (out_end_ == 0) break;
    }
    const size_t take = std::min(n - done, out_end_ - out_pos_);
    std::memcpy(bytes + done, out_.data() + out_pos_, take);
    out_pos_ += take;
    done += take;
  }
  content_offset_ += static_cast<int64_t>(done);
  return done;
}

absl::StatusOr<size_t> GzipReader::ReadDirect(char* out, size_t n) {
  return compressed_ ? Inflate(out, n) : ReadPlain(out, n);
}

absl::StatusOr<size_t> GzipReader::ReadPlain(char* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = read(fd_, out + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return absl::DataLossError(
          absl::StrFormat("'%s': read error (%s)", path_, std::strerror(errno)));
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

absl::StatusOr<bool> GzipReader::Refill() {
  while (true) {
    const ssize_t got = read(fd_, in_.data(), in_.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return absl::DataLossError(absl::StrFormat("'%s': read error at byte %d (%s)", path_,
                                                 Offset(), std::strerror(errno)));
    }
    if (got == 0) return false;
    zs_.next_in = in_.data();
    zs_.avail_in = static_cast<uInt>(got);
    in_member_ = true;
    return true;
  }
}

absl::StatusOr<size_t> GzipReader::Inflate(char* out, size_t n) {
  size_t done = 0;
  while (done < n && !at_end_) {
    if (zs_.avail_in == 0) {
      LEMRT_ASSIGN_OR_RETURN(const bool more, Refill());
      if (!more) {
        at_end_ = true;
        if (in_member_ && Offset() > member_start_) {
          return Failed(done, absl::DataLossError(absl::StrFormat(
                                  "'%s': gzip member %d (from byte %d) is cut short at byte %d "
                                  "(the file is truncated)",
                                  path_, member_ + 1, member_start_, Offset())));
        }
        break;
      }
    }
    const size_t want = std::min<size_t>(n - done, size_t{1} << 30);
    zs_.next_out = reinterpret_cast<Bytef*>(out + done);
    zs_.avail_out = static_cast<uInt>(want);
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    done += want - zs_.avail_out;
    if (rc == Z_STREAM_END) {
      member_start_ += static_cast<int64_t>(zs_.total_in);
      ++member_;
      inflateReset(&zs_);
      in_member_ = zs_.avail_in > 0;
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      at_end_ = true;
      return Failed(done, Damaged(rc));
    }
  }
  return done;
}

absl::StatusOr<size_t> GzipReader::Failed(size_t done, absl::Status error) {
  if (done == 0) return error;
  pending_ = std::move(error);
  return done;
}

std::string GzipReader::Position() const {
  if (!compressed_) return "";
  // Read ahead (buffered), this reader is past the bytes returned: a second
  // one inflates exactly up to them.
  absl::StatusOr<std::unique_ptr<GzipReader>> again = Open(path_);
  if (!again.ok()) return "";
  std::vector<char> sink(kChunkBytes);
  for (int64_t left = content_offset_; left > 0;) {
    absl::StatusOr<size_t> got = (*again)->ReadDirect(
        sink.data(), static_cast<size_t>(std::min<int64_t>(left, kChunkBytes)));
    if (!got.ok() || *got == 0) return "";
    left -= static_cast<int64_t>(*got);
  }
  return absl::StrFormat(" (gzip member %d, compressed bytes up to %d)", (*again)->member_ + 1,
                         (*again)->Offset());
}

absl::Status GzipReader::Damaged(int rc) const {
  const char* why = zs_.msg != nullptr ? zs_.msg : zError(rc);
  if (member_ > 0 && zs_.total_in <= 10) {
    return absl::DataLossError(absl::StrFormat(
        "'%s': the %d bytes from byte %d on, after gzip member %d, are not a gzip member (%s): "
        "a damaged member header or trailing garbage, whose records cannot be read (zcat "
        "reports the same)",
        path_, size_ - member_start_, member_start_, member_, why));
  }
  return absl::DataLossError(absl::StrFormat(
      "'%s': gzip member %d (from byte %d) is damaged at about byte %d (%s); the records in "
      "and after it cannot be read",
      path_, member_ + 1, member_start_, Offset(), why));
}

absl::Status CheckGzipMembers(const std::string& path) {
  LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<GzipReader> reader, GzipReader::Open(path));
  std::vector<char> sink(kChunkBytes);
  while (true) {
    LEMRT_ASSIGN_OR_RETURN(const size_t got, reader->Read(sink.data(), sink.size()));
    if (got == 0) return absl::OkStatus();
  }
}

}  // namespace lemrt::host
