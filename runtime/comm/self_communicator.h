// A communicator for a world of one rank: every collective is the identity
// (all-to-alls copy send to recv). For in-process tests and benchmarks of
// components that take a Communicator. Thread-compatible.
#ifndef LEMRT_RUNTIME_COMM_SELF_COMMUNICATOR_H_
#define LEMRT_RUNTIME_COMM_SELF_COMMUNICATOR_H_

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

class SelfCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  absl::Status AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) override {
    std::copy(send.begin(), send.end(), recv.begin());
    return absl::OkStatus();
  }
  absl::Status AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                         std::span<const int64_t> send_offsets, void* recv,
                         std::span<const int64_t>, std::span<const int64_t> recv_offsets) override {
    std::memcpy(static_cast<char*>(recv) + recv_offsets[0],
                static_cast<const char*>(send) + send_offsets[0], send_bytes[0]);
    return absl::OkStatus();
  }
  absl::Status AllReduceSum(std::span<float>) override { return absl::OkStatus(); }
  absl::Status AllReduceSum(std::span<double>) override { return absl::OkStatus(); }
  absl::Status AllReduceSum(std::span<int64_t>) override { return absl::OkStatus(); }
  absl::Status AllReduceSum(std::span<uint64_t>) override { return absl::OkStatus(); }
  absl::Status AllReduceMax(std::span<int64_t>) override { return absl::OkStatus(); }
  absl::Status AllGather(std::span<const float> send, std::vector<float>* recv) override {
    recv->assign(send.begin(), send.end());
    return absl::OkStatus();
  }
  absl::Status Broadcast(std::string*, int) override { return absl::OkStatus(); }
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_SELF_COMMUNICATOR_H_
