#include "host/formats/gzip_members.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/regular_file.h"
#include "base/status_macros.h"

namespace lemrt::host {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;

// Owns the descriptor and the inflate state.
class GzipWalk {
 public:
  GzipWalk(std::string path, int fd) : path_(std::move(path)), fd_(fd), in_(kChunkBytes),
                                       out_(kChunkBytes) {}
  ~GzipWalk() {
    if (initialised_) inflateEnd(&zs_);
    close(fd_);
  }

  absl::Status Run() {
    unsigned char magic[2];
    if (pread(fd_, magic, 2, 0) != 2 || magic[0] != 0x1f || magic[1] != 0x8b) {
      return absl::OkStatus();  // not gzip: read as is
    }
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) {
      return absl::ResourceExhaustedError("cannot start zlib's inflate (out of memory?)");
    }
    initialised_ = true;
    struct stat st;
    size_ = fstat(fd_, &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
    bool in_member = true;  // bytes of a member seen and its end not yet
    while (true) {
      if (zs_.avail_in == 0) {
        const ssize_t got = read(fd_, in_.data(), in_.size());
        if (got < 0) {
          return absl::DataLossError(absl::StrFormat("'%s': read error at byte %d", path_,
                                                     Offset()));
        }
        if (got == 0) break;
        zs_.next_in = in_.data();
        zs_.avail_in = static_cast<uInt>(got);
        in_member = true;
      }
      zs_.next_out = out_.data();
      zs_.avail_out = static_cast<uInt>(out_.size());
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_start_ += static_cast<int64_t>(zs_.total_in);
        ++member_;
        inflateReset(&zs_);
        in_member = zs_.avail_in > 0;
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) return Damaged(rc);
    }
    if (in_member && Offset() > member_start_) {
      return absl::DataLossError(absl::StrFormat(
          "'%s': gzip member %d (from byte %d) is cut short at byte %d (the file is truncated)",
          path_, member_ + 1, member_start_, Offset()));
    }
    return absl::OkStatus();
  }

 private:
  int64_t Offset() const { return member_start_ + static_cast<int64_t>(zs_.total_in); }

  absl::Status Damaged(int rc) const {
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

  const std::string path_;
  const int fd_;
  std::vector<unsigned char> in_, out_;
  z_stream zs_ = {};
  bool initialised_ = false;
  int member_ = 0;             // complete members so far
  int64_t member_start_ = 0;   // byte offset of the current member
  int64_t size_ = -1;          // of the file, bytes
};

}  // namespace

absl::Status CheckGzipMembers(const std::string& path) {
  LEMRT_ASSIGN_OR_RETURN(const int fd, base::OpenRegularFile(path, "input file"));
  GzipWalk walk(path, fd);
  return walk.Run();
}

}  // namespace lemrt::host
