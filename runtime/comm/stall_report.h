// The watchdog's judgement and its sentence, as pure functions of the ranks'
// CollectiveMonitor snapshots (mpi_watchdog.h gathers them), so they are
// tested without MPI. Stateless; thread-safe.
#ifndef LEMRT_RUNTIME_COMM_STALL_REPORT_H_
#define LEMRT_RUNTIME_COMM_STALL_REPORT_H_

#include <optional>
#include <span>
#include <string>

#include "runtime/comm/collective_monitor.h"

namespace lemrt::runtime {

// How many of the longest step so far a collective may wait, at least.
inline constexpr double kStepTimesPerTimeout = 20;

// The timeout of a collective on `channel`: the larger of `base_s` and 20
// times the longest step so far, plus the stage's allowance.
double CollectiveTimeout(const CollectiveMonitor::Snapshot& s, int channel, double base_s);

// The channel of `s` inside a collective for longer than its timeout, or -1.
int StalledChannel(const CollectiveMonitor::Snapshot& s, double base_s);

// The sentence for rank `my_rank` stalled on `channel`: what it waits in,
// for how long against which timeout, in which step and stage, and which
// ranks did not arrive (entered fewer collectives on that channel) with
// what each is doing; `peers[r]` is rank r's snapshot, nullopt when it did
// not answer within `answer_wait_s` (stopped, hung or dead). peers[my_rank]
// is ignored.
std::string StallReport(int my_rank, int channel, const CollectiveMonitor::Snapshot& mine,
                        double base_s,
                        std::span<const std::optional<CollectiveMonitor::Snapshot>> peers,
                        double answer_wait_s);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_STALL_REPORT_H_
