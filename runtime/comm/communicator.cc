#include "runtime/comm/communicator.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace lemrt::runtime {
namespace {

// bytes[r] = counts[r] x element_bytes and offsets[r] their prefix sums;
// false when they pass `size` elements.
bool BlocksOf(std::span<const int64_t> counts, int64_t element_bytes, int64_t size,
              std::vector<int64_t>* bytes, std::vector<int64_t>* offsets) {
  bytes->resize(counts.size());
  offsets->resize(counts.size());
  int64_t at = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    (*offsets)[r] = at * element_bytes;
    (*bytes)[r] = counts[r] * element_bytes;
    at += counts[r];
  }
  return at <= size;
}

}  // namespace

absl::Status Communicator::AllToAllvElements(const void* send, int64_t send_size,
                                             std::span<const int64_t> send_counts, void* recv,
                                             int64_t recv_size,
                                             std::span<const int64_t> recv_counts,
                                             int64_t element_bytes) {
  if (!BlocksOf(send_counts, element_bytes, send_size, &scratch_[0], &scratch_[1]) ||
      !BlocksOf(recv_counts, element_bytes, recv_size, &scratch_[2], &scratch_[3])) {
    return absl::InvalidArgumentError(absl::StrCat(
        "all-to-all-v: the counts sum to more elements than the buffers hold (send ", send_size,
        ", receive ", recv_size, ")"));
  }
  return AllToAllv(send, scratch_[0], scratch_[1], recv, scratch_[2], scratch_[3]);
}

absl::Status Communicator::GatherSizes(int64_t bytes, int root) {
  scratch_[0].assign(size(), 0);
  scratch_[0][root] = bytes;
  scratch_[2].assign(size(), 0);
  absl::Status st = AllToAll(scratch_[0], scratch_[2]);
  if (!st.ok()) return st;
  gather_total_bytes_ = 0;
  scratch_[3].assign(size(), 0);
  for (int r = 0; r < size(); ++r) {
    scratch_[3][r] = gather_total_bytes_;
    gather_total_bytes_ += scratch_[2][r];
  }
  return absl::OkStatus();
}

absl::Status Communicator::GatherPayload(const void* send, int64_t bytes, int root, void* recv) {
  scratch_[0].assign(size(), 0);
  scratch_[0][root] = bytes;
  scratch_[1].assign(size(), 0);
  return AllToAllv(send, scratch_[0], scratch_[1], recv, scratch_[2], scratch_[3]);
}

absl::Status AgreeOnStatus(Communicator& comm, const absl::Status& local) {
  // Max of (size - rank) over failing ranks picks the lowest failing rank.
  int64_t flag = local.ok() ? 0 : comm.size() - comm.rank();
  absl::Status st = comm.AllReduceMax(std::span<int64_t>(&flag, 1));
  if (!st.ok()) return st;
  if (flag == 0) return absl::OkStatus();
  const int root = comm.size() - static_cast<int>(flag);
  std::string payload;
  if (comm.rank() == root) {
    payload = absl::StrCat(static_cast<int>(local.code()), ":", local.message());
  }
  st = comm.Broadcast(&payload, root);
  if (!st.ok()) return st;
  const size_t colon = payload.find(':');
  const int code = std::stoi(payload.substr(0, colon));
  const absl::string_view message = absl::string_view(payload).substr(colon + 1);
  // An error every rank shares (a bad config) names no rank.
  int64_t differs = local.ok() || static_cast<int>(local.code()) != code ||
                            local.message() != message
                        ? 1
                        : 0;
  st = comm.AllReduceMax(std::span<int64_t>(&differs, 1));
  if (!st.ok()) return st;
  const absl::StatusCode agreed = static_cast<absl::StatusCode>(code);
  if (differs == 0) return absl::Status(agreed, message);
  return absl::Status(agreed, absl::StrCat("rank ", root, ": ", message));
}

}  // namespace lemrt::runtime
