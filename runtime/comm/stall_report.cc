#include "runtime/comm/stall_report.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lemrt::runtime {
namespace {

using ChannelState = CollectiveMonitor::ChannelState;

// "step 57, stage sc_forward" (steps counted from 1, as the progress lines).
std::string Where(const ChannelState& c) {
  if (c.step < 0) return absl::StrCat("start-up, stage ", c.stage);
  return absl::StrFormat("step %d, stage %s", c.step + 1, c.stage);
}

// What rank `r`, which has not reached the collective, is doing.
std::string Doing(const CollectiveMonitor::Snapshot& s, int channel) {
  for (int c = 0; c < CollectiveMonitor::kNumChannels; ++c) {
    const ChannelState& ch = s.channels[c];
    if (ch.in_collective) {
      return absl::StrFormat("waiting %.0f s in the %s on the %s communicator in %s", ch.seconds,
                             ch.op, CollectiveMonitor::ChannelName(c), Where(ch));
    }
  }
  const ChannelState& ch = s.channels[channel];
  return absl::StrFormat("busy for %.0f s outside any collective, in %s", ch.seconds, Where(ch));
}

// "has waited 31 s (timeout 30 s) in the all-to-all-v on the SparseCore
// communicator (its collective #12), in step 57, stage sc_forward".
std::string Waiting(int channel, const CollectiveMonitor::Snapshot& mine, double base_s) {
  const ChannelState& me = mine.channels[channel];
  return absl::StrFormat(
      "has waited %.0f s (timeout %.0f s) in the %s on the %s communicator (its collective #%d), "
      "in %s",
      me.seconds, CollectiveTimeout(mine, channel, base_s), me.op,
      CollectiveMonitor::ChannelName(channel), me.entered, Where(me));
}

// "rank 2", "ranks 2, 3", or with a placement "ranks 2, 3 on host b and
// rank 5 on host c" (hosts in the order of their lowest rank listed).
std::string RanksAndHosts(const std::vector<int>& ranks, const Placement* placement) {
  auto list = [](const std::vector<int>& r) {
    return absl::StrCat(r.size() == 1 ? "rank " : "ranks ", absl::StrJoin(r, ", "));
  };
  if (placement == nullptr) return list(ranks);
  std::vector<int> host_order;
  std::vector<std::vector<int>> by_host(placement->hosts.size());
  for (int r : ranks) {
    const int h = placement->host_of_rank[r];
    if (by_host[h].empty()) host_order.push_back(h);
    by_host[h].push_back(r);
  }
  std::vector<std::string> parts;
  for (int h : host_order) {
    parts.push_back(absl::StrCat(list(by_host[h]), " on host ", placement->hosts[h]));
  }
  return absl::StrJoin(parts, " and ");
}

}  // namespace

double CollectiveTimeout(const CollectiveMonitor::Snapshot& s, int channel, double base_s) {
  return std::max(base_s, kStepTimesPerTimeout * s.longest_step_s) +
         s.channels[channel].extra_timeout_s;
}

int StalledChannel(const CollectiveMonitor::Snapshot& s, double base_s) {
  for (int c = 0; c < CollectiveMonitor::kNumChannels; ++c) {
    const ChannelState& ch = s.channels[c];
    if (ch.in_collective && ch.seconds > CollectiveTimeout(s, c, base_s)) return c;
  }
  return -1;
}

namespace {

// The stall sentence without its ending: where this rank waits and which
// ranks did not arrive, doing what.
std::string Findings(int my_rank, int channel, const CollectiveMonitor::Snapshot& mine,
                     double base_s,
                     std::span<const std::optional<CollectiveMonitor::Snapshot>> peers,
                     double answer_wait_s, const Placement* placement) {
  const ChannelState& me = mine.channels[channel];
  std::vector<int> missing_ranks;
  std::vector<std::string> details;
  for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
    if (r == my_rank) continue;
    if (!peers[r].has_value()) {
      missing_ranks.push_back(r);
      details.push_back(absl::StrFormat("rank %d: no answer within %.0f s (stopped, hung or dead)",
                                        r, answer_wait_s));
      continue;
    }
    const ChannelState& theirs = peers[r]->channels[channel];
    // Arrived: as many collectives entered, or waiting in the same one (the
    // counts of ranks may differ by collectives only some ranks make).
    const bool same_collective = theirs.in_collective && theirs.step == me.step &&
                                 std::strcmp(theirs.op, me.op) == 0 &&
                                 std::strcmp(theirs.stage, me.stage) == 0;
    if (theirs.entered >= me.entered || same_collective) continue;
    missing_ranks.push_back(r);
    details.push_back(absl::StrCat("rank ", r, ": ", Doing(*peers[r], channel)));
  }
  std::string out = absl::StrCat("watchdog: rank ", my_rank,
                                 placement != nullptr
                                     ? absl::StrCat(" on host ", placement->host_name(my_rank))
                                     : "",
                                 " ", Waiting(channel, mine, base_s), ": ");
  if (missing_ranks.empty()) {
    absl::StrAppend(&out, "every rank has arrived but the collective does not complete (the "
                          "network or MPI itself is stuck)");
  } else {
    absl::StrAppend(&out, RanksAndHosts(missing_ranks, placement), " did not arrive (",
                    absl::StrJoin(details, "; "), ")");
  }
  return out;
}

}  // namespace

bool StillStalled(const CollectiveMonitor::Snapshot& before, const CollectiveMonitor::Snapshot& now,
                  int channel) {
  const ChannelState& b = before.channels[channel];
  const ChannelState& n = now.channels[channel];
  return n.in_collective && n.entered == b.entered;
}

std::string StallReport(int my_rank, int channel, const CollectiveMonitor::Snapshot& mine,
                        double base_s,
                        std::span<const std::optional<CollectiveMonitor::Snapshot>> peers,
                        double answer_wait_s, const Placement* placement) {
  return absl::StrCat(Findings(my_rank, channel, mine, base_s, peers, answer_wait_s, placement),
                      "; aborting the job.");
}

bool CutOff(int my_rank, const Placement& placement,
            std::span<const std::optional<CollectiveMonitor::Snapshot>> peers) {
  if (placement.hosts.size() < 2) return false;
  const int my_host = placement.host_of_rank[my_rank];
  for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
    if (placement.host_of_rank[r] != my_host && peers[r].has_value()) return false;
  }
  return true;
}

std::string CutOffReport(int my_rank, int channel, const CollectiveMonitor::Snapshot& mine,
                         double base_s,
                         std::span<const std::optional<CollectiveMonitor::Snapshot>> peers,
                         double answer_wait_s, const Placement& placement) {
  const int my_host = placement.host_of_rank[my_rank];
  std::vector<int> others;
  for (int r = 0; r < placement.num_ranks(); ++r) {
    if (placement.host_of_rank[r] != my_host) others.push_back(r);
  }
  return absl::StrCat(
      Findings(my_rank, channel, mine, base_s, peers, answer_wait_s, &placement), "; rank ",
      my_rank, " on host ", placement.hosts[my_host], " cannot reach ",
      RanksAndHosts(others, &placement),
      " (this host is cut off from the others, or every other host stopped); ending this rank.");
}

}  // namespace lemrt::runtime
