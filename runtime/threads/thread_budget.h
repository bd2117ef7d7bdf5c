// How many threads one rank keeps busy, against the cores it may run on, so
// lemrt_train can warn once when the ranks on a node oversubscribe them
// (more runnable threads than cores: every stage then waits for the
// scheduler, and MPI's busy-polling waits starve the other threads).
// Pure functions of the config and two counts; thread-safe.
#ifndef LEMRT_RUNTIME_THREADS_THREAD_BUDGET_H_
#define LEMRT_RUNTIME_THREADS_THREAD_BUDGET_H_

#include <string>

#include "proto/config.pb.h"

namespace lemrt::runtime {

// The busy threads of one rank (see Trainer::Run).
struct ThreadBudget {
  int ranks_per_node = 1;
  int cores = 1;               // cores this process may run on
  int tensorcore = 1;          // the main thread (dense step)
  int sparsecore_executor = 0; // 1 with threaded pipelining
  int host_workers = 0;        // 0 when maximum_parallel_iterations == 0
  int tile_workers = 0;        // tile_threads - 1 (the caller runs one share)

  // Busy threads besides the TensorCore's.
  int besides_tensorcore() const { return sparsecore_executor + host_workers + tile_workers; }
  int busy_per_rank() const { return tensorcore + besides_tensorcore(); }
  bool oversubscribed() const { return ranks_per_node * busy_per_rank() > cores; }
};

// The budget of `config` (validated) with `ranks_per_node` ranks sharing
// `cores` cores; host workers as the trainer starts them (HostWorkerThreads).
ThreadBudget ComputeThreadBudget(const config::RunConfig& config, int ranks_per_node, int cores);

// Whether the TensorCore's GEMM team may poll through a dense step
// (device::ThreadTeam's polls_when_held): only where the rank runs no other
// busy thread, whose cores the polling would take (the measurement:
// docs/performance.md, "The dense stage").
bool TensorCoreTeamPolls(const config::RunConfig& config);

// One sentence naming the counts and what to lower when `budget` is
// oversubscribed; empty otherwise.
std::string OversubscriptionWarning(const ThreadBudget& budget);

// Cores this process may run on: sched_getaffinity's CPU count, else
// std::thread::hardware_concurrency, at least 1.
int AvailableCores();

// Host worker threads for `config` (sparse_core.host_worker_threads, or when
// 0 the cores available per rank: AvailableCores() / ranks on this node, at
// least 1). `local_ranks` is the number of ranks sharing this node.
int HostWorkerThreads(const config::RunConfig& config, int local_ranks);

// Ranks on this node from the launcher's environment (Open MPI, MPICH/Hydra,
// Slurm), else `world_size` (as if every rank shared one node).
int LocalRanksFromEnvironment(int world_size);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_THREADS_THREAD_BUDGET_H_
