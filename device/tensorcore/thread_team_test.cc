#include "device/tensorcore/thread_team.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

class ThreadTeamTest : public ::testing::TestWithParam<int> {};

TEST_P(ThreadTeamTest, RunsEveryTaskExactlyOnce) {
  ThreadTeam team(GetParam());
  EXPECT_EQ(team.threads(), std::max(1, GetParam()));
  for (int tasks : {0, 1, 2, 3, 7, 64, 1000}) {
    std::vector<std::atomic<int>> runs(tasks);
    team.ParallelFor(tasks, [&](int i) { runs[i].fetch_add(1); });
    for (int i = 0; i < tasks; ++i) EXPECT_EQ(runs[i].load(), 1) << "task " << i << " of " << tasks;
  }
}

// Many short jobs back to back, with workers that spin and with workers that
// sleep at once: a job's tasks never leak into the next one.
TEST_P(ThreadTeamTest, BackToBackJobsStaySeparate) {
  for (int spin_us : {0, 50, -1}) {
    // -1: workers that sleep at once, but held awake.
    ThreadTeam team(GetParam(), std::max(spin_us, 0));
    std::optional<ThreadTeam::Hold> hold;
    if (spin_us < 0) hold.emplace(&team);
    std::vector<int64_t> out(5);
    int64_t want = 0;
    for (int job = 0; job < 3000; ++job) {
      const int tasks = 1 + job % 5;
      team.ParallelFor(tasks, [&](int i) { out[i] = int64_t{job} * 10 + i; });
      for (int i = 0; i < tasks; ++i) want += int64_t{job} * 10 + i;
      for (int i = 0; i < tasks; ++i) want -= out[i];
    }
    EXPECT_EQ(want, 0) << "spin_us " << spin_us;
  }
}

TEST_P(ThreadTeamTest, UsesTheWorkers) {
  if (GetParam() < 2) GTEST_SKIP() << "no workers";
  ThreadTeam team(GetParam(), /*spin_us=*/0);
  // Each task waits until another thread has entered: only possible when the
  // workers take tasks too.
  std::atomic<int> entered{0};
  team.ParallelFor(2, [&](int) {
    entered.fetch_add(1);
    while (entered.load() < 2) std::this_thread::yield();
  });
  EXPECT_EQ(entered.load(), 2);
}

// The caller claims tasks from the front and the workers from the back, so
// the caller's tasks are always a prefix of the job's and the workers' a
// suffix, whatever the timing.
TEST_P(ThreadTeamTest, CallerTakesTheFrontWorkersTheBack) {
  ThreadTeam team(GetParam());
  const std::thread::id caller = std::this_thread::get_id();
  int mixed_jobs = 0;
  for (int job = 0; job < 200; ++job) {
    const int tasks = 2 + job % 31;
    std::vector<char> by_caller(tasks);
    team.ParallelFor(tasks, [&](int i) {
      by_caller[i] = std::this_thread::get_id() == caller;
      // Long enough for the workers to claim some tasks.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
      while (std::chrono::steady_clock::now() < until) {
      }
    });
    const int first_worker =
        static_cast<int>(std::find(by_caller.begin(), by_caller.end(), 0) - by_caller.begin());
    for (int i = first_worker; i < tasks; ++i) {
      EXPECT_EQ(by_caller[i], 0) << "job " << job << ": task " << i << " ran on the caller after "
                                 << "task " << first_worker << " ran on a worker";
    }
    if (first_worker > 0 && first_worker < tasks) ++mixed_jobs;
  }
  if (GetParam() >= 2) {
    EXPECT_GT(mixed_jobs, 0) << "the workers never took a task: the check had no teeth";
  }
}

// Groups whose known work is small run on the calling thread alone; one
// group of unknown work is enough to hand them to the team.
TEST_P(ThreadTeamTest, SmallKnownWorkStaysOnTheCaller) {
  ThreadTeam team(GetParam(), /*spin_us=*/0);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> on_caller{0}, runs{0};
  auto task = [&](int) {
    runs.fetch_add(1);
    if (std::this_thread::get_id() == caller) on_caller.fetch_add(1);
    // Long enough that forked tasks would reach the workers.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  const TaskGroup small[] = {Tasks(40, task, kMinForkWork / 4), Tasks(40, task, kMinForkWork / 4)};
  ParallelForGroups(&team, small);
  EXPECT_EQ(runs.load(), 80);
  EXPECT_EQ(on_caller.load(), 80);
  // The workers may take tasks once one group's work is unknown; as above,
  // each task runs once.
  const TaskGroup unknown[] = {Tasks(40, task, kMinForkWork / 4), Tasks(40, task)};
  ParallelForGroups(&team, unknown);
  EXPECT_EQ(runs.load(), 160);
}

// CPU time of the whole process while the calling thread sleeps `ms`.
double ProcessCpuMsDuring(int ms) {
  auto cpu_ms = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
  };
  const double before = cpu_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return cpu_ms() - before;
}

