// A Communicator that forwards every call to another one and reports the
// wall time and bytes of each all-to-all (the SparseCore exchanges) to an
// observer, for the step-time breakdown and the trace's "Exchange" thread.
// Other collectives are forwarded untimed. Thread-compatible, like the
// communicator it wraps; adds two clock reads per all-to-all.
#ifndef LEMRT_RUNTIME_TIMED_COMMUNICATOR_H_
#define LEMRT_RUNTIME_TIMED_COMMUNICATOR_H_

#include <chrono>
#include <cstdint>

#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

class ExchangeObserver {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~ExchangeObserver() = default;
  // One all-to-all took [begin, end); this rank sent and received the given
  // bytes (including those to itself).
  virtual void OnExchange(Clock::time_point begin, Clock::time_point end, int64_t bytes_sent,
                          int64_t bytes_received) = 0;
};

class TimedCommunicator : public Communicator {
 public:
  // `inner` and `observer` must outlive this object.
  TimedCommunicator(Communicator& inner, ExchangeObserver& observer)
      : inner_(inner), observer_(observer) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  absl::Status AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) override;
  absl::Status AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                         std::span<const int64_t> send_offsets, void* recv,
                         std::span<const int64_t> recv_bytes,
                         std::span<const int64_t> recv_offsets) override;
  absl::Status AllReduceSum(std::span<float> values) override { return inner_.AllReduceSum(values); }
  absl::Status AllReduceSum(std::span<double> values) override {
    return inner_.AllReduceSum(values);
  }
  absl::Status AllReduceSum(std::span<int64_t> values) override {
    return inner_.AllReduceSum(values);
  }
  absl::Status AllReduceSum(std::span<uint64_t> values) override {
    return inner_.AllReduceSum(values);
  }
  absl::Status AllReduceMax(std::span<int64_t> values) override {
    return inner_.AllReduceMax(values);
  }
  absl::Status AllGather(std::span<const float> send, std::vector<float>* recv) override {
    return inner_.AllGather(send, recv);
  }
  absl::Status Broadcast(std::string* bytes, int root) override {
    return inner_.Broadcast(bytes, root);
  }

 private:
  Communicator& inner_;
  ExchangeObserver& observer_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_TIMED_COMMUNICATOR_H_
