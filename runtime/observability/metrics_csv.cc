#include "runtime/observability/metrics_csv.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lemrt::runtime {
namespace {

std::string Optional(const std::optional<double>& v) {
  return v.has_value() ? absl::StrFormat("%.6f", *v) : std::string();
}

std::string Duration(double sec) {
  if (!(sec >= 0) || !std::isfinite(sec)) return "?";
  const int64_t s = static_cast<int64_t>(sec + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

}  // namespace

std::string MetricsCsvLine(const MetricsRow& r, int tasks) {
  std::string line = absl::StrFormat("%d,%.6f,%.1f,%s,%s,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.6g,%.6g,%s,%s,%s",
                         r.step, r.loss, r.samples_per_sec, Optional(r.eval_auc),
                         Optional(r.eval_logloss), r.host_ms, r.sc_forward_ms, r.tc_ms,
                         r.sc_backward_ms, r.exchange_ms, r.step_ms, r.dense_lr, r.embedding_lr,
                         Optional(r.eval_ne), Optional(r.eval_calibration), Optional(r.eval_gauc));
  for (int k = 0; k < 5 * tasks; ++k) {
    line += ",";
    if (k < static_cast<int>(r.eval_tasks.size())) line += Optional(r.eval_tasks[k]);
  }
  return line;
}

std::string MetricsCsvHeader(const std::vector<std::string>& tasks) {
  std::string header = kMetricsCsvHeader;
  for (const std::string& t : tasks) {
    for (const char* metric : {"auc", "logloss", "ne", "calibration", "gauc"}) {
      absl::StrAppend(&header, ",eval_", metric, "_", t);
    }
  }
  return header;
}

absl::StatusOr<std::unique_ptr<MetricsCsv>> MetricsCsv::Open(
    const std::string& path, const std::vector<std::string>& tasks) {
  std::ofstream out(path, std::ios::trunc);
  if (!out || !(out << MetricsCsvHeader(tasks) << "\n") || !out.flush()) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write the metrics file '", path, "' (--metrics_csv)"));
  }
  return std::unique_ptr<MetricsCsv>(
      new MetricsCsv(path, std::move(out), static_cast<int>(tasks.size())));
}

absl::Status MetricsCsv::Append(const MetricsRow& row) {
  out_ << MetricsCsvLine(row, tasks_) << "\n";
  if (!out_.flush()) return absl::InternalError(absl::StrCat("write to '", path_, "' failed"));
  return absl::OkStatus();
}

std::string ProgressLine(int64_t step, int64_t total_steps, double loss, double samples_per_sec,
                         double mean_step_sec) {
  return absl::StrFormat("step %d/%d  loss %.5f  samples/s %.0f  ETA %s", step, total_steps, loss,
                         samples_per_sec, Duration((total_steps - step) * mean_step_sec));
}

}  // namespace lemrt::runtime
