// The threads lemrt_train runs one rank with, chosen from the cores the rank
// owns (runtime/threads/core_share.h) wherever the config leaves them unset:
//
//   host workers (sparse_core.maximum_parallel_iterations unset and
//     host_worker_threads 0): where the rank owns 2 cores or more, the cores
//     left after the TensorCore thread and the executor, at least two (the
//     stages' waits leave room for them, and a worker blocks on a full
//     queue, so the second runs only while a costly data source keeps the
//     host stage behind); with one core none (host work runs inline); with
//     only host_worker_threads 0, that many workers at the configured depth;
//   the SparseCore executor thread (sparse_core.pipeline_without_threads
//     unset, pipelining on): only where the rank owns two whole cores or
//     more; with fewer the pipelined schedule runs on the TensorCore thread
//     (the same steps in the same order, bit for bit), because an executor
//     thread on the TensorCore's only core gains no overlap and adds its
//     hand-offs and MPI waits to the step;
//   GEMM threads (tensor_core.gemm_threads 0): every owned core; the dense
//     step's team takes the cores the SparseCore side leaves idle while it
//     runs;
//   tile threads (sparse_core.tile_threads unset): every owned core, for
//     the same reason: the SparseCore tiles take the cores the host stage
//     and the dense step leave idle (the host stage of file data is short).
//
// None of these choices changes results, so they may follow the machine.
// Pipelining itself changes results (stale gradients), so it is never
// chosen: it stays what the config says (on by default, as in the reference)
// on every machine, and the same config and world size train the same model
// anywhere. Pure functions.
#ifndef LEMRT_RUNTIME_THREADS_THREAD_PLAN_H_
#define LEMRT_RUNTIME_THREADS_THREAD_PLAN_H_

#include <string>

#include "proto/config.pb.h"
#include "runtime/threads/core_share.h"

namespace lemrt::runtime {

struct ThreadPlan {
  int cores = 1;      // whole cores this rank owns
  bool pipelining = true;
  // With pipelining: the SparseCore stages run on their own executor thread
  // (false: on the TensorCore thread, in the pipelined order).
  bool executor_thread = true;
  int maximum_parallel_iterations = 2;  // 0 = no host workers
  // The workers at a depth > 0; at depth 0 none run, whatever this says (the
  // summary's threads.host_worker_threads is then 0).
  int host_worker_threads = 1;
  int gemm_threads = 1;
  int tile_threads = 1;
  // Which of the above the plan chose (the rest were set in the config).
  bool chose_executor_thread = false;
  bool chose_host_workers = false;
  bool chose_gemm_threads = false;
  bool chose_tile_threads = false;
};

// The plan for `config` (validated) on a rank owning `share` (local: ranks
// may choose differently, as none of the choices changes results).
ThreadPlan PlanThreads(const config::RunConfig& config, const CoreShare& share);

// Writes the plan into `config`, so that every later reader sees explicit
// values (fields the config set keep their values).
void ApplyThreadPlan(const ThreadPlan& plan, config::RunConfig* config);

// One line for the log: the cores, then each choice and whether it was set.
std::string DescribeThreadPlan(const ThreadPlan& plan, const CoreShare& share);

// One sentence naming what to pass to mpirun when this rank owns fewer whole
// cores than its even share of the node (its mask binds it tighter), or when
// more ranks than CPUs share the node; empty otherwise.
std::string LaunchAdvice(const CoreShare& share);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_THREADS_THREAD_PLAN_H_
