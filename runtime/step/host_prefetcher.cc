#include "runtime/step/host_prefetcher.h"

#include <algorithm>
#include <thread>


namespace lemrt::runtime {

HostPrefetcher::HostPrefetcher(HostStage& host, int threads, int depth, int64_t first_step,
                               int64_t end_step, HostQueueObserver* observer)
    : host_(host),
      depth_(std::max(0, depth)),
      end_step_(end_step),
      observer_(observer),
      slots_(std::max(1, depth)),
      next_step_(first_step) {
  for (Slot& slot : slots_) slot.work = host_.NewWork();
  const int n = WorkerThreads(threads, depth_);
  workers_.reserve(n);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

HostPrefetcher::~HostPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int64_t HostPrefetcher::ReadyLocked() const {
  return std::count_if(slots_.begin(), slots_.end(),
                       [](const Slot& s) { return s.state == State::kReady; });
}

void HostPrefetcher::WorkerLoop() {
  const int64_t n = static_cast<int64_t>(slots_.size());
  for (;;) {
    // Claim and read under claim_mu_: reads go to the data source in step order.
    std::unique_lock<std::mutex> claim(claim_mu_);
    Slot* slot = nullptr;
    int64_t step = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Idle past the last step or after a failure until Restart or stop.
      cv_.wait(lock, [&] {
        return stop_ || (!failed_ && next_step_ < end_step_ &&
                         slots_[next_step_ % n].state == State::kFree);
      });
      if (stop_) return;
      step = next_step_++;
      slot = &slots_[step % n];
      slot->state = State::kFilling;
      slot->step = step;
    }
    host_.ReadLocal(/*train=*/true, step, slot->work.get());
    claim.unlock();
    host_.BuildLocal(slot->work.get());
    {
      std::lock_guard<std::mutex> lock(mu_);
      slot->state = State::kReady;
      if (!slot->work->status.ok()) failed_ = true;
      if (observer_ != nullptr) observer_->OnHostQueueDepth(step, slot->work->end, ReadyLocked());
    }
    cv_.notify_all();
  }
}

void HostPrefetcher::Restart(int64_t first_step, int64_t end_step) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Slot& slot : slots_) slot.state = State::kFree;
    next_step_ = first_step;
    end_step_ = end_step;
    failed_ = false;
  }
  cv_.notify_all();
}

HostWork& HostPrefetcher::Take(int64_t step, double* wait_ms) {
  Slot& slot = slots_[step % static_cast<int64_t>(slots_.size())];
  const auto t0 = std::chrono::steady_clock::now();
  if (depth_ == 0) {
    host_.ReadLocal(/*train=*/true, step, slot.work.get());
    host_.BuildLocal(slot.work.get());
    slot.step = step;
    slot.state = State::kTaken;
  } else {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return slot.state == State::kReady && slot.step == step; });
    slot.state = State::kTaken;
    if (observer_ != nullptr) {
      observer_->OnHostQueueDepth(step, std::chrono::steady_clock::now(), ReadyLocked());
    }
  }
  if (wait_ms != nullptr) {
    *wait_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                   .count();
  }
  return *slot.work;
}

void HostPrefetcher::Release(HostWork& work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Slot& slot : slots_) {
      if (slot.work.get() == &work) slot.state = State::kFree;
    }
  }
  cv_.notify_all();
}

}  // namespace lemrt::runtime
