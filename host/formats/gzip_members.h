// One pass over a possibly gzip-compressed file that checks every gzip
// member as it decompresses. zlib's gzread reads concatenated members, but
// takes bytes after a member that do not start a new one (a member whose
// header is damaged) as trailing garbage and ends there without an error,
// so the records in them would be dropped silently. GzipReader names the
// file and the byte offset of any damage instead; a file indexed through it
// is decompressed once when opened. Thread-compatible.
#ifndef LEMRT_HOST_FORMATS_GZIP_MEMBERS_H_
#define LEMRT_HOST_FORMATS_GZIP_MEMBERS_H_

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lemrt::host {

class GzipReader {
 public:
  // Opens `path` (a regular file: base/regular_file.h). A file that does not
  // start with the gzip magic bytes is read as it is.
  static absl::StatusOr<std::unique_ptr<GzipReader>> Open(const std::string& path);
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Reads the next bytes of the file's content (decompressed) into `out`,
  // up to `n`: fewer only at the end (0 there). Errors: DataLoss "'path':
  // gzip member N (from byte B): <what> at byte C ..." for a damaged member
  // header or data, bytes after the last member that are not a member, or a
  // member cut short; read errors.
  absl::StatusOr<size_t> Read(void* out, size_t n);

  bool compressed() const { return compressed_; }
  // Where the bytes read so far end, for messages: "" for a file read as it
  // is, else " (gzip member 2, compressed bytes up to 17520)": the member
  // and the compressed bytes inflate took to produce them (found by reading
  // the file again up to there).
  std::string Position() const;

 private:
  GzipReader(std::string path, int fd);
  // Decompresses (or reads) into `out` directly, unbuffered.
  absl::StatusOr<size_t> ReadDirect(char* out, size_t n);
  absl::StatusOr<size_t> ReadPlain(char* out, size_t n);
  absl::StatusOr<size_t> Inflate(char* out, size_t n);
  // Reads the next compressed bytes into in_: false at the end of the file.
  absl::StatusOr<bool> Refill();
  int64_t Offset() const { return member_start_ + static_cast<int64_t>(zs_.total_in); }
  absl::Status Damaged(int rc) const;
  // `error` at once when no byte came before it, else `done` now and
  // `error` from the next Read: the bytes before the damage are read first,
  // so a reader of records names the first damaged record (the gzip check
  // value at a member's end fails only after all of its bytes).
  absl::StatusOr<size_t> Failed(size_t done, absl::Status error);

  const std::string path_;
  const int fd_;
  bool compressed_ = false;
  bool initialised_ = false;  // zs_ holds an inflate state
  bool at_end_ = false;
  std::vector<unsigned char> in_;
  // Read's buffer of content: [out_pos_, out_end_) not yet returned (inflate
  // makes bytes far faster in large runs than in a record's few bytes).
  std::vector<char> out_;
  size_t out_pos_ = 0;
  size_t out_end_ = 0;
  int64_t content_offset_ = 0;  // bytes Read has returned
  absl::Status pending_;        // the damage after the bytes in out_ (Failed)
  z_stream zs_ = {};
  bool in_member_ = false;    // bytes of a member seen and its end not yet
  int member_ = 0;            // complete members so far
  int64_t member_start_ = 0;  // byte offset of the current member
  int64_t size_ = -1;         // of the file, bytes
};

// OK when `path` is not compressed or is one or more complete, intact gzip
// members; else GzipReader::Read's errors. Reads the whole file once.
absl::Status CheckGzipMembers(const std::string& path);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_GZIP_MEMBERS_H_
