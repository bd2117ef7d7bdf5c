// The cores one rank owns: its CPU affinity mask (as mpirun, a batch
// scheduler or taskset set it) shared with the other ranks on its node. A CPU
// that k local ranks may run on counts 1/k for each of them, so ranks bound
// to disjoint cores own their masks, and ranks left unbound on the same CPUs
// own an equal share of them. Pure data plus one collective to measure it.
#ifndef LEMRT_RUNTIME_THREADS_CORE_SHARE_H_
#define LEMRT_RUNTIME_THREADS_CORE_SHARE_H_

#include <sched.h>

#include <span>

#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

struct CoreShare {
  // CPUs in this process's affinity mask.
  int mask_cpus = 1;
  // Ranks on this node (the node communicator's size).
  int local_ranks = 1;
  // This rank's share: sum over its mask's CPUs of 1 / (local ranks whose
  // masks hold that CPU). > 0.
  double cores = 1;
  // Whole cores of it, at least 1: what thread counts are planned from.
  int whole_cores() const;
  // CPUs online on this node (sysconf), and in the union of the local
  // ranks' masks.
  int node_cpus = 1;
  int node_cpus_used = 1;
};

// Pure: the share of a rank with mask `mine` when ranks_on_cpu[c] local
// ranks (this one included) hold CPU c in their masks.
CoreShare ComputeCoreShare(const cpu_set_t& mine, std::span<const int64_t> ranks_on_cpu,
                           int local_ranks, int node_cpus);

// Collective over `node_comm`, the ranks of this node (one all-reduce of
// CPU_SETSIZE int64 counts). Errors: the communicator's.
absl::StatusOr<CoreShare> MeasureCoreShare(Communicator& node_comm);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_THREADS_CORE_SHARE_H_
