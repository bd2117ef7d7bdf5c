#include "runtime/comm/mpi_communicator.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "glog/logging.h"

namespace lemrt::runtime {
namespace {

// The tag of the exchanges' messages. Each call completes all its messages
// before returning and every rank makes the same calls in the same order, so
// one tag suffices: MPI matches messages between two ranks in order.
constexpr int kExchangeTag = 17;

absl::Status Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return absl::OkStatus();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return absl::InternalError(absl::StrCat(what, " failed: ", std::string(text, len)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(
    MPI_Comm parent, MpiCommunicatorOptions options) {
  if (options.max_message_bytes < 1 ||
      options.max_message_bytes > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_message_bytes must be in [1, 2^31 - 1], got ", options.max_message_bytes));
  }
  MPI_Comm dup;
  absl::Status st = Check(MPI_Comm_dup(parent, &dup), "MPI_Comm_dup");
  if (!st.ok()) return st;
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(dup, options));
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, MpiCommunicatorOptions options)
    : comm_(comm), options_(options) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  gather_counts_.resize(size_);
  gather_bytes_.resize(size_);
  gather_offsets_.resize(size_);
  gather_send_bytes_.resize(size_);
  all_to_all_bytes_.resize(size_);
  all_to_all_offsets_.resize(size_);
  gather_send_offsets_.assign(size_, 0);
  sum_send_bytes_.resize(size_);
  sum_send_offsets_.resize(size_);
  sum_recv_bytes_.resize(size_);
  sum_recv_offsets_.resize(size_);
  requests_.reserve(4 * size_);
}

MpiCommunicator::~MpiCommunicator() { MPI_Comm_free(&comm_); }

absl::Status MpiCommunicator::AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) {
  const int64_t block = static_cast<int64_t>(send.size() / size_ * sizeof(int64_t));
  for (int r = 0; r < size_; ++r) {
    all_to_all_bytes_[r] = block;
    all_to_all_offsets_[r] = r * block;
  }
  return AllToAllv(send.data(), all_to_all_bytes_, all_to_all_offsets_, recv.data(),
                   all_to_all_bytes_, all_to_all_offsets_);
}

absl::Status MpiCommunicator::Post(bool receive, char* data, int64_t bytes, int peer) {
  for (int64_t done = 0; done < bytes; done += options_.max_message_bytes) {
    const int n = static_cast<int>(std::min(options_.max_message_bytes, bytes - done));
    requests_.emplace_back();
    const int rc = receive ? MPI_Irecv(data + done, n, MPI_BYTE, peer, kExchangeTag, comm_,
                                       &requests_.back())
                           : MPI_Isend(data + done, n, MPI_BYTE, peer, kExchangeTag, comm_,
                                       &requests_.back());
    if (rc != MPI_SUCCESS) {
      requests_.pop_back();
      (void)WaitAll("MPI_Waitall");  // what was posted must complete before returning
      return Check(rc, receive ? "MPI_Irecv" : "MPI_Isend");
    }
  }
  return absl::OkStatus();
}

absl::Status MpiCommunicator::WaitAll(const char* what) {
  const int rc =
      MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  requests_.clear();
  return Check(rc, what);
}

absl::Status MpiCommunicator::AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                                        std::span<const int64_t> send_offsets, void* recv,
                                        std::span<const int64_t> recv_bytes,
                                        std::span<const int64_t> recv_offsets) {
  CHECK_EQ(send_bytes.size(), static_cast<size_t>(size_));
  CHECK_EQ(recv_bytes.size(), static_cast<size_t>(size_));
  char* const in = static_cast<char*>(recv);
  char* const out = const_cast<char*>(static_cast<const char*>(send));  // MPI_Isend's type
  for (int r = 0; r < size_; ++r) {
    CHECK(send_bytes[r] >= 0 && send_offsets[r] >= 0 && recv_bytes[r] >= 0 &&
          recv_offsets[r] >= 0)
        << "negative count or offset for rank " << r;
  }
  CHECK_EQ(send_bytes[rank_], recv_bytes[rank_]) << "this rank's own block";
  // Receives first (in rank order from the next rank on), so that sends
  // find them posted; then the sends in the same rotation, which spreads the
  // first messages over different peers.
  for (int i = 1; i < size_; ++i) {
    const int peer = (rank_ + i) % size_;
    absl::Status st = Post(/*receive=*/true, in + recv_offsets[peer], recv_bytes[peer], peer);
    if (!st.ok()) return st;
  }
  for (int i = 1; i < size_; ++i) {
    const int peer = (rank_ + size_ - i) % size_;
    absl::Status st = Post(/*receive=*/false, out + send_offsets[peer], send_bytes[peer], peer);
    if (!st.ok()) return st;
  }
  if (send_bytes[rank_] > 0) {
    std::memcpy(in + recv_offsets[rank_], out + send_offsets[rank_], send_bytes[rank_]);
  }
  return WaitAll("MPI_Waitall (all-to-all-v)");
}

