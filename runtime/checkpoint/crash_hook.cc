#include "runtime/checkpoint/crash_hook.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "glog/logging.h"

namespace lemrt::checkpoint {
namespace {

[[noreturn]] void Die() {
  google::FlushLogFiles(google::GLOG_INFO);
  raise(SIGKILL);
  std::abort();
}

}  // namespace

CrashHook::CrashHook(int64_t step, int rank) {
  const char* hook = std::getenv(kCrashHookEnv);
  if (hook == nullptr) return;
  long long hook_step = -1;
  int hook_rank = -1;
  char point[64] = "mid_file";
  const int n = std::sscanf(hook, "%lld:%d:%63s", &hook_step, &hook_rank, point);
  if (n >= 2 && hook_step == step && hook_rank == rank) point_ = point;
}

void CrashHook::At(std::string_view point) const {
  if (point_.empty() || point_ != point) return;
  LOG(ERROR) << kCrashHookEnv << ": killing this rank at '" << point << "'";
  Die();
}

void CrashHook::MidFile(int file_index, int files_to_write, const std::string& path,
                        std::string_view bytes) const {
  if (point_ != "mid_file" || file_index != std::min(1, files_to_write - 1)) return;
  LOG(ERROR) << kCrashHookEnv << ": killing this rank while it writes '" << path << "'";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    (void)!write(fd, bytes.data(), bytes.size() / 2);
    fsync(fd);
  }
  Die();
}

bool CrashHook::AllowExchange() { return std::getenv(kRenameOnlyEnv) == nullptr; }

}  // namespace lemrt::checkpoint
