#include "runtime/comm/placement.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace lemrt::runtime {
namespace {

std::string FirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) return "?";
  return line;
}

// "net:[4026531840]" -> "net:[4026531840]"; "?" when unreadable.
std::string Namespace(const char* name) {
  const std::string path = absl::StrCat("/proc/self/ns/", name);
  char target[128];
  const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return absl::StrCat(name, ":?");
  return std::string(target, n);
}

// "ranks 0, 1" or "rank 2".
std::string RankList(const std::vector<int>& ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ", absl::StrJoin(ranks, ", "));
}

}  // namespace

HostIdentity LocalHostIdentity() {
  HostIdentity id;
  char name[HOST_NAME_MAX + 1] = {};
  id.name = gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0' ? name : "unknown-host";
  id.key = absl::StrJoin({FirstLine("/proc/sys/kernel/random/boot_id"), Namespace("net"),
                          Namespace("ipc"), Namespace("mnt"), Namespace("pid")},
                         " ");
  return id;
}

Placement PlacementFromNames(std::span<const std::string> names) {
  Placement p;
  std::map<std::string, int> index;
  for (const std::string& name : names) {
    auto [it, added] = index.try_emplace(name, static_cast<int>(p.hosts.size()));
    if (added) {
      p.hosts.push_back(name);
      p.ranks_on_host.push_back(0);
    }
    p.host_of_rank.push_back(it->second);
    p.local_rank.push_back(p.ranks_on_host[it->second]++);
  }
  return p;
}

Placement SingleHostPlacement(int num_ranks, const std::string& name) {
  const std::vector<std::string> names(num_ranks, name);
  return PlacementFromNames(names);
}

absl::Status CheckHostNamesDistinct(std::span<const HostIdentity> ranks) {
  // name -> key -> ranks, keys in the order of their lowest rank.
  std::map<std::string, std::vector<std::pair<std::string, std::vector<int>>>> hosts;
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    auto& keys = hosts[ranks[r].name];
    auto it = std::find_if(keys.begin(), keys.end(),
                           [&](const auto& k) { return k.first == ranks[r].key; });
    if (it == keys.end()) it = keys.insert(keys.end(), {ranks[r].key, {}});
    it->second.push_back(r);
  }
  std::vector<std::string> shared;
  for (const auto& [name, keys] : hosts) {
    if (keys.size() < 2) continue;
    std::vector<std::string> groups;
    for (const auto& [key, on_host] : keys) groups.push_back(RankList(on_host));
    shared.push_back(absl::StrCat("hostname \"", name, "\" is shared by ", keys.size(),
                                  " different hosts (", absl::StrJoin(groups, " on one, "),
                                  " on another)"));
  }
  if (shared.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      absl::StrJoin(shared, "; "),
      ": Open MPI takes ranks with one hostname for one host, and its shared-memory transport "
      "fails between hosts; give every host its own hostname (ranks are on one host when they "
      "share the kernel boot id and the network, IPC, mount and PID namespaces)"));
}

absl::StatusOr<std::vector<HostIdentity>> GatherHostIdentities(Communicator& comm,
                                                               const HostIdentity& mine) {
  const int n = comm.size();
  // The name and key, NUL-separated, sent whole to every rank.
  const std::string packed = absl::StrCat(mine.name, std::string(1, '\0'), mine.key);
  const int64_t length = static_cast<int64_t>(packed.size());
  std::vector<int64_t> lengths_out(n, length), lengths_in(n);
  absl::Status st = comm.AllToAll(lengths_out, lengths_in);
  if (!st.ok()) return st;
  std::vector<int64_t> send_offsets(n, 0), recv_offsets(n);
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    recv_offsets[r] = total;
    total += lengths_in[r];
  }
  std::string all(total, '\0');
  st = comm.AllToAllv(packed.data(), lengths_out, send_offsets, all.data(), lengths_in,
                      recv_offsets);
  if (!st.ok()) return st;
  std::vector<HostIdentity> out(n);
  for (int r = 0; r < n; ++r) {
    const std::string one = all.substr(recv_offsets[r], lengths_in[r]);
    const size_t nul = one.find('\0');
    out[r].name = one.substr(0, nul);
    out[r].key = nul == std::string::npos ? "" : one.substr(nul + 1);
  }
  return out;
}

absl::StatusOr<Placement> GatherPlacement(Communicator& comm, const HostIdentity& mine) {
  absl::StatusOr<std::vector<HostIdentity>> all = GatherHostIdentities(comm, mine);
  if (!all.ok()) return all.status();
  absl::Status st = CheckHostNamesDistinct(*all);
  if (!st.ok()) return st;
  std::vector<std::string> names;
  for (const HostIdentity& id : *all) names.push_back(id.name);
  return PlacementFromNames(names);
}

std::string RankRanges(std::span<const int> ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    absl::StrAppend(&out, out.empty() ? "" : ", ", ranks[i]);
    if (j > i) absl::StrAppend(&out, "-", ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string DescribePlacement(const Placement& placement) {
  std::vector<std::vector<int>> ranks(placement.hosts.size());
  for (int r = 0; r < placement.num_ranks(); ++r) ranks[placement.host_of_rank[r]].push_back(r);
  std::vector<std::string> hosts;
  for (size_t h = 0; h < ranks.size(); ++h) {
    hosts.push_back(absl::StrCat(placement.hosts[h], " (",
                                 ranks[h].size() == 1 ? "rank " : "ranks ", RankRanges(ranks[h]),
                                 ")"));
  }
  return absl::StrCat(placement.num_ranks(), placement.num_ranks() == 1 ? " rank" : " ranks",
                      " on ", hosts.size(), hosts.size() == 1 ? " host: " : " hosts: ",
                      absl::StrJoin(hosts, ", "));
}

HostBytes SplitByHost(const Placement& placement, int rank,
                      std::span<const int64_t> bytes_to_rank) {
  HostBytes out;
  const int host = placement.host_of_rank[rank];
  for (int r = 0; r < static_cast<int>(bytes_to_rank.size()); ++r) {
    if (r == rank) continue;
    (placement.host_of_rank[r] == host ? out.within_host : out.between_hosts) += bytes_to_rank[r];
  }
  return out;
}

}  // namespace lemrt::runtime