absl::Status MpiCommunicator::AllReduce(void* values, int64_t count, int64_t element_bytes,
                                        MPI_Datatype type, MPI_Op op) {
  const int64_t piece = options_.max_message_bytes / element_bytes;
  CHECK_GT(piece, 0);
  char* p = static_cast<char*>(values);
  // Element-wise, so the pieces give the same result as one call; every rank
  // holds the same count and makes the same pieces.
  for (int64_t done = 0; done < count; done += piece) {
    const int n = static_cast<int>(std::min(piece, count - done));
    absl::Status st = Check(
        MPI_Allreduce(MPI_IN_PLACE, p + done * element_bytes, n, type, op, comm_),
        "MPI_Allreduce");
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status MpiCommunicator::SumInRankOrder(std::span<T> values) {
  if (size_ == 1) return absl::OkStatus();
  const auto n = static_cast<int64_t>(values.size());
  const auto bytes = static_cast<int64_t>(sizeof(T));
  // Rank r owns elements [n r / size, n (r + 1) / size).
  auto begin = [&](int r) { return n * r / size_; };
  const int64_t mine = begin(rank_ + 1) - begin(rank_);
  slices_.resize(static_cast<size_t>(mine * size_ * bytes));
  for (int r = 0; r < size_; ++r) {
    sum_send_offsets_[r] = begin(r) * bytes;
    sum_send_bytes_[r] = (begin(r + 1) - begin(r)) * bytes;
    sum_recv_offsets_[r] = r * mine * bytes;
    sum_recv_bytes_[r] = mine * bytes;
  }
  LEMRT_RETURN_IF_ERROR(AllToAllv(values.data(), sum_send_bytes_, sum_send_offsets_,
                                  slices_.data(), sum_recv_bytes_, sum_recv_offsets_));
  const T* slices = reinterpret_cast<const T*>(slices_.data());
  T* out = values.data() + begin(rank_);
  for (int64_t i = 0; i < mine; ++i) {
    T sum = slices[i];
    for (int r = 1; r < size_; ++r) sum += slices[r * mine + i];
    out[i] = sum;
  }
  // Every rank's summed slice to every rank, in place (this rank's is there).
  for (int r = 0; r < size_; ++r) {
    sum_send_offsets_[r] = begin(rank_) * bytes;
    sum_send_bytes_[r] = r == rank_ ? 0 : mine * bytes;
    sum_recv_offsets_[r] = begin(r) * bytes;
    sum_recv_bytes_[r] = r == rank_ ? 0 : (begin(r + 1) - begin(r)) * bytes;
  }
  return AllToAllv(values.data(), sum_send_bytes_, sum_send_offsets_, values.data(),
                   sum_recv_bytes_, sum_recv_offsets_);
}

absl::Status MpiCommunicator::AllReduceSum(std::span<float> v) { return SumInRankOrder(v); }
absl::Status MpiCommunicator::AllReduceSum(std::span<double> v) { return SumInRankOrder(v); }
absl::Status MpiCommunicator::AllReduceSum(std::span<int64_t> v) {
  return AllReduce(v.data(), static_cast<int64_t>(v.size()), sizeof(int64_t), MPI_INT64_T,
                   MPI_SUM);
}
absl::Status MpiCommunicator::AllReduceSum(std::span<uint64_t> v) {
  return AllReduce(v.data(), static_cast<int64_t>(v.size()), sizeof(uint64_t), MPI_UINT64_T,
                   MPI_SUM);
}
absl::Status MpiCommunicator::AllReduceMax(std::span<int64_t> v) {
  return AllReduce(v.data(), static_cast<int64_t>(v.size()), sizeof(int64_t), MPI_INT64_T,
                   MPI_MAX);
}

absl::Status MpiCommunicator::AllGather(std::span<const float> send, std::vector<float>* recv) {
  const int64_t mine = static_cast<int64_t>(send.size());
  absl::Status st = Check(MPI_Allgather(&mine, 1, MPI_INT64_T, gather_counts_.data(), 1,
                                        MPI_INT64_T, comm_),
                          "MPI_Allgather");
  if (!st.ok()) return st;
  int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    gather_offsets_[r] = total * static_cast<int64_t>(sizeof(float));
    gather_bytes_[r] = gather_counts_[r] * static_cast<int64_t>(sizeof(float));
    total += gather_counts_[r];
  }
  recv->resize(total);
  // Every rank sends its whole block (offset 0) to every rank.
  std::fill(gather_send_bytes_.begin(), gather_send_bytes_.end(),
            mine * static_cast<int64_t>(sizeof(float)));
  return AllToAllv(send.data(), gather_send_bytes_, gather_send_offsets_, recv->data(),
                   gather_bytes_, gather_offsets_);
}

absl::Status MpiCommunicator::Broadcast(std::string* bytes, int root) {
  int64_t len = static_cast<int64_t>(bytes->size());
  absl::Status st = Check(MPI_Bcast(&len, 1, MPI_INT64_T, root, comm_), "MPI_Bcast");
  if (!st.ok()) return st;
  bytes->resize(len);
  for (int64_t done = 0; done < len; done += options_.max_message_bytes) {
    const int n = static_cast<int>(std::min(options_.max_message_bytes, len - done));
    st = Check(MPI_Bcast(bytes->data() + done, n, MPI_CHAR, root, comm_), "MPI_Bcast");
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace lemrt::runtime
