// Communicator over MPI. Owns a duplicate of the communicator it is given, so
// its traffic never mixes with other users of MPI. MPI must be initialised
// (by main) before Create and finalised after the object is destroyed.
//
// Sizes. Every count and offset is 64-bit: the personalised exchange and the
// gather move each peer's block as point-to-point messages of at most
// max_message_bytes (MPI counts are int, 2^31 - 1), the broadcast and the
// reductions run in pieces of at most that size, so no size depends on a
// 32-bit count and no call fails on one rank only because of its sizes. An
// MPI error aborts the job (MPI_ERRORS_ARE_FATAL, inherited from the parent);
// with another error handler, calls return Internal.
//
// Floating-point sums move data, never reduce in MPI: each rank receives
// every rank's values of its own slice of the elements (an all-to-all),
// adds them in rank order (rank 0's + rank 1's + ...), and the summed slices
// are gathered back onto every rank. MPI_Allreduce adds in an order its
// algorithm picks (by world size, message size, version, tuning and the
// ranks' placement on hosts), so its float sums, and a model trained on
// them, could differ between two runs of one config and world size; these
// are the bits LocalCommunicator gives. Bytes per rank as a ring all-reduce
// (2 x (size - 1) / size x the values), 2 x (size - 1) messages.
// Thread-compatible.
#ifndef LEMRT_RUNTIME_COMM_MPI_COMMUNICATOR_H_
#define LEMRT_RUNTIME_COMM_MPI_COMMUNICATOR_H_

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

struct MpiCommunicatorOptions {
  // The largest message one transfer carries, bytes (default 1 GiB, well
  // inside MPI's int counts). Tests lower it to split small exchanges into
  // many messages; every rank must use the same value.
  int64_t max_message_bytes = int64_t{1} << 30;
};

class MpiCommunicator : public Communicator {
 public:
  // Duplicates `parent`. Errors: Internal when MPI fails; InvalidArgument
  // when options.max_message_bytes is not in [1, 2^31 - 1].
  static absl::StatusOr<std::unique_ptr<MpiCommunicator>> Create(
      MPI_Comm parent, MpiCommunicatorOptions options = {});
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // As AllToAllv with equal blocks.
  absl::Status AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) override;
  // Point-to-point: for each peer, its block as messages of at most
  // max_message_bytes (none for an empty block; a copy for this rank's own),
  // receives posted before sends, all in flight at once, then one wait.
  absl::Status AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                         std::span<const int64_t> send_offsets, void* recv,
                         std::span<const int64_t> recv_bytes,
                         std::span<const int64_t> recv_offsets) override;
  absl::Status AllReduceSum(std::span<float> values) override;
  absl::Status AllReduceSum(std::span<double> values) override;
  absl::Status AllReduceSum(std::span<int64_t> values) override;
  absl::Status AllReduceSum(std::span<uint64_t> values) override;
  absl::Status AllReduceMax(std::span<int64_t> values) override;
  // One MPI_Allgather of the lengths (8 B per rank), then AllToAllv's
  // messages.
  absl::Status AllGather(std::span<const float> send, std::vector<float>* recv) override;
  absl::Status Broadcast(std::string* bytes, int root) override;

 private:
  MpiCommunicator(MPI_Comm comm, MpiCommunicatorOptions options);
  // MPI_Allreduce in place over `count` elements of `element_bytes`, in
  // pieces of at most max_message_bytes.
  absl::Status AllReduce(void* values, int64_t count, int64_t element_bytes, MPI_Datatype type,
                         MPI_Op op);
  // The rank-ordered sum above, in place.
  template <typename T>
  absl::Status SumInRankOrder(std::span<T> values);
  // Posts `bytes` at `data` to or from `peer` as messages of at most
  // max_message_bytes (appends to requests_).
  absl::Status Post(bool receive, char* data, int64_t bytes, int peer);
  // Waits for every request in requests_ and clears it.
  absl::Status WaitAll(const char* what);

  MPI_Comm comm_;
  const MpiCommunicatorOptions options_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<MPI_Request> requests_;   // in flight, reused (no per-call allocation)
  std::vector<int64_t> gather_counts_;  // AllGather: floats per rank
  // AllToAll's and AllGather's AllToAllv arguments (bytes).
  std::vector<int64_t> all_to_all_bytes_, all_to_all_offsets_;
  std::vector<int64_t> gather_bytes_, gather_offsets_, gather_send_bytes_, gather_send_offsets_;
  // SumInRankOrder: every rank's values of this rank's slice, rank by rank.
  std::vector<char> slices_;
  std::vector<int64_t> sum_send_bytes_, sum_send_offsets_, sum_recv_bytes_, sum_recv_offsets_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_MPI_COMMUNICATOR_H_
