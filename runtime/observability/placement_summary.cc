#include "runtime/observability/placement_summary.h"

#include <vector>

namespace lemrt::runtime {

absl::Status FillPlacement(Communicator& comm, const Placement& placement,
                           const HostBytesPerStep& mine, summary::PlacementStats* out) {
  const int n = comm.size();
  // Rank r's bytes at [2r, 2r + 1]; every other rank adds zeros there.
  std::vector<double> bytes(2 * static_cast<size_t>(n), 0.0);
  bytes[2 * comm.rank()] = mine.within_host;
  bytes[2 * comm.rank() + 1] = mine.between_hosts;
  absl::Status st = comm.AllReduceSum(std::span<double>(bytes));
  if (!st.ok()) return st;
  out->Clear();
  out->set_hosts(static_cast<int>(placement.hosts.size()));
  double within = 0, between = 0;
  for (int r = 0; r < n; ++r) {
    summary::RankPlacement* rank = out->add_ranks();
    rank->set_rank(r);
    rank->set_host(placement.host_name(r));
    rank->set_local_rank(placement.local_rank[r]);
    rank->set_ranks_on_host(placement.ranks_on_host[placement.host_of_rank[r]]);
    rank->set_exchange_bytes_within_host_per_step(bytes[2 * r]);
    rank->set_exchange_bytes_between_hosts_per_step(bytes[2 * r + 1]);
    within += bytes[2 * r];
    between += bytes[2 * r + 1];
  }
  out->set_exchange_bytes_within_host_per_step(within);
  out->set_exchange_bytes_between_hosts_per_step(between);
  return absl::OkStatus();
}

}  // namespace lemrt::runtime
