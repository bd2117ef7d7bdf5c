// A Communicator that forwards every collective to another one and calls
// Enter before and Exit after each, so a decorator (watched_communicator.h,
// timed_communicator.h) holds only its hook: it overrides Enter / Exit, or the
// one or two collectives it observes, and inherits the rest. Thread-compatible,
// like the communicator it wraps.
#ifndef LEMRT_RUNTIME_COMM_FORWARDING_COMMUNICATOR_H_
#define LEMRT_RUNTIME_COMM_FORWARDING_COMMUNICATOR_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

// The kinds of collective, as the watchdog names them.
enum class Collective { kAllToAll, kAllToAllv, kAllReduce, kAllReduceMax, kAllGather, kBroadcast };

// "all-to-all", "all-to-all-v", "all-reduce", "all-reduce (max)",
// "all-gather", "broadcast".
const char* CollectiveName(Collective c);

class ForwardingCommunicator : public Communicator {
 public:
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

 protected:
  // `inner` must outlive this object.
  explicit ForwardingCommunicator(Communicator& inner) : inner_(inner) {}
  // Called on the calling thread right before and right after `inner`'s
  // collective `c` (also when it fails). Default: nothing.
  virtual void Enter(Collective) {}
  virtual void Exit(Collective) {}
  Communicator& inner() { return inner_; }

 private:
  Communicator& inner_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_FORWARDING_COMMUNICATOR_H_
