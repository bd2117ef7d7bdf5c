#include "runtime/observability/trace_buffer.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "glog/logging.h"

namespace lemrt::runtime {
namespace {

int64_t Ns(TraceBuffer::Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

void AppendMetadata(int chip, const TraceThreads& threads, std::string* out) {
  absl::StrAppendFormat(out,
                        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
                        "\"args\":{\"name\":\"chip %d\"}},\n"
                        "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
                        "\"args\":{\"sort_index\":%d}}",
                        chip, chip, chip, chip);
  auto thread = [&](int tid, const std::string& name) {
    absl::StrAppendFormat(out,
                          ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                          "\"args\":{\"name\":\"%s\"}},\n"
                          "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,"
                          "\"args\":{\"sort_index\":%d}}",
                          chip, tid, name, chip, tid, tid);
  };
  thread(threads.host(), "Host");
  for (int l = 0; l < threads.sparse_cores; ++l) {
    thread(threads.sparse_core(l), absl::StrCat("SparseCore ", l));
  }
  thread(threads.tensor_core(), "TensorCore");
  thread(threads.exchange(), "Exchange");
}

}  // namespace

TraceBuffer::TraceBuffer(TraceThreads threads) : threads_(threads), origin_(Clock::now()) {}

void TraceBuffer::AddSpan(int tid, const char* name, int64_t step, Clock::time_point begin,
                          Clock::time_point end, std::initializer_list<TraceArg> args) {
  CHECK_LE(args.size(), static_cast<size_t>(kMaxArgs)) << name;
  Event e{'X', tid, name, nullptr, Ns(begin - origin_), Ns(end - begin), step,
          static_cast<int>(args.size()), {}};
  std::copy(args.begin(), args.end(), e.args.begin());
  events_.push_back(e);
}

void TraceBuffer::AddCounter(const char* name, const char* series, Clock::time_point t,
                             int64_t value) {
  Event e{'C', 0, name, series, Ns(t - origin_), 0, 0, 1, {}};
  e.args[0] = {series, value};
  events_.push_back(e);
}

std::string TraceBuffer::JsonEvents(int chip) const {
  std::string out;
  out.reserve(160 * (events_.size() + 8));
  AppendMetadata(chip, threads_, &out);
  for (const Event& e : events_) {
    if (e.phase == 'C') {
      absl::StrAppendFormat(&out,
                            ",\n{\"ph\":\"C\",\"name\":\"%s\",\"pid\":%d,\"ts\":%.3f,"
                            "\"args\":{\"%s\":%d}}",
                            e.name, chip, e.ts_ns / 1e3, e.series, e.args[0].value);
      continue;
    }
    absl::StrAppendFormat(&out,
                          ",\n{\"ph\":\"X\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                          "\"dur\":%.3f,\"args\":{\"step\":%d",
                          e.name, chip, e.tid, e.ts_ns / 1e3, e.dur_ns / 1e3, e.step);
    for (int a = 0; a < e.num_args; ++a) {
      absl::StrAppendFormat(&out, ",\"%s\":%d", e.args[a].name, e.args[a].value);
    }
    out += "}}";
  }
  return out;
}

std::string MergedTraceJson(const std::vector<std::string>& chip_events) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (size_t c = 0; c < chip_events.size(); ++c) {
    if (c > 0) out += ",\n";
    out += chip_events[c];
  }
  out += "\n]}\n";
  return out;
}

absl::Status WriteMergedTrace(Communicator& comm, const TraceBuffer& buffer,
                              const std::string& path) {
  const std::string mine = buffer.JsonEvents(comm.rank());
  std::vector<std::string> all;
  absl::Status st;
  for (int r = 0; r < comm.size() && st.ok(); ++r) {
    std::string bytes = comm.rank() == r ? mine : std::string();
    st = comm.Broadcast(&bytes, r);
    if (comm.rank() == 0) all.push_back(std::move(bytes));
  }
  if (!st.ok()) return st;
  absl::Status local;
  if (comm.rank() == 0) {
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      if (!out) {
        local = absl::PermissionDeniedError(
            absl::StrCat("cannot write the trace file '", tmp, "' (--trace_json)"));
      } else {
        out << MergedTraceJson(all);
        if (!out.flush()) local = absl::InternalError(absl::StrCat("write to '", tmp, "' failed"));
      }
    }
    if (local.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
      local = absl::InternalError(absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
    }
  }
  return AgreeOnStatus(comm, local);
}

absl::Status ParseStepRange(std::string_view text_view, int64_t end_step, int64_t* first,
                            int64_t* last) {
  const std::string text(text_view);
  auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--trace_steps='", text, "': ", why, " (expected A:B, steps counted from 1, e.g. 10:20)"));
  };
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() > 2 || text.empty()) return bad("not a step range");
  auto number = [](const std::string& s, int64_t open, int64_t* v) {
    if (s.empty()) {
      *v = open;
      return true;
    }
    return absl::SimpleAtoi(s, v);
  };
  if (parts.size() == 1) {
    if (!absl::SimpleAtoi(parts[0], first)) return bad("not a number");
    *last = *first;
  } else if ((parts[0].empty() && parts[1].empty()) || !number(parts[0], 1, first) ||
             !number(parts[1], end_step, last)) {
    return bad("not a number");
  }
  if (*first < 1) return bad("the first step must be >= 1");
  if (*last < *first) return bad("the last step is before the first");
  return absl::OkStatus();
}

}  // namespace lemrt::runtime
