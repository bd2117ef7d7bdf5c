#include "runtime/comm/mpi_communicator.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace lemrt::runtime {
namespace {

absl::Status Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return absl::OkStatus();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return absl::InternalError(absl::StrCat(what, " failed: ", std::string(text, len)));
}

absl::Status ToInt(int64_t v, int* out, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": ", v, " bytes exceed MPI's 2^31-1 count limit"));
  }
  *out = static_cast<int>(v);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(MPI_Comm parent) {
  MPI_Comm dup;
  absl::Status st = Check(MPI_Comm_dup(parent, &dup), "MPI_Comm_dup");
  if (!st.ok()) return st;
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(dup));
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  send_counts_.resize(size_);
  send_displs_.resize(size_);
  recv_counts_.resize(size_);
  recv_displs_.resize(size_);
}

MpiCommunicator::~MpiCommunicator() { MPI_Comm_free(&comm_); }

absl::Status MpiCommunicator::AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) {
  const int per_rank = static_cast<int>(send.size() / size_);
  return Check(MPI_Alltoall(send.data(), per_rank, MPI_INT64_T, recv.data(), per_rank,
                            MPI_INT64_T, comm_),
               "MPI_Alltoall");
}

absl::Status MpiCommunicator::AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                                        std::span<const int64_t> send_offsets, void* recv,
                                        std::span<const int64_t> recv_bytes,
                                        std::span<const int64_t> recv_offsets) {
  for (int r = 0; r < size_; ++r) {
    for (auto [v, out] : {std::pair{send_bytes[r], &send_counts_[r]},
                          std::pair{send_offsets[r], &send_displs_[r]},
                          std::pair{recv_bytes[r], &recv_counts_[r]},
                          std::pair{recv_offsets[r], &recv_displs_[r]}}) {
      absl::Status st = ToInt(v, out, "MPI_Alltoallv");
      if (!st.ok()) return st;
    }
  }
  return Check(MPI_Alltoallv(send, send_counts_.data(), send_displs_.data(), MPI_BYTE, recv,
                             recv_counts_.data(), recv_displs_.data(), MPI_BYTE, comm_),
               "MPI_Alltoallv");
}

absl::Status MpiCommunicator::AllReduce(void* values, int count, MPI_Datatype type, MPI_Op op) {
  return Check(MPI_Allreduce(MPI_IN_PLACE, values, count, type, op, comm_), "MPI_Allreduce");
}

absl::Status MpiCommunicator::AllReduceSum(std::span<float> v) {
  return AllReduce(v.data(), static_cast<int>(v.size()), MPI_FLOAT, MPI_SUM);
}
absl::Status MpiCommunicator::AllReduceSum(std::span<double> v) {
  return AllReduce(v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM);
}
absl::Status MpiCommunicator::AllReduceSum(std::span<int64_t> v) {
  return AllReduce(v.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_SUM);
}
absl::Status MpiCommunicator::AllReduceSum(std::span<uint64_t> v) {
  return AllReduce(v.data(), static_cast<int>(v.size()), MPI_UINT64_T, MPI_SUM);
}
absl::Status MpiCommunicator::AllReduceMax(std::span<int64_t> v) {
  return AllReduce(v.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_MAX);
}

absl::Status MpiCommunicator::AllGather(std::span<const float> send, std::vector<float>* recv) {
  int mine = static_cast<int>(send.size());
  absl::Status st = Check(MPI_Allgather(&mine, 1, MPI_INT, recv_counts_.data(), 1, MPI_INT,
                                        comm_),
                          "MPI_Allgather");
  if (!st.ok()) return st;
  int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    st = ToInt(total, &recv_displs_[r], "MPI_Allgatherv");
    if (!st.ok()) return st;
    total += recv_counts_[r];
  }
  recv->resize(total);
  return Check(MPI_Allgatherv(send.data(), mine, MPI_FLOAT, recv->data(), recv_counts_.data(),
                              recv_displs_.data(), MPI_FLOAT, comm_),
               "MPI_Allgatherv");
}

absl::Status MpiCommunicator::Broadcast(std::string* bytes, int root) {
  int64_t len = static_cast<int64_t>(bytes->size());
  absl::Status st = Check(MPI_Bcast(&len, 1, MPI_INT64_T, root, comm_), "MPI_Bcast");
  if (!st.ok()) return st;
  bytes->resize(len);
  return Check(MPI_Bcast(bytes->data(), static_cast<int>(len), MPI_CHAR, root, comm_),
               "MPI_Bcast");
}

}  // namespace lemrt::runtime
