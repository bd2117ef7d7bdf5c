#include "runtime/comm/forwarding_communicator.h"

namespace lemrt::runtime {

const char* CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllToAll:
      return "all-to-all";
    case Collective::kAllToAllv:
      return "all-to-all-v";
    case Collective::kAllReduce:
      return "all-reduce";
    case Collective::kAllReduceMax:
      return "all-reduce (max)";
    case Collective::kAllGather:
      return "all-gather";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "collective";
}

absl::Status ForwardingCommunicator::AllToAll(std::span<const int64_t> send,
                                              std::span<int64_t> recv) {
  Enter(Collective::kAllToAll);
  absl::Status st = inner_.AllToAll(send, recv);
  Exit(Collective::kAllToAll);
  return st;
}

absl::Status ForwardingCommunicator::AllToAllv(const void* send,
                                               std::span<const int64_t> send_bytes,
                                               std::span<const int64_t> send_offsets, void* recv,
                                               std::span<const int64_t> recv_bytes,
                                               std::span<const int64_t> recv_offsets) {
  Enter(Collective::kAllToAllv);
  absl::Status st =
      inner_.AllToAllv(send, send_bytes, send_offsets, recv, recv_bytes, recv_offsets);
  Exit(Collective::kAllToAllv);
  return st;
}

absl::Status ForwardingCommunicator::AllReduceSum(std::span<float> values) {
  Enter(Collective::kAllReduce);
  absl::Status st = inner_.AllReduceSum(values);
  Exit(Collective::kAllReduce);
  return st;
}

absl::Status ForwardingCommunicator::AllReduceSum(std::span<double> values) {
  Enter(Collective::kAllReduce);
  absl::Status st = inner_.AllReduceSum(values);
  Exit(Collective::kAllReduce);
  return st;
}

absl::Status ForwardingCommunicator::AllReduceSum(std::span<int64_t> values) {
  Enter(Collective::kAllReduce);
  absl::Status st = inner_.AllReduceSum(values);
  Exit(Collective::kAllReduce);
  return st;
}

absl::Status ForwardingCommunicator::AllReduceSum(std::span<uint64_t> values) {
  Enter(Collective::kAllReduce);
  absl::Status st = inner_.AllReduceSum(values);
  Exit(Collective::kAllReduce);
  return st;
}

absl::Status ForwardingCommunicator::AllReduceMax(std::span<int64_t> values) {
  Enter(Collective::kAllReduceMax);
  absl::Status st = inner_.AllReduceMax(values);
  Exit(Collective::kAllReduceMax);
  return st;
}

absl::Status ForwardingCommunicator::AllGather(std::span<const float> send,
                                               std::vector<float>* recv) {
  Enter(Collective::kAllGather);
  absl::Status st = inner_.AllGather(send, recv);
  Exit(Collective::kAllGather);
  return st;
}

absl::Status ForwardingCommunicator::Broadcast(std::string* bytes, int root) {
  Enter(Collective::kBroadcast);
  absl::Status st = inner_.Broadcast(bytes, root);
  Exit(Collective::kBroadcast);
  return st;
}

}  // namespace lemrt::runtime
