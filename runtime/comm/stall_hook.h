// Test hook for the fault suite (tests/fault_watchdog.sh): makes one rank
// sleep in the SparseCore forward of chosen steps, so the collective
// watchdog (runtime/comm/mpi_watchdog.h) can be shown to abort a job whose
// rank is stuck and to leave alone one whose steps are only slow. Armed by
// the environment only:
//
//   LEMRT_TEST_STALL=RANK:FIRST_STEP-LAST_STEP:SECONDS[,...]
//
// rank RANK sleeps SECONDS (a decimal number; "inf": forever) at the start
// of every step FIRST_STEP..LAST_STEP (0-based; "-LAST_STEP" may be left
// out for one step). Immutable after construction; thread-safe.
#ifndef LEMRT_RUNTIME_COMM_STALL_HOOK_H_
#define LEMRT_RUNTIME_COMM_STALL_HOOK_H_

#include <cstdint>
#include <vector>

namespace lemrt::runtime {

inline constexpr char kStallHookEnv[] = "LEMRT_TEST_STALL";

class StallHook {
 public:
  // Reads the environment: the entries for `rank` (none when unset or
  // malformed; a malformed entry is logged).
  explicit StallHook(int rank);

  // Sleeps when armed for `step` (logs a line first).
  void At(int64_t step) const;

 private:
  struct Entry {
    int64_t first = 0, last = 0;
    double seconds = 0;  // < 0: forever
  };
  std::vector<Entry> entries_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_STALL_HOOK_H_
