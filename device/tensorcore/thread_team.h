// ThreadTeam: the threads one chip's TensorCore runs its dense step on (the
// calling thread plus threads() - 1 workers), as a fork-join ParallelFor over
// numbered tasks. Created by the owner of the dense model (the trainer's
// TensorCore stage) and handed to the layers; a null team means "run on the
// calling thread". Which thread runs which task varies from call to call, so
// callers split work into tasks whose results do not depend on the thread
// (device/tensorcore/gemm.h splits by shape only): the step's bits then do not
// depend on threads() either.
//
// Workers spin for up to spin_us after a ParallelFor (the next product of a
// layer usually follows within microseconds), then sleep on a condition
// variable, so an idle team costs no CPU time. Within a Hold (one dense step:
// dozens of fork-joins, some between them run on the caller alone) they keep
// spinning, since waking a sleeping thread costs tens of microseconds on a
// VM, as much as a small product.
//
// Thread-compatible: ParallelFor may be called from one thread at a time.
#ifndef LEMRT_DEVICE_TENSORCORE_THREAD_TEAM_H_
#define LEMRT_DEVICE_TENSORCORE_THREAD_TEAM_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace lemrt::device {

class ThreadTeam {
 public:
  // Starts threads - 1 workers (threads <= 1: none; every task runs on the
  // caller). spin_us: how long an idle worker polls for the next job before
  // it sleeps (0 = sleep at once). polls_when_held: whether Holds keep idle
  // workers polling; false where the team's cores also run other busy
  // threads (a pipelined trainer's SparseCore executor or host workers),
  // whose time the polling would take.
  explicit ThreadTeam(int threads, int spin_us = 50, bool polls_when_held = true);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  // Workers + the calling thread.
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // While a Hold on the team lives (and the team polls_when_held), idle
  // workers poll for the next job without going to sleep; spin_us after the
  // last Hold ends they sleep as before. For a burst of fork-joins whose
  // gaps outlast spin_us (a dense step). A null team: no-op. Holds may nest;
  // each must end on the thread that may call ParallelFor.
  class Hold {
   public:
    explicit Hold(ThreadTeam* team);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    ThreadTeam* const team_;
  };

  // Runs fn(0) .. fn(tasks - 1), each exactly once, on the workers and the
  // calling thread; returns when all have returned. tasks <= 0: no-op;
  // tasks < 2^20 (CHECKed).
  void ParallelFor(int tasks, absl::FunctionRef<void(int)> fn);

 private:
  // The job's claim word, updated by compare-and-swap so that a thread
  // claims a task only of the job it read:
  //
  //   | generation (24 bits) | end (20 bits) | next (20 bits) |
  //
  // Tasks [next, end) are unclaimed. The caller claims from the front
  // (next++), the workers from the back (--end): when a step's products and
  // passes are cut the same way along the batch, the caller keeps taking the
  // first rows and the workers the last ones, so a layer mostly reads what
  // the same core wrote (with one shared counter, dlrm_synthetic's tasks on
  // two threads took 1.5x the CPU of its whole step on one). Which thread
  // runs a task never changes its result.
  static constexpr int kCountBits = 20;
  static constexpr int kMaxTasks = (1 << kCountBits) - 1;

  void WorkerLoop();
  // Claims (from the front or the back) and runs tasks of job `generation`
  // until none is left.
  void RunTasks(uint64_t generation, bool front);
  // Waits (spin, then sleep) until the job generation differs from `seen`;
  // returns it, or 0 when the team stops.
  uint64_t AwaitJob(uint64_t seen);

  const int spin_us_;
  const bool polls_when_held_;
  // The job: fn_ is published by the release store of claim_ and read only
  // after a successful claim (the caller then still waits for that task).
  std::atomic<const absl::FunctionRef<void(int)>*> fn_{nullptr};
  std::atomic<uint64_t> claim_{0};
  std::atomic<int> done_{0};
  int tasks_ = 0;  // of the current job; published with claim_
  std::atomic<bool> stop_{false};
  std::atomic<int> holds_{0};
  uint64_t generation_ = 0;  // the caller's last job

  // Sleeping workers (job_cv_) and a sleeping caller (done_cv_).
  std::mutex mu_;
  std::condition_variable job_cv_;
  std::condition_variable done_cv_;
  std::vector<std::thread> workers_;
};

// One loop of ParallelForGroups: run(context, 0) .. run(context, tasks - 1).
// A plain function and a context pointer (not a FunctionRef), so a group can
// be made ahead of the call and kept in an array; the context must outlive
// the call. Tasks(n, fn) makes one from any callable fn(int). `work`: the
// floating-point operations of all its tasks, where the maker knows them
// (products, sums); < 0: unknown.
struct TaskGroup {
  int tasks = 0;
  void (*run)(const void* context, int task) = nullptr;
  const void* context = nullptr;
  double work = -1;
};

template <typename Fn>
TaskGroup Tasks(int tasks, const Fn& fn, double work = -1) {
  return {tasks, [](const void* c, int i) { (*static_cast<const Fn*>(c))(i); }, &fn, work};
}

// Below this much work in all (every group's known), a ParallelForGroups
// runs on the calling thread: handing tasks to another core and reading
// their results back costs more than a few microseconds of arithmetic.
inline constexpr double kMinForkWork = 1e6;

// Runs the tasks of several independent loops as one fork-join: every task of
// every group exactly once, in one ParallelFor, numbered in the order given
// (the calling thread claims from the first, the workers from the last).
// One hand-off and one wait instead of one per loop, and the threads balance
// over all of them. The groups must not write what another group reads or
// writes. team: null, or groups whose known work sums to less than
// kMinForkWork, run them in order on the calling thread.
void ParallelForGroups(ThreadTeam* team, std::span<const TaskGroup> groups);

// Runs fn(begin, end) for each of the ceil(count / block) ranges
// [i * block, min((i + 1) * block, count)) of [0, count), on `team`, or on
// the calling thread when team is null. count >= 0, block > 0 (CHECKed).
void ParallelRanges(ThreadTeam* team, int64_t count, int64_t block,
                    absl::FunctionRef<void(int64_t, int64_t)> fn);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_THREAD_TEAM_H_
