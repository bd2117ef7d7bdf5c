#include "runtime/threads/thread_plan.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lemrt::runtime {

ThreadPlan PlanThreads(const config::RunConfig& config, const CoreShare& share) {
  const auto& sc = config.sparse_core();
  ThreadPlan p;
  p.cores = share.whole_cores();
  p.pipelining = !sc.disable_full_embedding_pipelining();  // never chosen: it changes results
  // A second thread pays only with a second core to overlap on.
  p.chose_executor_thread = p.pipelining && !sc.has_pipeline_without_threads();
  p.executor_thread = p.pipelining && (p.chose_executor_thread ? p.cores >= 2
                                                               : !sc.pipeline_without_threads());
  // Cores left once the TensorCore thread (and the executor) have one each.
  const int spare = p.cores - 1 - (p.executor_thread ? 1 : 0);
  // Host workers are chosen only when neither field is set: a configured
  // worker count or queue depth is kept as it is.
  p.chose_host_workers = !sc.has_maximum_parallel_iterations() && sc.host_worker_threads() == 0;
  p.maximum_parallel_iterations = sc.maximum_parallel_iterations();
  // With a second core, workers even when no core is spare: the TensorCore
  // and the executor each wait for the other part of every step, and a
  // worker fills those waits (docs/performance.md "Threads and cores").
  if (p.chose_host_workers && p.cores < 2) p.maximum_parallel_iterations = 0;
  // Where the rank owns two cores, at least two workers: a data source's CPU
  // (a parser, a generator) can exceed the device stages', and a worker
  // blocks on a full queue, so the second runs only while the host stage is
  // behind.
  const int least_workers = p.cores >= 2 ? 2 : 1;
  p.host_worker_threads = sc.host_worker_threads() > 0 ? sc.host_worker_threads()
                                                       : std::max(least_workers, spare);
  const int gemm = config.tensor_core().gemm_threads();
  p.chose_gemm_threads = gemm == 0;
  p.gemm_threads = gemm > 0 ? gemm : p.cores;
  p.chose_tile_threads = !sc.has_tile_threads();
  p.tile_threads = p.chose_tile_threads ? p.cores : sc.tile_threads();
  return p;
}

void ApplyThreadPlan(const ThreadPlan& p, config::RunConfig* config) {
  auto* sc = config->mutable_sparse_core();
  sc->set_disable_full_embedding_pipelining(!p.pipelining);
  if (p.pipelining) sc->set_pipeline_without_threads(!p.executor_thread);
  sc->set_maximum_parallel_iterations(p.maximum_parallel_iterations);
  sc->set_host_worker_threads(p.host_worker_threads);
  config->mutable_tensor_core()->set_gemm_threads(p.gemm_threads);
  sc->set_tile_threads(p.tile_threads);
}

std::string DescribeThreadPlan(const ThreadPlan& p, const CoreShare& s) {
  auto how = [](bool chose) { return chose ? "chosen" : "set"; };
  const std::string host =
      p.maximum_parallel_iterations == 0
          ? std::string(p.executor_thread
                            ? "no host workers (host work on the SparseCore executor)"
                            : "no host workers (host work inline)")
          : absl::StrFormat("%d host workers", p.host_worker_threads);
  const std::string pipelining =
      !p.pipelining ? std::string("pipelining off (set)")
                    : absl::StrFormat("pipelining on (set) %s (%s)",
                                      p.executor_thread ? "on a SparseCore executor thread"
                                                        : "on the TensorCore thread",
                                      how(p.chose_executor_thread));
  return absl::StrFormat(
      "threads: this rank owns %.2g cores (%d CPUs in its affinity mask, %d ranks on this "
      "node of %d CPUs); %s, %s (%s), %d GEMM "
      "thread%s (%s), %d tile thread%s (%s)",
      s.cores, s.mask_cpus, s.local_ranks, s.node_cpus, pipelining, host, how(p.chose_host_workers),
      p.gemm_threads, p.gemm_threads == 1 ? "" : "s", how(p.chose_gemm_threads), p.tile_threads,
      p.tile_threads == 1 ? "" : "s", how(p.chose_tile_threads));
}

std::string LaunchAdvice(const CoreShare& s) {
  if (s.local_ranks > s.node_cpus) {
    return absl::StrFormat(
        "%d ranks share this node's %d CPUs, so each owns less than a core; at most %d ranks "
        "per node would each own a core",
        s.local_ranks, s.node_cpus, s.node_cpus);
  }
  const int even = s.node_cpus / s.local_ranks;
  if (s.whole_cores() >= even) return "";
  return absl::StrFormat(
      "this rank's affinity mask gives it %d of the %d cores that are its share of this node's "
      "%d CPUs (mpirun binds each rank to one core by default), so its threads are planned for "
      "%d; pass --bind-to none to mpirun, or --map-by slot:PE=%d to give each of the %d ranks "
      "per node %d cores",
      s.whole_cores(), even, s.node_cpus, s.whole_cores(), even, s.local_ranks, even);
}

}  // namespace lemrt::runtime
