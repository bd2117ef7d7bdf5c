#include "runtime/observability/trace_buffer.h"

#include <map>
#include <string>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

Struct Parse(const std::string& json) {
  Struct s;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &s).ok()) << json;
  return s;
}

TEST(TraceBufferTest, MergedJsonHasProcessesThreadsAndEvents) {
  const TraceThreads threads{2};
  std::vector<std::string> chips;
  for (int chip = 0; chip < 3; ++chip) {
    TraceBuffer buf(threads);
    const auto t0 = TraceBuffer::Clock::now();
    for (int step = 1; step <= 2; ++step) {
      buf.AddSpan(threads.host(), "host", step, t0, t0 + std::chrono::microseconds(5),
                  {{"ids", 10 * step}});
      buf.AddSpan(threads.sparse_core(1), "sc_forward", step, t0, t0 + std::chrono::microseconds(7));
    }
    buf.AddCounter("lookup queue", "steps", t0, 1);
    EXPECT_EQ(buf.size(), 5);
    chips.push_back(buf.JsonEvents(chip));
  }
  const Struct s = Parse(MergedTraceJson(chips));
  const auto& events = s.fields().at("traceEvents").list_value().values();
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  int spans = 0, counters = 0;
  for (const Value& v : events) {
    const auto& f = v.struct_value().fields();
    const std::string ph = f.at("ph").string_value();
    const int pid = static_cast<int>(f.at("pid").number_value());
    const auto& args = f.at("args").struct_value().fields();
    if (ph == "M" && f.at("name").string_value() == "process_name") {
      process_names[pid] = args.at("name").string_value();
    } else if (ph == "M" && f.at("name").string_value() == "thread_name") {
      thread_names[{pid, static_cast<int>(f.at("tid").number_value())}] =
          args.at("name").string_value();
    } else if (ph == "X") {
      ++spans;
      EXPECT_GE(args.at("step").number_value(), 1);
      if (f.at("name").string_value() == "host") {
        EXPECT_EQ(args.at("ids").number_value(), 10 * args.at("step").number_value());
        EXPECT_EQ(f.at("dur").number_value(), 5);
      }
    } else if (ph == "C") {
      ++counters;
      EXPECT_EQ(args.at("steps").number_value(), 1);
    }
  }
  EXPECT_EQ(spans, 3 * 4);
  EXPECT_EQ(counters, 3);
  ASSERT_EQ(process_names.size(), 3u);
  EXPECT_EQ(process_names[2], "chip 2");
  EXPECT_EQ(thread_names.size(), 3u * 5);
  EXPECT_EQ((thread_names[{1, 0}]), "Host");
  EXPECT_EQ((thread_names[{1, 1}]), "SparseCore 0");
  EXPECT_EQ((thread_names[{1, 2}]), "SparseCore 1");
  EXPECT_EQ((thread_names[{1, 3}]), "TensorCore");
  EXPECT_EQ((thread_names[{1, 4}]), "Exchange");
}

TEST(TraceBufferTest, EmptyBufferStillValid) {
  TraceBuffer buf(TraceThreads{1});
  const Struct s = Parse(MergedTraceJson({buf.JsonEvents(0)}));
  EXPECT_EQ(s.fields().at("displayTimeUnit").string_value(), "ms");
}

TEST(ParseStepRangeTest, Forms) {
  int64_t a = 0, b = 0;
  ASSERT_TRUE(ParseStepRange("10:20", 500, &a, &b).ok());
  EXPECT_EQ(a, 10);
  EXPECT_EQ(b, 20);
  ASSERT_TRUE(ParseStepRange("7", 500, &a, &b).ok());
  EXPECT_EQ(a, 7);
  EXPECT_EQ(b, 7);
  ASSERT_TRUE(ParseStepRange("5:", 500, &a, &b).ok());
  EXPECT_EQ(b, 500);
  ASSERT_TRUE(ParseStepRange(":3", 500, &a, &b).ok());
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 3);
  for (const char* bad : {"", "x", "0:5", "5:4", "1:2:3", "a:b", ":"}) {
    absl::Status st = ParseStepRange(bad, 500, &a, &b);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("--trace_steps"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace lemrt::runtime
