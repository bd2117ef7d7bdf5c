#include "runtime/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <limits>
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
  if (out->rank_bytes < 0 || bytes < out->rank_bytes) {
    out->rank_bytes = bytes;
    out->rank_limited_by = what;
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
  out.host_bytes = MemAvailableBytes();
  // Test hook (tests/fault_hostile.sh): the host's available bytes, so that
  // the check of all of a host's ranks is tested without filling the host.
  if (const char* v = std::getenv("LEMRT_TEST_MEM_AVAILABLE_BYTES"); v != nullptr) {
    out.host_bytes = std::atoll(v);
  }
  Consider(Headroom(RLIMIT_AS, StatmBytes(0)), "the address-space limit (ulimit -v, RLIMIT_AS)",
           &out);
  Consider(Headroom(RLIMIT_DATA, StatmBytes(5)), "the data-size limit (ulimit -d, RLIMIT_DATA)",
           &out);
  return out;
}

absl::Status CheckHostMemory(int64_t needed_bytes, int ranks_on_host,
                             const HostMemory& available) {
  const std::string needs = absl::StrFormat(
      "the model needs %d bytes (%.1f MiB) of host memory per rank (its emulated HBM: tables, "
      "optimizer slots and buffers, from the memory plan)",
      needed_bytes, needed_bytes / kMiB);
  if (available.rank_bytes >= 0 && needed_bytes > available.rank_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s, but this rank can allocate %d bytes (%.1f MiB), bounded by %s; use smaller tables "
        "or more ranks on more hosts",
        needs, available.rank_bytes, available.rank_bytes / kMiB, available.rank_limited_by));
  }
  // The host's memory is shared: every rank on it allocates its share.
  // (Saturating: a model near 2^63 bytes times the ranks must not wrap.)
  int64_t host_needed;
  if (__builtin_mul_overflow(needed_bytes, int64_t{std::max(1, ranks_on_host)}, &host_needed)) {
    host_needed = std::numeric_limits<int64_t>::max();
  }
  if (available.host_bytes >= 0 && host_needed > available.host_bytes) {
    const std::string all =
        ranks_on_host > 1 ? absl::StrFormat(", %d bytes (%.1f MiB) for the %d ranks on this host",
                                            host_needed, host_needed / kMiB, ranks_on_host)
                          : "";
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s%s, but the host has %d bytes (%.1f MiB) available (MemAvailable in /proc/meminfo); "
        "use smaller tables, fewer ranks per host or more hosts",
        needs, all, available.host_bytes, available.host_bytes / kMiB));
  }
  return absl::OkStatus();
}

void InstallOutOfMemoryHandler(const char* program) {
  ProgramName() = program;
  std::set_terminate(OnTerminate);
}

}  // namespace lemrt::runtime
