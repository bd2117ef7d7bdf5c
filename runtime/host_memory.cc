#include "runtime/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <new>

#include "absl/strings/str_format.h"

namespace lemrt::runtime {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// MemAvailable in bytes, or -1.
int64_t MemAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return -1;
}

// Fields of /proc/self/statm (pages): 0 = virtual size, 5 = data + stack.
int64_t StatmBytes(int field) {
  std::ifstream in("/proc/self/statm");
  int64_t value = 0;
  for (int i = 0; i <= field; ++i) {
    if (!(in >> value)) return 0;
  }
  return value * sysconf(_SC_PAGESIZE);
}

void Consider(int64_t bytes, const char* what, HostMemory* out) {
  if (bytes < 0) return;
  if (out->available_bytes < 0 || bytes < out->available_bytes) {
    out->available_bytes = bytes;
    out->limited_by = what;
  }
}

// The headroom under a resource limit, or -1 when unlimited.
int64_t Headroom(int resource, int64_t used) {
  rlimit limit;
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return -1;
  return std::max<int64_t>(0, static_cast<int64_t>(limit.rlim_cur) - used);
}

// The program named in the out-of-memory sentence (set once, before threads).
const char*& ProgramName() {
  static const char* name = "lemrt";
  return name;
}

[[noreturn]] void OnTerminate() {
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr,
                   "%s: error: out of host memory: an allocation failed (std::bad_alloc); the "
                   "model's tables and buffers need more memory than this host or its limits "
                   "(ulimit -v) allow: use smaller tables or batches, or more hosts\n",
                   ProgramName());
      std::fflush(stderr);
      _exit(1);
    } catch (...) {
    }
  }
  std::fprintf(stderr, "%s: error: terminated by an uncaught exception\n", ProgramName());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

HostMemory AvailableHostMemory() {
  HostMemory out;
  Consider(MemAvailableBytes(), "MemAvailable in /proc/meminfo", &out);
  Consider(Headroom(RLIMIT_AS, StatmBytes(0)), "the address-space limit (ulimit -v, RLIMIT_AS)",
           &out);
  Consider(Headroom(RLIMIT_DATA, StatmBytes(5)), "the data-size limit (ulimit -d, RLIMIT_DATA)",
           &out);
  return out;
}

absl::Status CheckHostMemory(int64_t needed_bytes, const HostMemory& available) {
  if (available.available_bytes < 0 || needed_bytes <= available.available_bytes) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "the model needs %d bytes (%.1f MiB) of host memory per rank (its emulated HBM: tables, "
      "optimizer slots and buffers, from the memory plan), but this rank can allocate %d bytes "
      "(%.1f MiB), bounded by %s; use smaller tables or more ranks on more hosts",
      needed_bytes, needed_bytes / kMiB, available.available_bytes,
      available.available_bytes / kMiB, available.limited_by));
}

void InstallOutOfMemoryHandler(const char* program) {
  ProgramName() = program;
  std::set_terminate(OnTerminate);
}

}  // namespace lemrt::runtime
