#include "runtime/comm/watched_communicator.h"

namespace lemrt::runtime {
namespace {

// Enters `op` on construction, leaves it on destruction.
class Watch {
 public:
  Watch(CollectiveMonitor& monitor, int channel, const char* op)
      : monitor_(monitor), channel_(channel) {
    monitor_.Enter(channel_, op);
  }
  ~Watch() { monitor_.Exit(channel_); }

 private:
  CollectiveMonitor& monitor_;
  const int channel_;
};

}  // namespace

absl::Status WatchedCommunicator::AllToAll(std::span<const int64_t> send,
                                           std::span<int64_t> recv) {
  Watch w(monitor_, channel_, "all-to-all");
  return inner_.AllToAll(send, recv);
}

absl::Status WatchedCommunicator::AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                                            std::span<const int64_t> send_offsets, void* recv,
                                            std::span<const int64_t> recv_bytes,
                                            std::span<const int64_t> recv_offsets) {
  Watch w(monitor_, channel_, "all-to-all-v");
  return inner_.AllToAllv(send, send_bytes, send_offsets, recv, recv_bytes, recv_offsets);
}

absl::Status WatchedCommunicator::AllReduceSum(std::span<float> values) {
  Watch w(monitor_, channel_, "all-reduce");
  return inner_.AllReduceSum(values);
}

absl::Status WatchedCommunicator::AllReduceSum(std::span<double> values) {
  Watch w(monitor_, channel_, "all-reduce");
  return inner_.AllReduceSum(values);
}

absl::Status WatchedCommunicator::AllReduceSum(std::span<int64_t> values) {
  Watch w(monitor_, channel_, "all-reduce");
  return inner_.AllReduceSum(values);
}

absl::Status WatchedCommunicator::AllReduceSum(std::span<uint64_t> values) {
  Watch w(monitor_, channel_, "all-reduce");
  return inner_.AllReduceSum(values);
}

absl::Status WatchedCommunicator::AllReduceMax(std::span<int64_t> values) {
  Watch w(monitor_, channel_, "all-reduce (max)");
  return inner_.AllReduceMax(values);
}

absl::Status WatchedCommunicator::AllGather(std::span<const float> send,
                                            std::vector<float>* recv) {
  Watch w(monitor_, channel_, "all-gather");
  return inner_.AllGather(send, recv);
}

absl::Status WatchedCommunicator::Broadcast(std::string* bytes, int root) {
  Watch w(monitor_, channel_, "broadcast");
  return inner_.Broadcast(bytes, root);
}

}  // namespace lemrt::runtime
