// Timing for the benchmarks' same-binary comparisons: CPU time of the
// calling thread (the kernels and references are single-threaded, and on a
// loaded machine wall time mostly measures the scheduler).
#ifndef LEMRT_BENCHMARKS_THREAD_CPU_TIMER_H_
#define LEMRT_BENCHMARKS_THREAD_CPU_TIMER_H_

#include <time.h>

#include <algorithm>

namespace lemrt::bench {

inline double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// CPU seconds per call of fn, best of 5 runs of `reps` calls (warm caches).
template <typename Fn>
double SecondsPerCall(int reps, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const double t0 = ThreadCpuSeconds();
    for (int i = 0; i < reps; ++i) fn();
    best = std::min(best, (ThreadCpuSeconds() - t0) / reps);
  }
  return best;
}

}  // namespace lemrt::bench

#endif  // LEMRT_BENCHMARKS_THREAD_CPU_TIMER_H_
