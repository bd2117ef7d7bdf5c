// The worker threads a chip's SparseCore tiles run on. Created by the trainer
// (one per rank) and handed to the SparseCores; a SparseCore without a pool
// runs its tiles inline. Thread-safe: concurrent Run calls are served one
// after another. A job is passed by reference, never copied, so no Run call
// allocates.
#ifndef LEMRT_DEVICE_SPARSECORE_TILE_POOL_H_
#define LEMRT_DEVICE_SPARSECORE_TILE_POOL_H_

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace lemrt::device {

class TilePool {
 public:
  // `threads` workers; <= 1 runs every task on the calling thread.
  explicit TilePool(int threads);
  ~TilePool();
  TilePool(const TilePool&) = delete;
  TilePool& operator=(const TilePool&) = delete;

  // Runs fn(0) .. fn(tasks - 1), each exactly once, on the workers and the
  // calling thread; returns when all are done. Which thread runs which task
  // varies, so tasks must write disjoint outputs.
  void Run(int tasks, absl::FunctionRef<void(int)> fn);

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

 private:
  void WorkerLoop();
  void Drain();  // runs tasks of the current job until none is left

  std::mutex run_mu_;  // one job at a time
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const absl::FunctionRef<void(int)>* job_ = nullptr;
  int tasks_ = 0;
  int next_ = 0;
  int done_ = 0;
  long generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// pool->Run(tasks, fn), or fn(0) .. fn(tasks - 1) on the calling thread when
// `pool` is null.
void RunOnPool(TilePool* pool, int tasks, absl::FunctionRef<void(int)> fn);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_TILE_POOL_H_
