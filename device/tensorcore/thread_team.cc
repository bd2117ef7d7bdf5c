#include "device/tensorcore/thread_team.h"

#include <algorithm>
#include <chrono>

#include "glog/logging.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace lemrt::device {
namespace {

using Clock = std::chrono::steady_clock;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Polls `ready` for up to spin_us, and on while held() is true (the
// deadline restarts when it turns false); true when `ready` held.
template <typename Ready, typename Held>
bool SpinUntil(int spin_us, Ready ready, Held held) {
  if (spin_us <= 0 && !held()) return ready();
  Clock::time_point deadline = Clock::now() + std::chrono::microseconds(spin_us);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      CpuRelax();
    }
    const Clock::time_point now = Clock::now();
    if (held()) {
      deadline = now + std::chrono::microseconds(spin_us);
    } else if (now >= deadline) {
      return ready();
    }
  }
}

bool NotHeld() { return false; }

}  // namespace

ThreadTeam::ThreadTeam(int threads, int spin_us, bool polls_when_held)
    : spin_us_(spin_us), polls_when_held_(polls_when_held) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadTeam::Hold::Hold(ThreadTeam* team)
    : team_(team != nullptr && team->polls_when_held_ ? team : nullptr) {
  if (team_ != nullptr) team_->holds_.fetch_add(1, std::memory_order_relaxed);
}

ThreadTeam::Hold::~Hold() {
  if (team_ != nullptr) team_->holds_.fetch_sub(1, std::memory_order_relaxed);
}

ThreadTeam::~ThreadTeam() {
  stop_.store(true, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  job_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

uint64_t ThreadTeam::AwaitJob(uint64_t seen) {
  auto ready = [&] {
    return stop_.load(std::memory_order_acquire) ||
           (claim_.load(std::memory_order_acquire) >> (2 * kCountBits)) != seen;
  };
  auto held = [&] {
    return holds_.load(std::memory_order_relaxed) > 0 && !stop_.load(std::memory_order_relaxed);
  };
  if (!SpinUntil(spin_us_, ready, held)) {
    std::unique_lock<std::mutex> lock(mu_);
    job_cv_.wait(lock, ready);
  }
  return claim_.load(std::memory_order_acquire) >> (2 * kCountBits);
}

void ThreadTeam::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    seen = AwaitJob(seen);
    if (stop_.load(std::memory_order_acquire)) return;
    RunTasks(seen, /*front=*/false);
  }
}

void ThreadTeam::RunTasks(uint64_t generation, bool front) {
  constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
  uint64_t claim = claim_.load(std::memory_order_acquire);
  for (;;) {
    // Another generation: this job is over (its caller may have returned).
    if ((claim >> (2 * kCountBits)) != generation) return;
    const int end = static_cast<int>((claim >> kCountBits) & kCountMask);
    const int next = static_cast<int>(claim & kCountMask);
    if (next >= end) return;
    const uint64_t claimed = front ? claim + 1 : claim - (uint64_t{1} << kCountBits);
    if (!claim_.compare_exchange_weak(claim, claimed, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      continue;  // `claim` now holds the current word
    }
    // Claimed: the caller waits for this task, so fn_ and tasks_ are this
    // job's until the task is counted done.
    const int tasks = tasks_;
    (*fn_.load(std::memory_order_relaxed))(front ? next : end - 1);
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == tasks) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
    claim = claim_.load(std::memory_order_acquire);
  }
}

void ThreadTeam::ParallelFor(int tasks, absl::FunctionRef<void(int)> fn) {
  if (tasks <= 0) return;
  CHECK_LE(tasks, kMaxTasks);
  if (workers_.empty() || tasks == 1) {
    for (int i = 0; i < tasks; ++i) fn(i);
    return;
  }
  constexpr uint64_t kGenerationMask = (uint64_t{1} << (64 - 2 * kCountBits)) - 1;
  generation_ = (generation_ + 1) & kGenerationMask;
  fn_.store(&fn, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  tasks_ = tasks;
  claim_.store(generation_ << (2 * kCountBits) | static_cast<uint64_t>(tasks) << kCountBits,
               std::memory_order_release);
  {
    // Orders the publication before a sleeping worker's predicate check
    // under mu_: it sees the job or gets the notification.
    std::lock_guard<std::mutex> lock(mu_);
  }
  job_cv_.notify_all();
  RunTasks(generation_, /*front=*/true);
  auto all_done = [&] { return done_.load(std::memory_order_acquire) == tasks; };
  if (!SpinUntil(spin_us_, all_done, NotHeld)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, all_done);
  }
}

void ParallelRanges(ThreadTeam* team, int64_t count, int64_t block,
                    absl::FunctionRef<void(int64_t, int64_t)> fn) {
  CHECK_GE(count, 0);
  CHECK_GT(block, 0);
  const int64_t ranges = (count + block - 1) / block;
  auto run = [&](int i) {
    const int64_t begin = i * block;
    fn(begin, std::min(count, begin + block));
  };
  if (team == nullptr) {
    for (int64_t i = 0; i < ranges; ++i) run(static_cast<int>(i));
  } else {
    team->ParallelFor(static_cast<int>(ranges), run);
  }
}

void ParallelForGroups(ThreadTeam* team, std::span<const TaskGroup> groups) {
  int64_t total = 0;
  double work = 0;
  for (const TaskGroup& g : groups) {
    CHECK_GE(g.tasks, 0);
    total += g.tasks;
    work = work < 0 || g.work < 0 ? -1 : work + g.work;
  }
  if (work >= 0 && work < kMinForkWork) team = nullptr;
  auto run = [&](int index) {
    for (const TaskGroup& g : groups) {
      if (index < g.tasks) {
        g.run(g.context, index);
        return;
      }
      index -= g.tasks;
    }
  };
  if (team == nullptr) {
    for (int64_t i = 0; i < total; ++i) run(static_cast<int>(i));
  } else {
    team->ParallelFor(static_cast<int>(total), run);
  }
}

}  // namespace lemrt::device