// CPU time the whole process gains while the calling thread sleeps in
// 100 ms slices, until it has gained `cpu_ms` or `max_ms` have passed.
double ProcessCpuMsWithin(double cpu_ms, int max_ms) {
  double gained = 0;
  for (int slept = 0; slept < max_ms && gained <= cpu_ms; slept += 100) {
    gained += ProcessCpuMsDuring(100);
  }
  return gained;
}

// The least CPU time the whole process gains in any of `windows` sleeps of
// `ms`: a worker that keeps polling gains some in every window, while a
// one-off burst (a thread starting up under ASan, a last poll) fills one.
double QuietestProcessCpuMs(int windows, int ms) {
  double least = ProcessCpuMsDuring(ms);
  for (int w = 1; w < windows; ++w) least = std::min(least, ProcessCpuMsDuring(ms));
  return least;
}

// With spin_us = 0 an idle worker sleeps at once, unless a Hold keeps it
// polling; when the last Hold ends it sleeps again.
TEST_P(ThreadTeamTest, HoldKeepsIdleWorkersAwake) {
  if (GetParam() < 2) GTEST_SKIP() << "no workers";
  ThreadTeam team(GetParam(), /*spin_us=*/0);
  std::atomic<int> runs{0};
  team.ParallelFor(4, [&](int) { runs.fetch_add(1); });
  EXPECT_LT(QuietestProcessCpuMs(3, 300), 30.0) << "workers should sleep without a hold";
  {
    const ThreadTeam::Hold outer(&team);
    {
      const ThreadTeam::Hold inner(&team);
      team.ParallelFor(4, [&](int) { runs.fetch_add(1); });
    }
    // A held worker polls: the process gains CPU time while this thread
    // sleeps (a sleeping worker gains none). On a loaded machine the poller
    // gets a small share, so up to 5 s are allowed to gain 30 ms.
    EXPECT_GT(ProcessCpuMsWithin(30.0, 5000), 30.0) << "held workers should keep polling";
    team.ParallelFor(4, [&](int) { runs.fetch_add(1); });
  }
  EXPECT_EQ(runs.load(), 12);
  EXPECT_LT(QuietestProcessCpuMs(3, 300), 30.0) << "workers should sleep once the hold ends";
  const ThreadTeam::Hold no_team(nullptr);  // a no-op
}

// A team made not to poll when held (its cores run other busy threads)
// sleeps through a Hold.
TEST_P(ThreadTeamTest, HoldIsIgnoredByATeamThatDoesNotPoll) {
  if (GetParam() < 2) GTEST_SKIP() << "no workers";
  ThreadTeam team(GetParam(), /*spin_us=*/0, /*polls_when_held=*/false);
  const ThreadTeam::Hold hold(&team);
  std::atomic<int> runs{0};
  team.ParallelFor(4, [&](int) { runs.fetch_add(1); });
  EXPECT_EQ(runs.load(), 4);
  EXPECT_LT(QuietestProcessCpuMs(3, 300), 30.0) << "workers should sleep";
}

TEST_P(ThreadTeamTest, ParallelRangesCoverTheCountInBlocks) {
  ThreadTeam team(GetParam());
  for (ThreadTeam* t : {&team, static_cast<ThreadTeam*>(nullptr)}) {
    for (int64_t count : {0, 1, 15, 16, 17, 49}) {
      std::vector<std::atomic<int>> hits(count);
      std::atomic<int> ranges{0};
      ParallelRanges(t, count, 16, [&](int64_t begin, int64_t end) {
        EXPECT_EQ(begin % 16, 0);
        EXPECT_EQ(end, std::min<int64_t>(count, begin + 16));
        for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
        ranges.fetch_add(1);
      });
      EXPECT_EQ(ranges.load(), (count + 15) / 16);
      for (int64_t i = 0; i < count; ++i) EXPECT_EQ(hits[i].load(), 1) << i;
    }
  }
}

TEST_P(ThreadTeamTest, GroupsRunEachOfTheirTasksOnce) {
  ThreadTeam team(GetParam());
  for (ThreadTeam* t : {&team, static_cast<ThreadTeam*>(nullptr)}) {
    // Groups of 3, 0, 1 and 5 tasks; each task records (group, index).
    std::vector<int> sizes = {3, 0, 1, 5};
    std::vector<std::vector<std::atomic<int>>> hits;
    for (int n : sizes) hits.emplace_back(n);
    std::vector<std::function<void(int)>> fns;
    for (size_t g = 0; g < sizes.size(); ++g) {
      fns.push_back([&hits, g](int i) { hits[g][i].fetch_add(1); });
    }
    std::vector<TaskGroup> groups;
    for (size_t g = 0; g < sizes.size(); ++g) groups.push_back(Tasks(sizes[g], fns[g]));
    ParallelForGroups(t, groups);
    for (size_t g = 0; g < sizes.size(); ++g) {
      for (int i = 0; i < sizes[g]; ++i) EXPECT_EQ(hits[g][i].load(), 1) << g << "," << i;
    }
    ParallelForGroups(t, {});  // no groups: nothing to run
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, ThreadTeamTest, ::testing::Values(0, 1, 2, 3, 4));

}  // namespace
}  // namespace lemrt::device
