#include "runtime/checkpoint/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace lemrt::checkpoint {
namespace {

std::string ReadAll(int fd) {
  std::string text;
  char buf[512];
  if (lseek(fd, 0, SEEK_SET) != 0) return text;
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0 && text.size() < 4096;) {
    text.append(buf, static_cast<size_t>(n));
  }
  return std::string(absl::StripAsciiWhitespace(text));
}

std::string HolderText() {
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  host[sizeof(host) - 1] = '\0';
  const std::time_t now = std::time(nullptr);
  std::tm tm;
  gmtime_r(&now, &tm);
  char when[64];
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return absl::StrFormat("pid %d on host %s since %s", getpid(), host, when);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DirLock>> DirLock::Acquire(const std::string& dir,
                                                          std::string* stale_holder) {
  stale_holder->clear();
  const std::string path = absl::StrCat(dir, "/", kLockName);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("checkpoint: cannot create the lock file '",
                                                   path, "'"));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = ReadAll(fd);
    close(fd);
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint directory '", dir, "' is in use by another job (",
          holder.empty() ? "holder unknown" : holder, "; lock file '", path,
          "'): two jobs saving into one directory would mix and delete each other's "
          "checkpoints. Wait for it to end, or choose another --checkpoint_dir."));
    }
    return absl::ErrnoToStatus(err, absl::StrCat("checkpoint: cannot lock '", path, "'"));
  }
  *stale_holder = ReadAll(fd);
  const std::string text = HolderText() + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, text.data(), text.size(), 0) !=
                                   static_cast<ssize_t>(text.size())) {
    const absl::Status st = absl::ErrnoToStatus(
        errno, absl::StrCat("checkpoint: cannot write the lock file '", path, "'"));
    close(fd);
    return st;
  }
  return std::unique_ptr<DirLock>(new DirLock(fd, path));
}

DirLock::~DirLock() {
  (void)!ftruncate(fd_, 0);
  close(fd_);  // releases the flock
}

}  // namespace lemrt::checkpoint
