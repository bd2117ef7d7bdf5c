// Communicators for a world whose ranks are threads of one process, so that
// components taking a Communicator (AgreeOnStatus, ChooseHotRows, the stages)
// get fast unit tests at several ranks without mpirun. Each collective is two
// meetings of all ranks: every rank posts its buffers, then every rank reads
// what it receives from the others' posted buffers (reductions add in rank
// order, so every rank gets the same bits), then all meet again before any
// buffer may change. A rank that does not reach a collective within the
// world's timeout makes the others return DeadlineExceeded instead of
// waiting forever. LocalWorld is thread-safe; each LocalCommunicator is
// thread-compatible, used by its rank's thread only.
#ifndef LEMRT_RUNTIME_COMM_LOCAL_COMMUNICATOR_H_
#define LEMRT_RUNTIME_COMM_LOCAL_COMMUNICATOR_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

// What one rank posts for a collective: its buffer and, for AllToAllv, its
// per-peer byte counts and offsets.
struct LocalPost {
  const void* data = nullptr;
  int64_t count = 0;  // elements (or bytes for AllToAllv's data)
  std::span<const int64_t> bytes, offsets;
  // What every rank must post alike (a reduction's length, an all-to-all's
  // block, a broadcast's root); -1 where ranks may differ.
  int64_t agreed = -1;
  const char* op = "";  // set by Meet
};

class LocalWorld {
 public:
  // A world of `size` >= 1 ranks. A rank waits at most `timeout` for the
  // others at each meeting.
  explicit LocalWorld(int size,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

  int size() const { return size_; }

  // Rank `rank` posts `post` and waits until every rank has posted; then
  // every rank's post is readable with posted() until Leave. Errors:
  // DeadlineExceeded naming the collective when some rank does not arrive in
  // time; InvalidArgument, after leaving with the others (so the caller
  // must not Leave), when some rank is in another collective or posted
  // another `agreed` value: what MPI would hang on or leave undefined is a
  // sentence naming both ranks here.
  absl::Status Meet(int rank, const LocalPost& post, const char* op);
  const LocalPost& posted(int rank) const { return posts_[rank]; }
  // Waits until every rank has read what it needs (the second meeting).
  absl::Status Leave(const char* op);

 private:
  absl::Status Barrier(const char* op);

  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int64_t generation_ = 0;
  std::vector<LocalPost> posts_;
};

class LocalCommunicator : public Communicator {
 public:
  // Rank `rank` of `world`, which must outlive this object.
  LocalCommunicator(LocalWorld& world, int rank) : world_(world), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  absl::Status AllToAll(std::span<const int64_t> send, std::span<int64_t> recv) override;
  // Errors: InvalidArgument when a peer's count for this rank differs from
  // recv_bytes (as MPI would fail on a truncated message).
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
  template <typename T, typename Op>
  absl::Status Reduce(std::span<T> values, Op op, const char* name);

  LocalWorld& world_;
  const int rank_;
};

// Runs `body` once per rank of a world of `size` ranks, each on its own
// thread with that rank's LocalCommunicator, and returns the ranks' statuses
// in rank order once all have returned.
std::vector<absl::Status> RunLocalRanks(int size,
                                        const std::function<absl::Status(Communicator&)>& body);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_LOCAL_COMMUNICATOR_H_
