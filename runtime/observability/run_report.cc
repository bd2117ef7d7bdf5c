#include "runtime/observability/run_report.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/comm/placement.h"

namespace lemrt::runtime {
namespace {

std::string ValueText(const google::protobuf::Value& v) {
  return v.has_number_value() ? absl::StrFormat("%.0f", v.number_value()) : "-";
}

// Each host's ranks and what they sent per step, within and between hosts.
void AppendPlacement(const summary::PlacementStats& p, std::string* out) {
  constexpr double kMB = 1e6;
  absl::StrAppendFormat(out,
                        "placement: %d ranks on %d %s; exchange sent per step: %.3f MB within "
                        "hosts, %.3f MB between hosts\n",
                        p.ranks_size(), p.hosts(), p.hosts() == 1 ? "host" : "hosts",
                        p.exchange_bytes_within_host_per_step() / kMB,
                        p.exchange_bytes_between_hosts_per_step() / kMB);
  absl::StrAppendFormat(out, "  %-24s %-16s %14s %14s\n", "host", "ranks", "within MB",
                        "between MB");
  // Hosts in the order of their lowest rank.
  std::vector<std::string> hosts;
  std::map<std::string, std::vector<int>> ranks;
  std::map<std::string, std::pair<double, double>> bytes;
  for (const auto& r : p.ranks()) {
    if (!ranks.contains(r.host())) hosts.push_back(r.host());
    ranks[r.host()].push_back(r.rank());
    bytes[r.host()].first += r.exchange_bytes_within_host_per_step();
    bytes[r.host()].second += r.exchange_bytes_between_hosts_per_step();
  }
  for (const std::string& h : hosts) {
    absl::StrAppendFormat(out, "  %-24s %-16s %14.3f %14.3f\n", h, RankRanges(ranks[h]),
                          bytes[h].first / kMB, bytes[h].second / kMB);
  }
}

}  // namespace

std::string RunReport(const summary::RunSummary& s) {
  std::string out;
  if (s.stages_size() > 0) {
    absl::StrAppend(&out, "step-time breakdown (ms per step, all chips)\n");
    absl::StrAppendFormat(&out, "  %-12s %9s %9s %9s %7s\n", "stage", "mean", "p50", "p99",
                          "share");
    for (const auto& st : s.stages()) {
      absl::StrAppendFormat(&out, "  %-12s %9.3f %9.3f %9.3f %6.1f%%\n", st.name(), st.mean_ms(),
                            st.p50_ms(), st.p99_ms(), 100 * st.share());
    }
    absl::StrAppendFormat(&out,
                          "  overlap: %.1f%% of stage time hidden (stages %.1f ms, busy %.1f ms; "
                          "exchange is inside sc_forward / sc_backward)\n",
                          100 * s.overlap().fraction(), s.overlap().stage_sum_ms(),
                          s.overlap().busy_ms());
    double step_ms = 0;
    for (const auto& st : s.stages()) {
      if (st.name() == "step") step_ms = st.mean_ms();
    }
    absl::StrAppendFormat(&out, "  bookkeeping (breakdown, counters, trace, CSV): %.4f ms per step (%.2f%%)\n",
                          s.recorder_ms_per_step(),
                          step_ms > 0 ? 100 * s.recorder_ms_per_step() / step_ms : 0);
  }
  if (s.tables_size() > 0) {
    absl::StrAppend(&out, "tables (all steps and chips)\n");
    absl::StrAppendFormat(&out, "  %-12s %12s %12s %12s %9s %9s %9s %9s %6s\n", "table", "ids",
                          "after dedup", "unique", "max/part", "limit", "max uniq", "limit",
                          "skew");
    for (const auto& t : s.tables()) {
      absl::StrAppendFormat(&out, "  %-12s %12.0f %12.0f %12.0f %9.0f %9s %9s %9s %6.2f\n",
                            t.name(), t.ids(), t.ids_after_dedup(), t.unique_ids(),
                            t.max_ids_per_partition(), ValueText(t.max_ids_per_partition_limit()),
                            ValueText(t.max_unique_ids_per_partition()),
                            ValueText(t.max_unique_ids_per_partition_limit()),
                            t.partition_skew());
    }
  }
  if (s.has_memory() && s.memory().hbm_capacity_bytes() > 0) {
    const auto& m = s.memory();
    constexpr double kMiB = 1 << 20;
    absl::StrAppend(&out, "memory plan (per chip)\n");
    absl::StrAppendFormat(&out, "  HBM tables + optimizer slots %10.1f MiB (padding %.1f MiB)\n",
                          m.hbm_table_bytes() / kMiB, m.padding_bytes() / kMiB);
    absl::StrAppendFormat(&out, "  HBM stack (peak)             %10.1f MiB\n",
                          m.hbm_stack_bytes() / kMiB);
    absl::StrAppendFormat(&out, "  HBM heap                     %10.1f MiB\n",
                          m.hbm_heap_bytes() / kMiB);
    absl::StrAppendFormat(&out, "  HBM total                    %10.1f MiB of %.1f MiB (%.1f%%)\n",
                          m.hbm_bytes_per_chip() / kMiB, m.hbm_capacity_bytes() / kMiB,
                          100 * m.hbm_bytes_per_chip() / m.hbm_capacity_bytes());
    absl::StrAppendFormat(&out, "  SPMEM per tile               %10.1f KiB\n",
                          m.spmem_bytes_per_tile() / 1024);
  }
  if (s.placement().ranks_size() > 0) AppendPlacement(s.placement(), &out);
  if (s.has_preprocess()) {
    absl::StrAppendFormat(&out, "minibatches per step: mean %.2f, max %d; ids dropped: %.0f\n",
                          s.preprocess().mean_minibatches(), s.preprocess().max_minibatches(),
                          s.preprocess().ids_dropped());
  }
  for (const auto& line : s.diagnosis()) absl::StrAppend(&out, "diagnosis: ", line, "\n");
  return out;
}

}  // namespace lemrt::runtime
