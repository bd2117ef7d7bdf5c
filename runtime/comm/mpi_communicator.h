// Communicator over MPI. Owns a duplicate of the communicator it is given, so
// its traffic never mixes with other users of MPI. MPI must be initialised
// (by main) before Create and finalised after the object is destroyed.
// Thread-compatible.
#ifndef LEMRT_RUNTIME_COMM_MPI_COMMUNICATOR_H_
#define LEMRT_RUNTIME_COMM_MPI_COMMUNICATOR_H_

#include <mpi.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

class MpiCommunicator : public Communicator {
 public:
  // Duplicates `parent`. Errors: Internal when MPI fails.
  static absl::StatusOr<std::unique_ptr<MpiCommunicator>> Create(MPI_Comm parent);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
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
  explicit MpiCommunicator(MPI_Comm comm);
  absl::Status AllReduce(void* values, int count, MPI_Datatype type, MPI_Op op);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  // Scratch for MPI's int counts (allocated once, sized to the world).
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_MPI_COMMUNICATOR_H_
