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
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

class WatchedCommunicator : public Communicator {
 public:
  // `inner` and `monitor` must outlive this object; `channel` is a
  // CollectiveMonitor::Channel used by this communicator only.
  WatchedCommunicator(Communicator& inner, CollectiveMonitor& monitor, int channel)
      : inner_(inner), monitor_(monitor), channel_(channel) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  absl::Status AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) override;
  absl::Status AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                         std::span<const int64_t> send_offsets, void* recv,
                         std::span<const int64_t> recv_bytes,
                         std::span<const int64_t> recv_offsets) override;
  absl::Status AllReduceSum(std::span<float> values) override;
  absl::Status AllReduceSum(std::span<double> values) override;
  absl::Status AllReduceSum(std::span<int64_t> values) override;
  absl::Status AllReduceSum(std::span<uint64_t> values) override;
  absl::Status AllReduceMax(std::span<int64_t> values) override;
  absl::Status AllGather(std::span<const float> send, std::vector<float>* recv) override;
  absl::Status Broadcast(std::string* bytes, int root) override;

 private:
  Communicator& inner_;
  CollectiveMonitor& monitor_;
  const int channel_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_WATCHED_COMMUNICATOR_H_
