// The timeline of one chip (rank) as Chrome trace events, and the collective
// that merges every chip's timeline into one trace-event JSON file (opens in
// Perfetto and chrome://tracing). Thread-compatible.
//
// Layout of the merged file:
//   {"displayTimeUnit": "ms", "traceEvents": [
//     metadata:  process "chip R" (pid R), threads (tid):
//                0 "Host", 1..S "SparseCore 0..S-1", S+1 "TensorCore",
//                S+2 "Exchange"
//     spans:     {"ph": "X", "name", "pid", "tid", "ts", "dur" (microseconds
//                 since the chip's trace origin), "args": {"step", ...sizes}}
//     counters:  {"ph": "C", "name", "pid", "ts", "args": {<series>: value}}
//   ]}
// Each chip's origin is its own steady clock at TraceBuffer construction
// (taken at the same collective point on every chip, so chips line up to
// within the skew of that collective).
#ifndef LEMRT_RUNTIME_OBSERVABILITY_TRACE_BUFFER_H_
#define LEMRT_RUNTIME_OBSERVABILITY_TRACE_BUFFER_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

// Threads of a chip's process in the trace.
struct TraceThreads {
  int sparse_cores = 1;  // S
  int host() const { return 0; }
  int sparse_core(int local_sc) const { return 1 + local_sc; }
  int tensor_core() const { return 1 + sparse_cores; }
  int exchange() const { return 2 + sparse_cores; }
};

// One argument of an event. `name` must be a string literal (or outlive the
// buffer).
struct TraceArg {
  const char* name = nullptr;
  int64_t value = 0;
};

class TraceBuffer {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kMaxArgs = 5;

  explicit TraceBuffer(TraceThreads threads);

  // Records a span on thread `tid` from `begin` to `end`. `name` must be a
  // string literal; `step` (counted from 1) is written as the first argument.
  // At most kMaxArgs further `args` (extra ones are CHECK-failed).
  void AddSpan(int tid, const char* name, int64_t step, Clock::time_point begin,
               Clock::time_point end, std::initializer_list<TraceArg> args = {});

  // Records counter `name` (string literal) with series `series` = value at `t`.
  void AddCounter(const char* name, const char* series, Clock::time_point t, int64_t value);

  int64_t size() const { return static_cast<int64_t>(events_.size()); }

  // This chip's events as comma-separated JSON objects (no brackets), with
  // pid = `chip`, including the process and thread metadata.
  std::string JsonEvents(int chip) const;

 private:
  struct Event {
    char phase;  // 'X' or 'C'
    int tid;
    const char* name;
    const char* series;  // counters only
    int64_t ts_ns, dur_ns;
    int64_t step;
    int num_args;
    std::array<TraceArg, kMaxArgs> args;
  };
  TraceThreads threads_;
  Clock::time_point origin_;
  std::vector<Event> events_;
};

// Collective: gathers every chip's JsonEvents onto rank 0, which writes the
// merged JSON to `path` (temporary file + rename). Costs one broadcast per
// rank of that rank's events (about 150 bytes per event). Errors on rank 0
// (PermissionDenied / Internal naming the path) are agreed by all ranks.
absl::Status WriteMergedTrace(Communicator& comm, const TraceBuffer& buffer,
                              const std::string& path);

// The merged file's text from the chips' JsonEvents, in chip order.
std::string MergedTraceJson(const std::vector<std::string>& chip_events);

// Parses "A:B" (steps counted from 1, both inclusive; "A:" = A to the end,
// ":B" = 1 to B, "N" = just step N) into [*first, *last]. `end_step` is the
// value of an open end. InvalidArgument naming the text when malformed, when
// A < 1 or when B < A.
absl::Status ParseStepRange(std::string_view text, int64_t end_step, int64_t* first,
                            int64_t* last);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_TRACE_BUFFER_H_
