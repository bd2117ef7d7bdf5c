#include "runtime/checkpoint/durable_files.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace lemrt::checkpoint {
namespace {

absl::Status Errno(const std::string& what, const std::string& path,
                   std::string_view prefix = "checkpoint: ") {
  const int err = errno;  // before any allocation
  return absl::ErrnoToStatus(err,
                             absl::StrCat(std::string(prefix), "cannot ", what, " '", path, "'"));
}

// Writes all of `bytes` to `fd` and fsyncs it; errors name `path`.
absl::Status WriteAndSync(int fd, const std::string& path, std::string_view bytes,
                          std::string_view prefix) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write", path, prefix);
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return Errno("fsync", path, prefix);
  return absl::OkStatus();
}

// SyncDir with errors that start with `prefix`.
absl::Status SyncDirNamed(const std::string& dir, std::string_view prefix) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open directory", dir, prefix);
  const int rc = fsync(fd);
  close(fd);
  if (rc != 0) return Errno("fsync directory", dir, prefix);
  return absl::OkStatus();
}

int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  return type == FTW_DP ? rmdir(path) : unlink(path);
}

}  // namespace

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool PathExists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

absl::Status WriteFileDurably(const std::string& path, std::string_view bytes,
                              std::string_view prefix) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("create", path, prefix);
  absl::Status st = WriteAndSync(fd, path, bytes, prefix);
  if (close(fd) != 0 && st.ok()) st = Errno("close", path, prefix);
  if (!st.ok()) unlink(path.c_str());
  return st;
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes,
                                 std::string_view prefix) {
  const std::string tmp = path + ".tmp";
  absl::Status st = WriteFileDurably(tmp, bytes, prefix);
  if (!st.ok()) return st;
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    st = absl::ErrnoToStatus(
        err, absl::StrCat(std::string(prefix), "cannot rename '", tmp, "' to '", path, "'"));
    unlink(tmp.c_str());
    return st;
  }
  return SyncDirNamed(DirOf(path), prefix);
}

absl::Status SyncDir(const std::string& dir) { return SyncDirNamed(dir, "checkpoint: "); }

absl::Status MakeDirs(const std::string& path, std::string_view prefix) {
  if (path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(prefix), "the directory name is empty."));
  }
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos < path.size() && path[pos] != '/') continue;
    const std::string parent = path.substr(0, pos);
    if (mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) {
      return Errno("create directory", parent, prefix);
    }
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(prefix), "'", path, "' exists and is not a directory."));
  }
  return absl::OkStatus();
}

absl::Status RemoveTree(const std::string& path) {
  if (!PathExists(path)) return absl::OkStatus();
  // Depth first, links not followed; 16 descriptors at most.
  if (nftw(path.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS) != 0) return Errno("remove", path);
  return absl::OkStatus();
}

absl::Status RenameDir(const std::string& from, const std::string& to) {
  if (rename(from.c_str(), to.c_str()) != 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("checkpoint: cannot rename '", from, "' to '", to, "'"));
  }
  return absl::OkStatus();
}

absl::Status ExchangeDirs(const std::string& a, const std::string& b) {
  if (renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) {
    return absl::OkStatus();
  }
  if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
    return absl::UnimplementedError(
        absl::StrCat("checkpoint: the file system of '", a, "' cannot exchange directories"));
  }
  return absl::ErrnoToStatus(
      errno, absl::StrCat("checkpoint: cannot exchange '", a, "' with '", b, "'"));
}

}  // namespace lemrt::checkpoint
