// Host worker threads: run the local half of the host stage (data read, COO,
// per-sample dedup, partition, partition stats; HostStage::ReadLocal +
// BuildLocal) of training steps ahead of the device stages, into a bounded
// queue of `depth` work items (the config's
// sparse_core.maximum_parallel_iterations). The collective half
// (HostStage::Finish: status agreement, minibatch-split all-reduce) stays on
// the consumer's thread (the SparseCore executor), in step order.
//
//   workers (T threads):  claim step j (in order, when item j % depth is free)
//                         -> ReadLocal (one at a time, in step order)
//                         -> BuildLocal (in parallel)  -> item ready
//   consumer (1 thread):  Take(i): wait for item i % depth to hold step i
//                         -> HostStage::Finish ... -> Release(i)
//
// A step's local work is a pure function of the step (each item has its own
// builder and splitter scratch), so results are bit-identical for every thread
// count and depth. Training reads stay in step order, so file data reads as
// without workers. After a failed step the workers claim no further steps; the
// consumer meets the failure at that step and every rank agrees on it in
// HostStage::Finish. With depth 0 there are no threads: Take runs the step's
// local half on the calling thread.
//
// Thread-safe: Take / Release from one consumer thread, the workers inside.
// The destructor stops the workers after their current step (no step needs to
// be taken).
#ifndef LEMRT_RUNTIME_STEP_HOST_PREFETCHER_H_
#define LEMRT_RUNTIME_STEP_HOST_PREFETCHER_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/step/host_stage.h"

namespace lemrt::runtime {

// Observes the queue (the trainer forwards it to the RunRecorder). Called
// under the prefetcher's lock: keep it short.
class HostQueueObserver {
 public:
  virtual ~HostQueueObserver() = default;
  // At `t`, step `step` entered (a worker finished it) or left (the consumer
  // took it) the queue, leaving `ready` steps waiting for the consumer.
  virtual void OnHostQueueDepth(int64_t step, std::chrono::steady_clock::time_point t,
                                int64_t ready) = 0;
};

class HostPrefetcher {
 public:
  // Prefetches training steps [first_step, end_step) of `host` (must outlive
  // this) with `threads` workers (>= 1) into `depth` items (0 = no workers,
  // Take works inline). `observer` is optional and must outlive this. Makes
  // every item up front (allocates), then starts the workers.
  HostPrefetcher(HostStage& host, int threads, int depth, int64_t first_step, int64_t end_step,
                 HostQueueObserver* observer = nullptr);
  // The worker threads a prefetcher of `threads` workers and `depth` items
  // runs: none at depth 0 (the host work runs inline), else max(1, threads).
  static int WorkerThreads(int threads, int depth) { return depth > 0 ? std::max(1, threads) : 0; }
  ~HostPrefetcher();
  HostPrefetcher(const HostPrefetcher&) = delete;
  HostPrefetcher& operator=(const HostPrefetcher&) = delete;

  // Consumer: blocks until step `step`'s local half is done and returns its
  // item (its status says whether it succeeded; pass it to HostStage::Finish).
  // Steps must be taken in increasing order from first_step, each released
  // before the next is taken. `wait_ms` (optional) gets the time blocked.
  HostWork& Take(int64_t step, double* wait_ms = nullptr);
  // Consumer: the item of the taken step may be refilled.
  void Release(HostWork& work);
  // Consumer: prefetches steps [first_step, end_step) next, reusing the
  // items (no allocation). Every step of the previous range must have been
  // taken and released (workers idle).
  void Restart(int64_t first_step, int64_t end_step);

  // The worker threads running: WorkerThreads(threads, depth).
  int threads() const { return static_cast<int>(workers_.size()); }
  int depth() const { return depth_; }

 private:
  enum class State { kFree, kFilling, kReady, kTaken };
  struct Slot {
    std::unique_ptr<HostWork> work;
    State state = State::kFree;
    int64_t step = -1;
  };

  void WorkerLoop();
  int64_t ReadyLocked() const;

  HostStage& host_;
  const int depth_;
  int64_t end_step_;  // guarded by mu_
  HostQueueObserver* const observer_;
  std::vector<Slot> slots_;  // max(depth, 1) items; step j uses slot j % size

  // Claiming and reading a step happen under claim_mu_, so training reads go
  // in step order; slot states and next_step_ are guarded by mu_.
  std::mutex claim_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_step_;
  bool failed_ = false;  // a step's local half failed: claim nothing more
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_STEP_HOST_PREFETCHER_H_
