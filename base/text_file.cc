#include "base/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/regular_file.h"

namespace lemrt::base {

absl::StatusOr<std::string> ReadTextFile(const std::string& path, int64_t max_bytes,
                                         const std::string& what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", what, " '", path, "': ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", path, "' is ", FileKind(st.st_mode), ", not a regular file."));
  }
  if (st.st_size > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s '%s' has %d bytes, more than the %d bytes a %s may have.", what, path,
                        st.st_size, max_bytes, what));
  }
  // O_NONBLOCK: should the path become a FIFO after the stat, open and read
  // return at once instead of waiting for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", what, " '", path, "': ", std::strerror(errno)));
  }
  absl::StatusOr<std::string> text = ReadToEnd(fd, max_bytes, path, what);
  close(fd);
  return text;
}

absl::StatusOr<std::string> ReadToEnd(int fd, int64_t max_bytes, const std::string& path,
                                      const std::string& what) {
  std::string text;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::NotFoundError(
          absl::StrCat("cannot read ", what, " '", path, "': ", std::strerror(errno)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (static_cast<int64_t>(text.size()) > max_bytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s '%s' has more than the %d bytes a %s may have.", what, path, max_bytes, what));
    }
  }
  return text;
}

}  // namespace lemrt::base
