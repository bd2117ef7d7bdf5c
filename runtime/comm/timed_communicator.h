// A Communicator that forwards every call to another one and reports the
// wall time and bytes of each all-to-all (the SparseCore exchanges) to an
// observer, for the step-time breakdown, the trace's "Exchange" thread and
// the summary's within-host / between-host bytes (runtime/comm/placement.h).
// Other collectives are forwarded untimed. Thread-compatible, like the
// communicator it wraps; adds two clock reads per all-to-all.
#ifndef LEMRT_RUNTIME_COMM_TIMED_COMMUNICATOR_H_
#define LEMRT_RUNTIME_COMM_TIMED_COMMUNICATOR_H_

#include <chrono>
#include <cstdint>

#include "runtime/comm/forwarding_communicator.h"
#include "runtime/comm/placement.h"

namespace lemrt::runtime {

// The bytes of one all-to-all on one rank.
struct ExchangeBytes {
  int64_t sent = 0, received = 0;  // including this rank's own block
  int64_t sent_within_host = 0;    // to other ranks on this rank's host
  int64_t sent_between_hosts = 0;  // to ranks on other hosts
};

class ExchangeObserver {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~ExchangeObserver() = default;
  // One all-to-all took [begin, end) and moved `bytes`.
  virtual void OnExchange(Clock::time_point begin, Clock::time_point end,
                          const ExchangeBytes& bytes) = 0;
};

class TimedCommunicator : public ForwardingCommunicator {
 public:
  // `inner`, `observer` and `placement` (of inner's ranks) must outlive
  // this object.
  TimedCommunicator(Communicator& inner, ExchangeObserver& observer, const Placement& placement)
      : ForwardingCommunicator(inner), observer_(observer), placement_(placement) {}

  absl::Status AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) override;
  absl::Status AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                         std::span<const int64_t> send_offsets, void* recv,
                         std::span<const int64_t> recv_bytes,
                         std::span<const int64_t> recv_offsets) override;

 private:
  ExchangeObserver& observer_;
  const Placement& placement_;
  std::vector<int64_t> block_bytes_;  // AllToAll: bytes per peer (reused)
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_TIMED_COMMUNICATOR_H_
