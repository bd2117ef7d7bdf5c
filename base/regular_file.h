// Opening a user-named input file for reading, refusing anything that is not
// a regular file. A FIFO, socket or character device (/dev/zero) given as data
// would block in open() or never end, so it is refused with a sentence before
// it is read; the open itself never blocks (O_NONBLOCK, cleared once the file
// is known to be regular). Thread-safe.
#ifndef LEMRT_BASE_REGULAR_FILE_H_
#define LEMRT_BASE_REGULAR_FILE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace lemrt::base {

// "a directory", "a FIFO", "a socket", "a character device", "a block
// device" or "not a regular file", for messages.
const char* FileKind(mode_t mode);

// A read-only descriptor (O_CLOEXEC, blocking) of the regular file `path`;
// the caller owns and closes it. `what` names the file in messages ("input
// file", "vocabulary"). Errors: NotFound / PermissionDenied ("cannot open
// <what> 'path': <strerror>"); InvalidArgument "<what> 'path' is a FIFO, not
// a regular file; ..." for anything not a regular file.
absl::StatusOr<int> OpenRegularFile(const std::string& path, const std::string& what);

}  // namespace lemrt::base

#endif  // LEMRT_BASE_REGULAR_FILE_H_
