#include "runtime/threads/core_share.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace lemrt::runtime {
namespace {

cpu_set_t OwnMask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) == 0) {
    // Unknown: as if every online CPU were allowed.
    CPU_ZERO(&set);
    const long n = std::clamp<long>(sysconf(_SC_NPROCESSORS_ONLN), 1, CPU_SETSIZE);
    for (long c = 0; c < n; ++c) CPU_SET(c, &set);
  }
  return set;
}

}  // namespace

int CoreShare::whole_cores() const {
  // A share within a thousandth of a whole core counts as that core.
  return std::max(1, static_cast<int>(std::floor(cores + 1e-3)));
}

CoreShare ComputeCoreShare(const cpu_set_t& mine, std::span<const int64_t> ranks_on_cpu,
                           int local_ranks, int node_cpus) {
  CoreShare s;
  s.mask_cpus = std::max(1, CPU_COUNT(&mine));
  s.local_ranks = std::max(1, local_ranks);
  s.node_cpus = std::max(1, node_cpus);
  double cores = 0;
  int used = 0;
  for (size_t c = 0; c < ranks_on_cpu.size() && c < CPU_SETSIZE; ++c) {
    if (ranks_on_cpu[c] > 0) ++used;
    if (CPU_ISSET(c, &mine)) cores += 1.0 / static_cast<double>(std::max<int64_t>(1, ranks_on_cpu[c]));
  }
  s.cores = cores > 0 ? cores : 1.0 / s.local_ranks;
  s.node_cpus_used = std::max(1, used);
  return s;
}

absl::StatusOr<CoreShare> MeasureCoreShare(Communicator& node_comm) {
  const cpu_set_t mine = OwnMask();
  std::vector<int64_t> counts(CPU_SETSIZE, 0);
  for (int c = 0; c < CPU_SETSIZE; ++c) counts[c] = CPU_ISSET(c, &mine) ? 1 : 0;
  absl::Status st = node_comm.AllReduceSum(std::span<int64_t>(counts));
  if (!st.ok()) return st;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return ComputeCoreShare(mine, counts, node_comm.size(), online > 0 ? static_cast<int>(online) : 1);
}

}  // namespace lemrt::runtime
