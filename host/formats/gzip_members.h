// A check of a gzip file's members before its records are read. zlib's
// gzread reads concatenated members, but takes bytes after a member that do
// not start a new one (a member whose header is damaged) as trailing garbage
// and ends there without an error, so the records in them would be dropped
// silently. This walks every member with inflate and names the file and the
// byte offset of any damage. Thread-safe.
#ifndef LEMRT_HOST_FORMATS_GZIP_MEMBERS_H_
#define LEMRT_HOST_FORMATS_GZIP_MEMBERS_H_

#include <string>

#include "absl/status/status.h"

namespace lemrt::host {

// OK when `path` does not start with the gzip magic bytes (not compressed)
// or is one or more complete, intact gzip members. Else DataLoss "'path':
// gzip member N (from byte B): <what> at byte C ..." for a damaged member
// header or data, bytes after the last member that are not a member, or a
// member cut short. Reads the whole file once (decompressing it).
absl::Status CheckGzipMembers(const std::string& path);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_GZIP_MEMBERS_H_
