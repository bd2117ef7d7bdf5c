// The watchdog's judgement and its sentence, as pure functions of the ranks'
// CollectiveMonitor snapshots (mpi_watchdog.h gathers them), so they are
// tested without MPI. Stateless; thread-safe.
#ifndef LEMRT_RUNTIME_COMM_STALL_REPORT_H_
#define LEMRT_RUNTIME_COMM_STALL_REPORT_H_

#include <optional>
#include <span>
#include <string>

#include "runtime/comm/collective_monitor.h"
#include "runtime/comm/placement.h"

namespace lemrt::runtime {

// How many of the longest step so far a collective may wait, at least.
inline constexpr double kStepTimesPerTimeout = 20;

// The timeout of a collective on `channel`: the larger of `base_s` and 20
// times the longest step so far, plus the stage's allowance.
double CollectiveTimeout(const CollectiveMonitor::Snapshot& s, int channel, double base_s);

// The channel of `s` inside a collective for longer than its timeout, or -1.
int StalledChannel(const CollectiveMonitor::Snapshot& s, double base_s);

// Whether the collective `before` was stalled in on `channel` is still the
// one `now` waits in (same count of collectives entered, still inside): false
// when it completed between the two snapshots, e.g. while the watchdog asked
// the other ranks on a loaded machine.
bool StillStalled(const CollectiveMonitor::Snapshot& before, const CollectiveMonitor::Snapshot& now,
                  int channel);

// The sentence for rank `my_rank` stalled on `channel`: what it waits in,
// for how long against which timeout, in which step and stage, and which
// ranks did not arrive (entered fewer collectives on that channel) with
// what each is doing; `peers[r]` is rank r's snapshot, nullopt when it did
// not answer within `answer_wait_s` (stopped, hung or dead). peers[my_rank]
// is ignored. With `placement` (of the ranks of `peers`), the ranks that did
// not arrive are named with their hosts ("ranks 2, 3 on host b").
std::string StallReport(int my_rank, int channel, const CollectiveMonitor::Snapshot& mine,
                        double base_s,
                        std::span<const std::optional<CollectiveMonitor::Snapshot>> peers,
                        double answer_wait_s, const Placement* placement = nullptr);

// Whether rank `my_rank` is cut off from the rest of the job: the job spans
// more than one host and no rank on another host answered (`peers` as for
// StallReport). Then the rank cannot reach the launcher either (an abort
// through MPI may block), and ends itself.
bool CutOff(int my_rank, const Placement& placement,
            std::span<const std::optional<CollectiveMonitor::Snapshot>> peers);

// The sentence of a cut-off rank: StallReport's findings (its ranks that
// did not arrive named with their hosts), then that it cannot reach the
// ranks on the other hosts and ends itself.
std::string CutOffReport(int my_rank, int channel, const CollectiveMonitor::Snapshot& mine,
                         double base_s,
                         std::span<const std::optional<CollectiveMonitor::Snapshot>> peers,
                         double answer_wait_s, const Placement& placement);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_STALL_REPORT_H_
