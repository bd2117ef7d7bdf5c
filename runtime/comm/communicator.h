// The collectives lemrt uses between chips (ranks). One interface, with an
// MPI implementation (mpi_communicator.h). Thread-compatible: one thread
// issues a communicator's collectives, all ranks in the same order.
#ifndef LEMRT_RUNTIME_COMM_COMMUNICATOR_H_
#define LEMRT_RUNTIME_COMM_COMMUNICATOR_H_

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"

namespace lemrt::runtime {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every rank sends `send.size() / size()` int64 values to each rank (block
  // r goes to rank r) and receives the same amount from each into `recv`
  // (block r came from rank r). One round; bytes per rank = send.size() * 8.
  virtual absl::Status AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) = 0;

  // Personalised exchange of bytes: send_bytes[r] bytes starting at
  // send + send_offsets[r] go to rank r; recv_bytes[r] bytes from rank r land
  // at recv + recv_offsets[r]. Counts must agree pairwise (the caller learns
  // them first, e.g. with AllToAll). One round; each rank sends sum(send_bytes).
  virtual absl::Status AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                                 std::span<const int64_t> send_offsets, void* recv,
                                 std::span<const int64_t> recv_bytes,
                                 std::span<const int64_t> recv_offsets) = 0;

  // In-place element-wise sums over ranks. The result is identical on every
  // rank and, for a given world size, from run to run; float and double sums
  // add the ranks' values in rank order (rank 0's + rank 1's + ...), in every
  // implementation.
  virtual absl::Status AllReduceSum(std::span<float> values) = 0;
  virtual absl::Status AllReduceSum(std::span<double> values) = 0;
  virtual absl::Status AllReduceSum(std::span<int64_t> values) = 0;
  virtual absl::Status AllReduceSum(std::span<uint64_t> values) = 0;  // wraps mod 2^64
  virtual absl::Status AllReduceMax(std::span<int64_t> values) = 0;

  // Gathers `send` (any length per rank) from every rank onto every rank, in
  // rank order, into `recv` (resized).
  virtual absl::Status AllGather(std::span<const float> send, std::vector<float>* recv) = 0;

  // Copies `bytes` from `root` to every rank (resized on non-roots).
  virtual absl::Status Broadcast(std::string* bytes, int root) = 0;

  // Built on the calls above, for every implementation and decorator:

  // Personalised exchange of elements: `send` holds the block for rank 0,
  // then rank 1's, ... (send_counts[r] elements go to rank r); the
  // recv_counts[r] elements from rank r land in `recv` in rank order. Counts
  // agree pairwise as in AllToAllv, which carries them (one round). Errors:
  // InvalidArgument when a span is shorter than its counts' sum. Reuses this
  // communicator's scratch: no allocation once the world size was seen.
  template <typename T>
  absl::Status AllToAllvOf(std::span<const T> send, std::span<const int64_t> send_counts,
                           std::span<T> recv, std::span<const int64_t> recv_counts) {
    static_assert(std::is_trivially_copyable_v<T>);
    return AllToAllvElements(send.data(), static_cast<int64_t>(send.size()), send_counts,
                             recv.data(), static_cast<int64_t>(recv.size()), recv_counts,
                             static_cast<int64_t>(sizeof(T)));
  }

  // Gathers every rank's `send` (any length per rank) onto `root`, in rank
  // order, into `recv` (resized; empty on the other ranks). One AllToAll of
  // the lengths (8 B per rank pair), then one AllToAllv that only `root`
  // receives; sizes are 64-bit.
  template <typename T>
  absl::Status Gather(std::span<const T> send, int root, std::vector<T>* recv) {
    static_assert(std::is_trivially_copyable_v<T>);
    absl::Status st = GatherSizes(static_cast<int64_t>(send.size_bytes()), root);
    if (!st.ok()) return st;
    recv->resize(static_cast<size_t>(gather_total_bytes_) / sizeof(T));
    return GatherPayload(send.data(), static_cast<int64_t>(send.size_bytes()), root, recv->data());
  }

 private:
  absl::Status AllToAllvElements(const void* send, int64_t send_size,
                                 std::span<const int64_t> send_counts, void* recv,
                                 int64_t recv_size, std::span<const int64_t> recv_counts,
                                 int64_t element_bytes);
  // Gather's two rounds: the bytes each rank sends to `root` (into
  // scratch_[2] and gather_total_bytes_ on root), then the payload.
  absl::Status GatherSizes(int64_t bytes, int root);
  absl::Status GatherPayload(const void* send, int64_t bytes, int root, void* recv);

  // Per-peer bytes and offsets of the derived calls (reused).
  std::vector<int64_t> scratch_[4];
  int64_t gather_total_bytes_ = 0;
};

// Agrees on a status that may differ by rank: when any rank's `local` is not
// OK, every rank returns the error of the lowest failing rank, prefixed with
// "rank N: " unless every rank failed with that same error (e.g. a config
// error), which is returned as is. Costs one all-reduce, plus a broadcast and
// an all-reduce on error. Call it before the next collective after any step
// that can fail on one rank only.
absl::Status AgreeOnStatus(Communicator& comm, const absl::Status& local);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_COMMUNICATOR_H_
