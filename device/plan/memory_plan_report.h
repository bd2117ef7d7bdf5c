// How the static memory plan (memory_plan.h) is shown: the text
// lemrt_train --dry_run prints (per table, per stack, the HBM and SPMEM
// totals) and the run summary's `memory` object. Pure functions of the plan;
// thread-safe.
#ifndef LEMRT_DEVICE_PLAN_MEMORY_PLAN_REPORT_H_
#define LEMRT_DEVICE_PLAN_MEMORY_PLAN_REPORT_H_

#include <string>

#include "device/plan/memory_plan.h"
#include "proto/summary.pb.h"

namespace lemrt::device {

// The human-readable plan printed by lemrt_train --dry_run: a row per table
// (dim, padded dim, vocab, slots, bytes, padding, stack shares), a block per
// stack (members, features, ids per sample, SPMEM terms, gather operand,
// limits, "(serialized)"), the HBM total with its terms, padding and SPMEM
// per tile against the limit, and what narrow-table packing saves.
std::string FormatMemoryPlan(const MemoryPlan& plan);

// The summary's `memory` object (docs/observability.md): totals per chip and
// one entry per stack. Replaces what `out` held.
void FillMemoryStats(const MemoryPlan& plan, summary::MemoryStats* out);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_PLAN_MEMORY_PLAN_REPORT_H_
