// The end-of-run report lemrt_train prints after the summary table: the
// step-time breakdown per stage (mean, p50, p99, share of the step), the
// overlap achieved, per-table id counters (with limits, minibatches and
// dropped ids when this build reports them), the memory plan per chip (HBM by
// category, SPMEM per tile) when the summary has it, the placement (each
// host's ranks and the exchange's bytes per step sent within and between
// hosts), and the diagnosis lines.
// Stateless; thread-safe.
#ifndef LEMRT_RUNTIME_OBSERVABILITY_RUN_REPORT_H_
#define LEMRT_RUNTIME_OBSERVABILITY_RUN_REPORT_H_

#include <string>

#include "proto/summary.pb.h"

namespace lemrt::runtime {

// The report of `s` (filled by RunRecorder::Finish) as plain text.
std::string RunReport(const summary::RunSummary& s);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_RUN_REPORT_H_
