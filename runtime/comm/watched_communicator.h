// A Communicator that forwards every collective to another one and records
// in a CollectiveMonitor when it enters and leaves each, so the watchdog
// (mpi_watchdog.h) can tell how long a collective has waited and which ranks
// have not reached it. Thread-compatible, like the communicator it wraps;
// adds one uncontended mutex lock and a clock read per collective entry and
// exit.
#ifndef LEMRT_RUNTIME_COMM_WATCHED_COMMUNICATOR_H_
#define LEMRT_RUNTIME_COMM_WATCHED_COMMUNICATOR_H_

#include <string>
#include <vector>

#include "runtime/comm/collective_monitor.h"
#include "runtime/comm/forwarding_communicator.h"

namespace lemrt::runtime {

class WatchedCommunicator : public ForwardingCommunicator {
 public:
  // `inner` and `monitor` must outlive this object; `channel` is a
  // CollectiveMonitor::Channel used by this communicator only.
  WatchedCommunicator(Communicator& inner, CollectiveMonitor& monitor, int channel)
      : ForwardingCommunicator(inner), monitor_(monitor), channel_(channel) {}

 private:
  void Enter(Collective c) override { monitor_.Enter(channel_, CollectiveName(c)); }
  void Exit(Collective) override { monitor_.Exit(channel_); }

  CollectiveMonitor& monitor_;
  const int channel_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_WATCHED_COMMUNICATOR_H_
