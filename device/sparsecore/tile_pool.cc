#include "device/sparsecore/tile_pool.h"

namespace lemrt::device {

TilePool::TilePool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

TilePool::~TilePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void TilePool::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  while (job_ != nullptr && next_ < tasks_) {
    const int task = next_++;
    const absl::FunctionRef<void(int)>* job = job_;
    lock.unlock();
    (*job)(task);
    lock.lock();
    if (++done_ == tasks_) done_cv_.notify_all();
  }
}

void TilePool::WorkerLoop() {
  long seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    Drain();
  }
}

void TilePool::Run(int tasks, absl::FunctionRef<void(int)> fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (int i = 0; i < tasks; ++i) fn(i);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    tasks_ = tasks;
    next_ = 0;
    done_ = 0;
    ++generation_;
  }
  work_cv_.notify_all();
  Drain();
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return done_ == tasks_; });
  job_ = nullptr;
}

void RunOnPool(TilePool* pool, int tasks, absl::FunctionRef<void(int)> fn) {
  if (pool != nullptr) {
    pool->Run(tasks, fn);
  } else {
    for (int i = 0; i < tasks; ++i) fn(i);
  }
}

}  // namespace lemrt::device
