// Where a rank's start-up goes: the time from the process's start to its
// first training step, cut into consecutive phases by marks, so that the
// phases add up to the total. The trainer marks the end of each phase
// (runtime/trainer_setup.cc); SlowestStartup picks the rank whose start-up
// took longest, and its breakdown goes into the summary's `startup` and one
// log line (docs/observability.md, "Start-up").
//
//   origin (process start) --launch--> Trainer::Create --plan--> --data_source-->
//   --allocation--> --table_fill--> --step_buffers--> end of Create --run_start-->
//   first step
//
// StartupClock is thread-compatible; the functions are pure but for the
// collective SlowestStartup.
#ifndef LEMRT_RUNTIME_OBSERVABILITY_STARTUP_CLOCK_H_
#define LEMRT_RUNTIME_OBSERVABILITY_STARTUP_CLOCK_H_

#include <array>
#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "proto/summary.pb.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

enum class StartupPhase : int {
  kLaunch,       // process start -> Trainer::Create: MPI, flags, config, threads, placement
  kPlan,         // the memory plan, the host memory check, the checkpoint directory
  kDataSource,   // the data source, the steps, the limits, the hot rows, the host stage
  kAllocation,   // the stages: table shards sized (not touched), the dense model, pools
  kTableFill,    // the tables' initial values (their pages' first touch), hot-row replicas
  kStepBuffers,  // the step slots, the step buffers reserved and touched
  kRunStart,     // checkpoint restore (when configured), the host workers started
};
inline constexpr int kStartupPhases = 7;

// "launch", "plan", "data_source", ... (the summary's field names less "_ms").
const char* StartupPhaseName(StartupPhase phase);

class StartupClock {
 public:
  using Clock = std::chrono::steady_clock;

  // Phases start at `origin` (e.g. ProcessStart()).
  explicit StartupClock(Clock::time_point origin = Clock::now()) : origin_(origin), last_(origin) {}

  // The time from the previous mark (or the origin) to `now` is `phase`'s
  // (added to what it has); a `now` before the previous mark counts 0.
  void Mark(StartupPhase phase, Clock::time_point now = Clock::now());

  double ms(StartupPhase phase) const { return ms_[static_cast<int>(phase)]; }
  // The origin to the last mark: the sum of the phases.
  double total_ms() const;

 private:
  Clock::time_point origin_;
  Clock::time_point last_;
  std::array<double, kStartupPhases> ms_{};
};

// When this process started, on the steady clock: now less the process's
// age (/proc/self/stat's start time against CLOCK_BOOTTIME, 10 ms
// resolution); now where the age cannot be read.
std::chrono::steady_clock::time_point ProcessStart();

// One rank's phases and their total (ms).
struct StartupBreakdown {
  int rank = 0;
  double total_ms = 0;
  std::array<double, kStartupPhases> ms{};
};

// Collective (one all-reduce of world size x 8 doubles): the breakdown of
// the rank with the largest total (the lowest such rank), the same on every
// rank. Errors: the communicator's.
absl::StatusOr<StartupBreakdown> SlowestStartup(Communicator& comm, const StartupClock& clock);

// Writes `b` into the summary's startup section (total_ms, slowest_rank and
// one <phase>_ms per phase); leaves its other fields.
void FillStartupStats(const StartupBreakdown& b, summary::StartupStats* out);

// One line for the log: "start-up 9.8 s to the first step (slowest rank 0):
// launch 0.31 s, plan 0.00 s, ...".
std::string DescribeStartup(const StartupBreakdown& b);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_STARTUP_CLOCK_H_
