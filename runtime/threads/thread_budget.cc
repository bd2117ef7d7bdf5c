#include "runtime/threads/thread_budget.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lemrt::runtime {

ThreadBudget ComputeThreadBudget(const config::RunConfig& config, int ranks_per_node,
                                 int cores) {
  const auto& sc = config.sparse_core();
  ThreadBudget b;
  b.ranks_per_node = std::max(1, ranks_per_node);
  b.cores = std::max(1, cores);
  b.sparsecore_executor =
      !sc.disable_full_embedding_pipelining() && !sc.pipeline_without_threads() ? 1 : 0;
  b.host_workers = sc.maximum_parallel_iterations() > 0
                       ? HostWorkerThreads(config, b.ranks_per_node)
                       : 0;
  b.tile_workers = std::max(0, sc.tile_threads() - 1);
  return b;
}

bool TensorCoreTeamPolls(const config::RunConfig& config) {
  // Whether the rank has other busy threads does not depend on the node.
  return ComputeThreadBudget(config, /*ranks_per_node=*/1, /*cores=*/1).besides_tensorcore() == 0;
}

std::string OversubscriptionWarning(const ThreadBudget& b) {
  if (!b.oversubscribed()) return "";
  std::vector<std::string> parts = {"1 TensorCore (main)"};
  std::vector<std::string> lower;
  if (b.sparsecore_executor > 0) parts.push_back("1 SparseCore executor");
  if (b.host_workers > 0) {
    parts.push_back(absl::StrFormat("%d host workers", b.host_workers));
    lower.push_back(absl::StrFormat(
        "sparse_core.host_worker_threads (now %d; 0 = cores / ranks per node)", b.host_workers));
  }
  if (b.tile_workers > 0) {
    parts.push_back(absl::StrFormat("%d tile workers", b.tile_workers));
    lower.push_back(absl::StrFormat("sparse_core.tile_threads (now %d)", b.tile_workers + 1));
  }
  lower.push_back(absl::StrFormat("the ranks per node (now %d)", b.ranks_per_node));
  std::string fix = "lower " + absl::StrJoin(lower, ", ");
  if (b.host_workers > 0) {
    fix +=
        ", or run host work on the SparseCore executor "
        "(sparse_core.maximum_parallel_iterations: 0)";
  }
  if (b.sparsecore_executor > 0) {
    fix += ", or turn pipelining off (sparse_core.disable_full_embedding_pipelining: true)";
  }
  return absl::StrFormat(
      "%d ranks on this node x %d busy threads per rank (%s) = %d threads on %d cores: the "
      "cores are oversubscribed and stages will wait for the scheduler; to fix it, %s",
      b.ranks_per_node, b.busy_per_rank(), absl::StrJoin(parts, " + "),
      b.ranks_per_node * b.busy_per_rank(), b.cores, fix);
}

int AvailableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

int HostWorkerThreads(const config::RunConfig& config, int local_ranks) {
  const int configured = config.sparse_core().host_worker_threads();
  if (configured > 0) return configured;
  return std::max(1, AvailableCores() / std::max(1, local_ranks));
}

int LocalRanksFromEnvironment(int world_size) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE",
                           "SLURM_NTASKS_PER_NODE"}) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    const int n = std::atoi(v);
    if (n > 0) return n;
  }
  return std::max(1, world_size);
}

}  // namespace lemrt::runtime
