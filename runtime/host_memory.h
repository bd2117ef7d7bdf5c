// The host memory a rank may still allocate, and the check that a model
// fits it before any table is allocated. The emulated chip's HBM lives in
// host memory, so a table that fits the chip (the memory plan) may not fit
// the host or the process's limits (ulimit -v); without this check the
// allocation would end the rank with std::bad_alloc. Thread-safe.
#ifndef LEMRT_RUNTIME_HOST_MEMORY_H_
#define LEMRT_RUNTIME_HOST_MEMORY_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace lemrt::runtime {

struct HostMemory {
  // MemAvailable (/proc/meminfo): shared by the ranks of the host; -1: unknown.
  int64_t host_bytes = -1;
  // What this process may still allocate under its own limits: the least of
  // RLIMIT_AS less its virtual size (/proc/self/statm) and RLIMIT_DATA less
  // its data size, where set; -1: no limit.
  int64_t rank_bytes = -1;
  std::string rank_limited_by;  // which one ("the address-space limit ...")
};

// This host's and this process's available memory. Test hook:
// LEMRT_TEST_MEM_AVAILABLE_BYTES replaces the host's MemAvailable.
HostMemory AvailableHostMemory();

// OK when `needed_bytes` (each rank's share of the model: the memory plan's
// bytes per chip) fit this rank's own limits and `ranks_on_host` times it
// fit the host's available memory; else ResourceExhausted with the bytes
// needed and available (per rank, or all of the host's ranks together), the
// limit and what to change. Unknown availability passes.
absl::Status CheckHostMemory(int64_t needed_bytes, int ranks_on_host,
                             const HostMemory& available);

// Makes an uncaught std::bad_alloc (on any thread) print one sentence,
// "<program>: error: out of host memory ...", and exit with status 1 instead
// of a terminate message and a core dump; other exceptions keep the default
// handling. Call once, first thing in main; `program` must outlive the process
// (a string literal).
void InstallOutOfMemoryHandler(const char* program);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_HOST_MEMORY_H_
