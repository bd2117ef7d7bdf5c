// The observability section: trace and metrics paths, the traced steps.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/config_check.h"

namespace lemrt::config {

void CheckObservability(const RunConfig& c, ConfigErrors& errors) {
  if (!c.has_observability()) return;
  const ObservabilityConfig& o = c.observability();
  if (o.has_trace_json() && o.trace_json().empty()) {
    errors.Fail({{"observability"}, {"trace_json"}}, "is empty; name a file or leave it unset");
  }
  if (o.has_metrics_csv() && o.metrics_csv().empty()) {
    errors.Fail({{"observability"}, {"metrics_csv"}}, "is empty; name a file or leave it unset");
  }
  if ((o.has_trace_first_step() || o.has_trace_last_step()) && !o.has_trace_json()) {
    errors.Fail({{"observability"}, {"trace_first_step"}},
                "trace steps are set but trace_json is not (nothing would be traced)");
  }
  if (o.trace_first_step() < 1) {
    errors.Fail({{"observability"}, {"trace_first_step"}},
                absl::StrCat("must be >= 1 (steps count from 1), got ", o.trace_first_step()));
  } else if (o.trace_last_step() < o.trace_first_step()) {
    errors.Fail({{"observability"}, {"trace_last_step"}},
                absl::StrFormat("is %d, before trace_first_step %d", o.trace_last_step(),
                                o.trace_first_step()));
  }
}

}  // namespace lemrt::config
