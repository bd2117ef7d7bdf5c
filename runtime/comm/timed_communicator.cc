#include "runtime/comm/timed_communicator.h"

namespace lemrt::runtime {
namespace {

int64_t Sum(std::span<const int64_t> v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

ExchangeBytes Bytes(int64_t sent, int64_t received, HostBytes split) {
  return {sent, received, split.within_host, split.between_hosts};
}

}  // namespace

absl::Status TimedCommunicator::AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) {
  const auto begin = ExchangeObserver::Clock::now();
  absl::Status st = ForwardingCommunicator::AllToAll(send, recv);
  const auto end = ExchangeObserver::Clock::now();
  block_bytes_.assign(size(), static_cast<int64_t>(send.size_bytes()) / size());
  observer_.OnExchange(
      begin, end,
      Bytes(static_cast<int64_t>(send.size_bytes()), static_cast<int64_t>(recv.size_bytes()),
            SplitByHost(placement_, rank(), block_bytes_)));
  return st;
}

absl::Status TimedCommunicator::AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                                          std::span<const int64_t> send_offsets, void* recv,
                                          std::span<const int64_t> recv_bytes,
                                          std::span<const int64_t> recv_offsets) {
  const auto begin = ExchangeObserver::Clock::now();
  absl::Status st = ForwardingCommunicator::AllToAllv(send, send_bytes, send_offsets, recv,
                                                      recv_bytes, recv_offsets);
  observer_.OnExchange(
      begin, ExchangeObserver::Clock::now(),
      Bytes(Sum(send_bytes), Sum(recv_bytes), SplitByHost(placement_, rank(), send_bytes)));
  return st;
}

}  // namespace lemrt::runtime
