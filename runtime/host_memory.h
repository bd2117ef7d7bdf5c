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
  int64_t available_bytes = -1;  // the least of the limits below; -1: unknown
  std::string limited_by;        // which one ("MemAvailable in /proc/meminfo", ...)
};

// The least of: MemAvailable (/proc/meminfo, shared by the ranks of a node),
// RLIMIT_AS less this process's virtual size (/proc/self/statm) and
// RLIMIT_DATA less its data size, where set.
HostMemory AvailableHostMemory();

// OK when `needed_bytes` (this rank's share of the model: the memory plan's
// bytes per chip) fit `available`; else ResourceExhausted with both numbers,
// the limit and what to change. Unknown availability passes.
absl::Status CheckHostMemory(int64_t needed_bytes, const HostMemory& available);

// Makes an uncaught std::bad_alloc (on any thread) print one sentence,
// "<program>: error: out of host memory ...", and exit with status 1 instead
// of a terminate message and a core dump; other exceptions keep the default
// handling. Call once, first thing in main; `program` must outlive the process
// (a string literal).
void InstallOutOfMemoryHandler(const char* program);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_HOST_MEMORY_H_
