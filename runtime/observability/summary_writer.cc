#include "runtime/observability/summary_writer.h"

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"

namespace lemrt::runtime {

std::string SummaryJson(const summary::RunSummary& summary) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(summary, &json, options);
  return json;
}

absl::Status WriteSummaryJson(const summary::RunSummary& summary, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    // errno names the cause (no such directory, permission, disk full).
    if (!out) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write '", tmp, "'"));
    out << SummaryJson(summary);
    if (!out.flush()) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write '", tmp, "'"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno,
                               absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  return absl::OkStatus();
}

std::string SummaryTable(const summary::RunSummary& s) {
  std::string teacher = s.eval().teacher_auc().has_number_value()
                            ? absl::StrFormat("%.4f", s.eval().teacher_auc().number_value())
                            : "n/a";
  std::string out;
  auto row = [&](const std::string& k, const std::string& v) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %s\n", k, v));
  };
  out = "lemrt run summary\n";
  row("chips x SparseCores", absl::StrFormat("%d x %d", s.world_size(), s.sparse_cores_per_chip()));
  row("global batch x steps", absl::StrFormat("%d x %d", s.global_batch(), s.steps()));
  row("samples/s", absl::StrFormat("%.0f", s.samples_per_sec()));
  row("step ms mean/p50/p99", absl::StrFormat("%.2f / %.2f / %.2f", s.step_time_ms().mean(),
                                              s.step_time_ms().p50(), s.step_time_ms().p99()));
  row("stage ms host/SC-F/TC/SC-B",
      absl::StrFormat("%.2f / %.2f / %.2f / %.2f", s.breakdown_ms().host(),
                      s.breakdown_ms().sc_forward(), s.breakdown_ms().tc(),
                      s.breakdown_ms().sc_backward()));
  row("train loss (last)", absl::StrFormat("%.5f", s.train().loss_last()));
  // Absent metrics are undefined (an eval set without rows, or of one class,
  // or no final evaluation: a run stopped by a signal skips it).
  const std::string auc = s.eval().has_auc() ? absl::StrFormat("%.4f", s.eval().auc())
                          : s.has_stopped()  ? "absent (not evaluated: the run was stopped)"
                                             : "absent (undefined for this eval set)";
  const std::string logloss =
      s.eval().has_logloss() ? absl::StrFormat("%.5f", s.eval().logloss()) : "absent";
  row("eval AUC / teacher", absl::StrFormat("%s / %s", auc, teacher));
  row("eval logloss", absl::StrFormat("%s (%d samples)", logloss, s.eval().samples()));
  row("ids total/dedup/unique", absl::StrFormat("%.0f / %.0f / %.0f", s.ids().total(),
                                                s.ids().after_dedup(),
                                                s.ids().unique_per_partition()));
  row("params L2", absl::StrFormat("%.6f", s.params_l2()));
  row("model checksum", s.model_checksum());
  return out;
}

}  // namespace lemrt::runtime
