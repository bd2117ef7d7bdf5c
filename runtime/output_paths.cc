#include "runtime/output_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace lemrt::runtime {
namespace {

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status Cannot(const std::string& flag, const std::string& path, const std::string& why) {
  return absl::FailedPreconditionError(
      absl::StrCat(flag, " '", path, "' cannot be written: ", why, "."));
}

}  // namespace

absl::Status CheckOutputFile(const std::string& path, const std::string& flag) {
  if (path.empty()) return absl::OkStatus();
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Cannot(flag, path, "it is a directory");
    if (!S_ISREG(st.st_mode)) return Cannot(flag, path, "it is not a regular file");
    const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return Cannot(flag, path, std::strerror(errno));
    close(fd);
    return absl::OkStatus();
  }
  const std::string dir = DirOf(path);
  if (stat(dir.c_str(), &st) != 0) {
    return Cannot(flag, path, absl::StrCat("its directory '", dir, "' does not exist"));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Cannot(flag, path, absl::StrCat("'", dir, "' is not a directory"));
  }
  // The writers create a temporary beside the file and rename it: the
  // directory must take new files.
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Cannot(flag, path, std::strerror(errno));
  close(fd);
  unlink(path.c_str());
  return absl::OkStatus();
}

absl::Status CheckOutputPaths(const config::RunConfig& config, const std::string& summary_json,
                              Communicator& comm) {
  absl::Status st;
  if (comm.rank() == 0) {
    const config::ObservabilityConfig& o = config.observability();
    st = CheckOutputFile(summary_json, "--summary_json");
    if (st.ok() && o.has_trace_json()) st = CheckOutputFile(o.trace_json(), "--trace_json");
    if (st.ok() && o.has_metrics_csv()) st = CheckOutputFile(o.metrics_csv(), "--metrics_csv");
  }
  return AgreeOnStatus(comm, st);
}

}  // namespace lemrt::runtime
