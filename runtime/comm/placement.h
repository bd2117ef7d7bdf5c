// Where the ranks run: each rank's host (its hostname), the ranks per host
// and each rank's order on its host, gathered once at start-up through the
// Communicator; the check that no two hosts share a hostname; and the split
// of a personalised exchange's bytes into within-host and between-host.
// Plain data and pure functions besides the gather (collective) and
// LocalHostIdentity (reads the system); thread-compatible.
//
// What "the same host" means. Open MPI groups ranks by hostname and puts the
// ranks of one name on its shared-memory transport, which needs them to
// share one kernel and its shared-memory files and processes. The host key
// (LocalHostIdentity) is the kernel's boot id (/proc/sys/kernel/random/boot_id,
// new at every boot of every machine) and the inodes of this process's
// network, IPC, mount and PID namespaces (/proc/self/ns/*): two ranks with
// equal keys share a machine, its /dev/shm and /tmp, its System V IPC and
// each other's process ids; an emulated host (a network namespace with its
// own mounts) or a container differs in at least one of them.
#ifndef LEMRT_RUNTIME_COMM_PLACEMENT_H_
#define LEMRT_RUNTIME_COMM_PLACEMENT_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

// One rank's host as it names and identifies it.
struct HostIdentity {
  std::string name;  // gethostname()
  std::string key;   // "boot_id net ipc mnt pid" (above); equal keys = one host
};

// This process's identity. Never fails: a part that cannot be read is "?"
// (a name that cannot be read is "unknown-host").
HostIdentity LocalHostIdentity();

// Rank -> host, grouped by hostname. Hosts are numbered in the order of
// their lowest rank; a host's ranks are ordered by rank.
struct Placement {
  std::vector<std::string> hosts;  // host index -> hostname
  std::vector<int> host_of_rank;   // rank -> host index
  std::vector<int> local_rank;     // rank -> its order among its host's ranks, from 0
  std::vector<int> ranks_on_host;  // host index -> ranks on it

  int num_ranks() const { return static_cast<int>(host_of_rank.size()); }
  const std::string& host_name(int rank) const { return hosts[host_of_rank[rank]]; }
};

// The placement of ranks whose hostnames are `names` (index = rank).
Placement PlacementFromNames(std::span<const std::string> names);

// The placement of a job whose ranks all run on one host called `name`
// (a world of one, in-process tests).
Placement SingleHostPlacement(int num_ranks, const std::string& name);

// FailedPrecondition when ranks with one hostname have different host keys
// (distinct hosts sharing a name), with a sentence naming the name and the
// ranks on each of its hosts; OK otherwise. Index = rank.
absl::Status CheckHostNamesDistinct(std::span<const HostIdentity> ranks);

// Collective: every rank's identity on every rank (index = rank). One
// all-to-all of the lengths (8 B per rank pair) and one all-to-all-v of the
// names and keys (about 100 B per rank pair).
absl::StatusOr<std::vector<HostIdentity>> GatherHostIdentities(Communicator& comm,
                                                               const HostIdentity& mine);

// Collective: gathers the identities, checks them (CheckHostNamesDistinct)
// and returns the placement. Every rank returns the same result.
absl::StatusOr<Placement> GatherPlacement(Communicator& comm, const HostIdentity& mine);

// "0-3, 6, 8-9" from ascending ranks.
std::string RankRanges(std::span<const int> ranks);

// One line: "4 ranks on 2 hosts: a (ranks 0-1), b (ranks 2-3)".
std::string DescribePlacement(const Placement& placement);

// Bytes a rank sends to other ranks, by where they are. Its own block (a
// copy, no transport) is in neither.
struct HostBytes {
  int64_t within_host = 0;    // to other ranks on its host (shared memory)
  int64_t between_hosts = 0;  // to ranks on other hosts (the network)
};

// The split of `bytes_to_rank` (index = destination rank, sizes
// placement.num_ranks()) sent by `rank`.
HostBytes SplitByHost(const Placement& placement, int rank, std::span<const int64_t> bytes_to_rank);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_PLACEMENT_H_
