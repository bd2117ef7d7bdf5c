#include "runtime/observability/startup_clock.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace lemrt::runtime {
namespace {

// Seconds since boot at which this process started, or a negative number.
double ProcessStartSinceBoot() {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  // Field 2 (the command) is in parentheses and may hold spaces: count the
  // fields after its closing one. starttime is field 22.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int f = 3; f < 22 && rest >> field; ++f) {
  }
  unsigned long long ticks = 0;
  if (!(rest >> ticks)) return -1;
  const long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? static_cast<double>(ticks) / static_cast<double>(hz) : -1;
}

}  // namespace

const char* StartupPhaseName(StartupPhase phase) {
  switch (phase) {
    case StartupPhase::kLaunch:
      return "launch";
    case StartupPhase::kPlan:
      return "plan";
    case StartupPhase::kDataSource:
      return "data_source";
    case StartupPhase::kAllocation:
      return "allocation";
    case StartupPhase::kTableFill:
      return "table_fill";
    case StartupPhase::kStepBuffers:
      return "step_buffers";
    case StartupPhase::kRunStart:
      return "run_start";
  }
  return "unknown";
}

void StartupClock::Mark(StartupPhase phase, Clock::time_point now) {
  if (now > last_) {
    ms_[static_cast<int>(phase)] += std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
  }
}

double StartupClock::total_ms() const {
  double sum = 0;
  for (double v : ms_) sum += v;
  return sum;
}

std::chrono::steady_clock::time_point ProcessStart() {
  const auto now = std::chrono::steady_clock::now();
  const double started = ProcessStartSinceBoot();
  timespec boot{};
  if (started < 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return now;
  const double age_s = static_cast<double>(boot.tv_sec) + boot.tv_nsec * 1e-9 - started;
  if (age_s <= 0 || age_s > 86400) return now;  // a clock that disagrees: no launch phase
  return now - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(age_s));
}

absl::StatusOr<StartupBreakdown> SlowestStartup(Communicator& comm, const StartupClock& clock) {
  constexpr int kWidth = kStartupPhases + 1;
  std::vector<double> all(static_cast<size_t>(comm.size()) * kWidth, 0.0);
  double* mine = all.data() + static_cast<size_t>(comm.rank()) * kWidth;
  mine[0] = clock.total_ms();
  for (int p = 0; p < kStartupPhases; ++p) mine[p + 1] = clock.ms(static_cast<StartupPhase>(p));
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<double>(all)));
  int slowest = 0;
  for (int r = 1; r < comm.size(); ++r) {
    if (all[r * kWidth] > all[slowest * kWidth]) slowest = r;
  }
  StartupBreakdown b;
  b.rank = slowest;
  b.total_ms = all[slowest * kWidth];
  for (int p = 0; p < kStartupPhases; ++p) b.ms[p] = all[slowest * kWidth + p + 1];
  return b;
}

void FillStartupStats(const StartupBreakdown& b, summary::StartupStats* out) {
  out->set_total_ms(b.total_ms);
  out->set_slowest_rank(b.rank);
  out->set_launch_ms(b.ms[static_cast<int>(StartupPhase::kLaunch)]);
  out->set_plan_ms(b.ms[static_cast<int>(StartupPhase::kPlan)]);
  out->set_data_source_ms(b.ms[static_cast<int>(StartupPhase::kDataSource)]);
  out->set_allocation_ms(b.ms[static_cast<int>(StartupPhase::kAllocation)]);
  out->set_table_fill_ms(b.ms[static_cast<int>(StartupPhase::kTableFill)]);
  out->set_step_buffers_ms(b.ms[static_cast<int>(StartupPhase::kStepBuffers)]);
  out->set_run_start_ms(b.ms[static_cast<int>(StartupPhase::kRunStart)]);
}

std::string DescribeStartup(const StartupBreakdown& b) {
  std::string line = absl::StrFormat(
      "start-up %.2f s to the first step (slowest rank %d):", b.total_ms / 1e3, b.rank);
  for (int p = 0; p < kStartupPhases; ++p) {
    absl::StrAppendFormat(&line, "%s %s %.2f s", p == 0 ? "" : ",",
                          StartupPhaseName(static_cast<StartupPhase>(p)), b.ms[p] / 1e3);
  }
  return line;
}

}  // namespace lemrt::runtime
