#include "runtime/comm/local_communicator.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/strings/str_format.h"

namespace lemrt::runtime {

LocalWorld::LocalWorld(int size, std::chrono::milliseconds timeout)
    : size_(std::max(1, size)), timeout_(timeout), posts_(size_) {}

absl::Status LocalWorld::Barrier(const char* op) {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t generation = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return absl::OkStatus();
  }
  if (!cv_.wait_for(lock, timeout_, [&] { return generation_ != generation; })) {
    return absl::DeadlineExceededError(
        absl::StrFormat("%s: not every one of the %d local ranks reached it within %d ms", op,
                        size_, static_cast<int>(timeout_.count())));
  }
  return absl::OkStatus();
}

absl::Status LocalWorld::Meet(int rank, const LocalPost& post, const char* op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    posts_[rank] = post;
    posts_[rank].op = op;
  }
  absl::Status st = Barrier(op);
  if (!st.ok()) return st;
  for (int r = 0; r < size_; ++r) {
    const LocalPost& other = posts_[r];
    if (std::strcmp(other.op, op) == 0 && other.agreed == post.agreed) continue;
    const absl::Status mismatch = absl::InvalidArgumentError(absl::StrFormat(
        "%s: rank %d is in %s (length or root %d) while rank %d is in %s (%d): every rank "
        "must run the same collectives in the same order, with the same lengths",
        op, rank, op, post.agreed, r, other.op, other.agreed));
    st = Leave(op);
    return st.ok() ? mismatch : st;
  }
  return absl::OkStatus();
}

absl::Status LocalWorld::Leave(const char* op) { return Barrier(op); }

absl::Status LocalCommunicator::AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) {
  const int64_t block = static_cast<int64_t>(send.size()) / size();
  absl::Status st = world_.Meet(rank_, {send.data(), block, {}, {}, block}, "all-to-all");
  if (!st.ok()) return st;
  for (int r = 0; r < size(); ++r) {
    const LocalPost& p = world_.posted(r);
    const auto* from = static_cast<const int64_t*>(p.data) + int64_t{rank_} * p.count;
    std::copy(from, from + p.count, recv.data() + int64_t{r} * p.count);
  }
  return world_.Leave("all-to-all");
}

absl::Status LocalCommunicator::AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                                          std::span<const int64_t> send_offsets, void* recv,
                                          std::span<const int64_t> recv_bytes,
                                          std::span<const int64_t> recv_offsets) {
  absl::Status st = world_.Meet(rank_, {send, 0, send_bytes, send_offsets}, "all-to-all-v");
  if (!st.ok()) return st;
  absl::Status mismatch;
  for (int r = 0; r < size(); ++r) {
    const LocalPost& p = world_.posted(r);
    const int64_t n = p.bytes[rank_];
    if (n != recv_bytes[r]) {
      mismatch = absl::InvalidArgumentError(
          absl::StrFormat("all-to-all-v: rank %d sends %d bytes to rank %d, which expects %d", r, n,
                          rank_, recv_bytes[r]));
      continue;
    }
    if (n > 0) {
      std::memcpy(static_cast<char*>(recv) + recv_offsets[r],
                  static_cast<const char*>(p.data) + p.offsets[rank_], n);
    }
  }
  st = world_.Leave("all-to-all-v");
  return mismatch.ok() ? st : mismatch;
}

template <typename T, typename Op>
absl::Status LocalCommunicator::Reduce(std::span<T> values, Op op, const char* name) {
  const auto n = static_cast<int64_t>(values.size());
  absl::Status st = world_.Meet(rank_, {values.data(), n, {}, {}, n}, name);
  if (!st.ok()) return st;
  // Every rank folds the ranks' values in rank order: the same bits on all.
  std::vector<T> result(static_cast<const T*>(world_.posted(0).data),
                        static_cast<const T*>(world_.posted(0).data) + values.size());
  for (int r = 1; r < size(); ++r) {
    const auto* other = static_cast<const T*>(world_.posted(r).data);
    for (size_t i = 0; i < result.size(); ++i) result[i] = op(result[i], other[i]);
  }
  st = world_.Leave(name);  // no rank reads `values` any more
  if (!st.ok()) return st;
  std::copy(result.begin(), result.end(), values.begin());
  return absl::OkStatus();
}

absl::Status LocalCommunicator::AllReduceSum(std::span<float> values) {
  return Reduce(values, std::plus<float>(), "all-reduce");
}
absl::Status LocalCommunicator::AllReduceSum(std::span<double> values) {
  return Reduce(values, std::plus<double>(), "all-reduce");
}
absl::Status LocalCommunicator::AllReduceSum(std::span<int64_t> values) {
  // Added as unsigned, so an overflow wraps as MPI's does instead of being UB.
  return Reduce(
      values,
      [](int64_t a, int64_t b) {
        return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      },
      "all-reduce");
}
absl::Status LocalCommunicator::AllReduceSum(std::span<uint64_t> values) {
  return Reduce(values, std::plus<uint64_t>(), "all-reduce");
}
absl::Status LocalCommunicator::AllReduceMax(std::span<int64_t> values) {
  return Reduce(
      values, [](int64_t a, int64_t b) { return std::max(a, b); }, "all-reduce (max)");
}

absl::Status LocalCommunicator::AllGather(std::span<const float> send, std::vector<float>* recv) {
  absl::Status st =
      world_.Meet(rank_, {send.data(), static_cast<int64_t>(send.size()), {}, {}}, "all-gather");
  if (!st.ok()) return st;
  recv->clear();
  for (int r = 0; r < size(); ++r) {
    const auto* from = static_cast<const float*>(world_.posted(r).data);
    recv->insert(recv->end(), from, from + world_.posted(r).count);
  }
  return world_.Leave("all-gather");
}

absl::Status LocalCommunicator::Broadcast(std::string* bytes, int root) {
  absl::Status st = world_.Meet(rank_, {bytes, 0, {}, {}, root}, "broadcast");
  if (!st.ok()) return st;
  if (rank_ != root) *bytes = *static_cast<const std::string*>(world_.posted(root).data);
  return world_.Leave("broadcast");
}

std::vector<absl::Status> RunLocalRanks(int size,
                                        const std::function<absl::Status(Communicator&)>& body) {
  LocalWorld world(size);
  std::vector<absl::Status> status(world.size());
  std::vector<std::thread> threads;
  threads.reserve(world.size());
  for (int r = 0; r < world.size(); ++r) {
    threads.emplace_back([&, r] {
      LocalCommunicator comm(world, r);
      status[r] = body(comm);
    });
  }
  for (std::thread& t : threads) t.join();
  return status;
}

}  // namespace lemrt::runtime
