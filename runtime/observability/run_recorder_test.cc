#include "runtime/observability/run_recorder.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "runtime/comm/self_communicator.h"

namespace lemrt::runtime {
namespace {

using Clock = RunRecorder::Clock;

config::RunConfig SmallConfig(const std::string& trace, int64_t steps) {
  config::RunConfig c;
  c.mutable_topology()->set_num_chips(1);
  c.mutable_topology()->set_sparse_cores_per_chip(2);
  for (const char* name : {"a", "b"}) {
    auto* t = c.add_tables();
    t->set_name(name);
    t->set_vocab_size(100);
    t->set_dim(4);
    auto* f = c.add_features();
    f->set_name(std::string(name) + "1");
    f->set_table(name);
  }
  c.mutable_training()->set_steps(steps);
  c.mutable_training()->set_global_batch(4);
  c.mutable_training()->set_log_every(0);
  if (!trace.empty()) {
    c.mutable_observability()->set_trace_json(trace);
    c.mutable_observability()->set_trace_first_step(2);
    c.mutable_observability()->set_trace_last_step(2);
  }
  return c;
}

Clock::time_point At(Clock::time_point base, double ms) {
  return base + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double, std::milli>(ms));
}

// A step's inputs: 4 samples, feature f of sample i has f + 1 + (i % 2) ids;
// COO segments [dest SC d][src SC s] with entries of both tables.
struct StepInput {
  host::Batch batch;
  layout::PartitionedCoo coo;
  std::vector<SparseStepBuffers> buffers;

  explicit StepInput(int step) {
    batch.Resize(4, 0, 2);
    for (int f = 0; f < 2; ++f) {
      for (int i = 0; i < 4; ++i) {
        for (int k = 0; k < f + 1 + (i % 2); ++k) batch.ids[f].push_back(k);
        batch.offsets[f][i + 1] = static_cast<int64_t>(batch.ids[f].size());
      }
    }
    coo.local_sparse_cores = 2;
    coo.total_sparse_cores = 2;
    coo.segment_offsets = {0};
    // Segment k gets k + step entries of table (k % 2) and 1 of table 1.
    for (int k = 0; k < 4; ++k) {
      for (int e = 0; e < k + step; ++e) coo.entries.push_back({e, 0, k % 2, k % 2, 1.0f});
      coo.entries.push_back({99, 1, 1, 1, 1.0f});
      coo.segment_offsets.push_back(static_cast<int64_t>(coo.entries.size()));
    }
    coo.ids_total = 10;
    coo.ids_after_dedup = static_cast<int64_t>(coo.entries.size());
    buffers.resize(1);
    buffers[0].sc_states.resize(2);
    // SC 0: 2 unique of table 0, SC 1: 3 unique of table 1.
    buffers[0].sc_states[0].unique_keys = {0, 1};
    buffers[0].sc_states[1].unique_keys = {(uint64_t{1} << 48) | 5, (uint64_t{1} << 48) | 6,
                                           (uint64_t{1} << 48) | 7};
  }
};

// What the trainer does with a training step's COO: counted on a host
// worker, added by the SparseCore executor.
void CountPartitions(const config::RunConfig& config, const layout::PartitionedCoo& coo,
                     RunRecorder& r) {
  std::vector<int64_t> counts;
  layout::CountSegmentTables(coo, config.tables_size(), &counts);
  r.AddPartitionCounts(counts, coo.local_sparse_cores);
}

TEST(RunRecorderTest, StageStatsTablesAndTraceAgainstPlainCounts) {
  const std::string trace = ::testing::TempDir() + "/run_recorder_test_trace.json";
  const config::RunConfig config = SmallConfig(trace, 3);
  auto recorder = RunRecorder::Create(config, 0, 1);
  ASSERT_TRUE(recorder.ok()) << recorder.status();
  RunRecorder& r = **recorder;
  const Clock::time_point base = Clock::now();
  std::map<int, int64_t> ids_per_table, unique_per_table;
  std::map<std::pair<int, int>, int64_t> partition;  // (table, dest SC)
  int64_t max_partition[2] = {0, 0};
  for (int step = 0; step < 3; ++step) {
    StepInput in(step);
    const double t = 10.0 * step;  // host 1 ms, forward 2, tc 3, backward 1: sequential
    CountPartitions(config, in.coo, r);
    r.HostDone(step, At(base, t), At(base, t + 1), in.batch, in.coo);
    r.HostQueueWait(step, 0.25 * step);  // 0, 0.25, 0.5 ms
    // An evaluation's exchange (before the forward began) is not the step's.
    r.OnExchange(At(base, t + 0.5), At(base, t + 0.75), {1, 1, 1000, 1000});
    for (int x = 0; x < 3; ++x) {
      r.OnExchange(At(base, t + 1 + 0.5 * x), At(base, t + 1.25 + 0.5 * x),
                   {24, 48, 10 * (step + 1), 6});
    }
    for (int l = 0; l < 2; ++l) {
      in.buffers[0].sc_spans.push_back({l, false, At(base, t + 2.5), At(base, t + 2.75), 5, 2});
    }
    r.ForwardDone(step, At(base, t + 1), At(base, t + 3), in.buffers);
    r.DenseDone(step, At(base, t + 3), At(base, t + 6), 4);
    r.OnExchange(At(base, t + 6), At(base, t + 6.5), {100, 100, 30, 50});
    for (int l = 0; l < 2; ++l) {
      in.buffers[0].sc_spans.push_back({l, true, At(base, t + 6.5), At(base, t + 7), 5, 2});
    }
    r.BackwardDone(step, At(base, t + 6), At(base, t + 7), in.buffers);
    r.StepDone(step, At(base, t), At(base, t + 7), 0.5);
    // The plain reference.
    for (int f = 0; f < 2; ++f) ids_per_table[f] += static_cast<int64_t>(in.batch.ids[f].size());
    unique_per_table[0] += 2;
    unique_per_table[1] += 3;
    for (int k = 0; k < 4; ++k) {
      int64_t counts[2] = {0, 0};
      for (int64_t i = in.coo.segment_offsets[k]; i < in.coo.segment_offsets[k + 1]; ++i) {
        ++counts[in.coo.entries[i].table];
      }
      for (int tb = 0; tb < 2; ++tb) {
        partition[{tb, k / 2}] += counts[tb];
        max_partition[tb] = std::max(max_partition[tb], counts[tb]);
      }
    }
  }
  r.ReportPartitionLimits(0, 64, 32);
  SelfCommunicator comm;
  summary::RunSummary s;
  s.set_steps(3);
  ASSERT_TRUE(r.Finish(comm, &s).ok());

  std::map<std::string, summary::StageStats> stages;
  for (const auto& st : s.stages()) stages[st.name()] = st;
  ASSERT_EQ(stages.size(), 7u);
  EXPECT_NEAR(stages["host_wait"].mean_ms(), 0.25, 1e-6);
  EXPECT_NEAR(stages["host_wait"].p99_ms(), 0.5, 1e-6);
  EXPECT_NEAR(stages["host"].mean_ms(), 1, 1e-3);
  EXPECT_NEAR(stages["sc_forward"].mean_ms(), 2, 1e-3);
  EXPECT_NEAR(stages["tc"].mean_ms(), 3, 1e-3);
  EXPECT_NEAR(stages["sc_backward"].mean_ms(), 1, 1e-3);
  EXPECT_NEAR(stages["exchange"].mean_ms(), 3 * 0.25 + 0.5, 1e-3);
  // Per step: 3 forward exchanges of 10 * step (1, 2, 3: mean 20) bytes within
  // the host and 6 between hosts, one backward of 30 and 50.
  EXPECT_DOUBLE_EQ(r.exchange_bytes_per_step().within_host, 3 * 20 + 30);
  EXPECT_DOUBLE_EQ(r.exchange_bytes_per_step().between_hosts, 3 * 6 + 50);
  EXPECT_NEAR(stages["step"].mean_ms(), 7, 1e-3);
  EXPECT_NEAR(stages["tc"].share(), 3.0 / 7, 1e-4);
  EXPECT_NEAR(s.overlap().fraction(), 0, 1e-6);  // sequential
  EXPECT_NEAR(s.overlap().stage_sum_ms(), 3 * 7, 1e-3);

  ASSERT_EQ(s.tables_size(), 2);
  for (int tb = 0; tb < 2; ++tb) {
    const auto& t = s.tables(tb);
    EXPECT_EQ(t.ids(), ids_per_table[tb]);
    EXPECT_EQ(t.unique_ids(), unique_per_table[tb]);
    EXPECT_EQ(t.max_ids_per_partition(), max_partition[tb]);
    ASSERT_EQ(t.partition_ids_size(), 2);
    double sum = 0;
    for (int d = 0; d < 2; ++d) {
      EXPECT_EQ(t.partition_ids(d), (partition[{tb, d}]));
      sum += t.partition_ids(d);
    }
    EXPECT_EQ(t.ids_after_dedup(), sum);
    EXPECT_NEAR(t.partition_skew(), std::max(t.partition_ids(0), t.partition_ids(1)) * 2 / sum,
                1e-12);
  }
  EXPECT_EQ(s.tables(0).max_ids_per_partition_limit().number_value(), 64);
  EXPECT_EQ(s.tables(0).max_unique_ids_per_partition_limit().number_value(), 32);
  EXPECT_TRUE(s.tables(1).max_ids_per_partition_limit().has_null_value());
  EXPECT_TRUE(s.tables(0).padded_ids().has_null_value());
  EXPECT_GE(s.recorder_ms_per_step(), 0);

  // The trace holds step 2 only: one event per stage, per SparseCore for the
  // SparseCore stages, and the four exchanges.
  std::ifstream in(trace);
  std::stringstream text;
  text << in.rdbuf();
  google::protobuf::Struct json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(text.str(), &json).ok());
  std::map<std::pair<int, std::string>, int> events;  // (tid, name)
  for (const auto& v : json.fields().at("traceEvents").list_value().values()) {
    const auto& f = v.struct_value().fields();
    if (f.at("ph").string_value() != "X") continue;
    EXPECT_EQ(f.at("args").struct_value().fields().at("step").number_value(), 2);
    ++events[{static_cast<int>(f.at("tid").number_value()), f.at("name").string_value()}];
  }
  const std::map<std::pair<int, std::string>, int> want = {
      {{0, "host"}, 1},         {{1, "sc_forward"}, 1},        {{2, "sc_forward"}, 1},
      {{1, "sc_backward"}, 1},  {{2, "sc_backward"}, 1},       {{3, "tc"}, 1},
      {{4, "alltoall counts"}, 1}, {{4, "alltoallv ids"}, 1},  {{4, "alltoallv partials"}, 1},
      {{4, "alltoallv gradients"}, 1}};
  EXPECT_EQ(events, want);
  std::remove(trace.c_str());
}

TEST(RunRecorderTest, OverlappingStagesCountAsOverlap) {
  const config::RunConfig config = SmallConfig("", 2);
  auto recorder = RunRecorder::Create(config, 0, 1);
  ASSERT_TRUE(recorder.ok());
  RunRecorder& r = **recorder;
  const Clock::time_point base = Clock::now();
  // Step 1's host + lookup [4, 8) run while step 0's TensorCore works [4, 10).
  StepInput a(0), b(1);
  CountPartitions(config, a.coo, r);
  r.HostDone(0, At(base, 0), At(base, 2), a.batch, a.coo);
  r.ForwardDone(0, At(base, 2), At(base, 4), a.buffers);
  r.DenseDone(0, At(base, 4), At(base, 10), 4);
  CountPartitions(config, b.coo, r);
  r.HostDone(1, At(base, 4), At(base, 6), b.batch, b.coo);
  r.ForwardDone(1, At(base, 6), At(base, 8), b.buffers);
  r.BackwardDone(0, At(base, 10), At(base, 11), a.buffers);
  r.DenseDone(1, At(base, 11), At(base, 17), 4);
  r.BackwardDone(1, At(base, 17), At(base, 18), b.buffers);
  SelfCommunicator comm;
  summary::RunSummary s;
  ASSERT_TRUE(r.Finish(comm, &s).ok());
  // Stage time 2 x (2 + 2 + 6 + 1) = 22 ms; busy [0, 18) = 18 ms.
  EXPECT_NEAR(s.overlap().stage_sum_ms(), 22, 1e-3);
  EXPECT_NEAR(s.overlap().busy_ms(), 18, 1e-3);
  EXPECT_NEAR(s.overlap().fraction(), 1 - 18.0 / 22, 1e-4);
}

double SortedQuantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

TEST(RunRecorderTest, LongPipelinedRunInFlatMemoryMatchesPlainSort) {
  // training.steps 10^12: memory must not grow with the steps (192 B per
  // step preallocated would be 192 TB).
  const config::RunConfig config = SmallConfig("", int64_t{1000000000000});
  const size_t heap_before = mallinfo2().uordblks;
  auto recorder = RunRecorder::Create(config, 0, 1);
  ASSERT_TRUE(recorder.ok());
  RunRecorder& r = **recorder;
  const size_t heap_created = mallinfo2().uordblks;
  EXPECT_LT(heap_created - heap_before, size_t{1} << 20);
  // Pipelined order: step s's host, forward, then step s - 1's update, then
  // step s's TensorCore and StepDone; stage lengths drawn per step.
  const Clock::time_point base = Clock::now();
  constexpr int kSteps = 3000;
  std::mt19937 rng(17);
  auto len = [&] { return std::exp(std::uniform_real_distribution<double>(-3, 3)(rng)); };
  std::vector<double> want[RunRecorder::kNumSeries];
  std::vector<std::pair<double, double>> intervals;
  StepInput in(0);
  double t = 0;
  double backward_begin = 0, backward_len = 0, backward_exchange = 0;
  for (int step = 0; step <= kSteps; ++step) {
    if (step < kSteps) {
      const double host = len(), fwd = len(), wait = step % 4 == 0 ? 0 : len(), x = fwd / 4;
      CountPartitions(config, in.coo, r);
      r.HostDone(step, At(base, t), At(base, t + host), in.batch, in.coo);
      r.HostQueueWait(step, wait);
      r.OnExchange(At(base, t + host), At(base, t + host + x), {8, 8});
      r.ForwardDone(step, At(base, t + host), At(base, t + host + fwd), in.buffers);
      want[RunRecorder::kHost].push_back(host);
      want[RunRecorder::kScForward].push_back(fwd);
      want[RunRecorder::kHostWait].push_back(wait);
      want[RunRecorder::kExchange].push_back(x);
      intervals.push_back({t, t + host});
      intervals.push_back({t + host, t + host + fwd});
      t += host + fwd;
    }
    if (step > 0) {  // step - 1's update, its exchange first
      r.OnExchange(At(base, backward_begin), At(base, backward_begin + backward_exchange), {8, 8});
      r.BackwardDone(step - 1, At(base, backward_begin), At(base, backward_begin + backward_len),
                     in.buffers);
      intervals.push_back({backward_begin, backward_begin + backward_len});
    }
    if (step == kSteps) break;
    const double tc = len(), bwd = len(), bx = bwd / 2;
    r.DenseDone(step, At(base, t), At(base, t + tc), 4);
    r.StepDone(step, At(base, t - 1), At(base, t + tc), 0.5);
    want[RunRecorder::kTc].push_back(tc);
    want[RunRecorder::kScBackward].push_back(bwd);
    want[RunRecorder::kExchange].back() += bx;
    want[RunRecorder::kStep].push_back(
        std::chrono::duration<double, std::milli>(At(base, t + tc) - At(base, t - 1)).count());
    intervals.push_back({t, t + tc});
    backward_begin = t + tc;
    backward_len = bwd;
    backward_exchange = bx;
    t += tc * 0.5 + (step % 5 == 0 ? 2 : 0);  // the next host overlaps; some idle gaps
  }
  SelfCommunicator comm;
  summary::RunSummary s;
  ASSERT_TRUE(r.Finish(comm, &s).ok());
  EXPECT_LT(mallinfo2().uordblks - heap_before, size_t{2} << 20);

  const char* names[RunRecorder::kNumSeries] = {"host",     "sc_forward", "tc",  "sc_backward",
                                                "exchange", "host_wait",  "step"};
  ASSERT_EQ(s.stages_size(), RunRecorder::kNumSeries);
  // Stage times go through time_point (nanosecond ticks): compare within 1e-5 ms.
  for (int k = 0; k < RunRecorder::kNumSeries; ++k) {
    const auto& st = s.stages(k);
    ASSERT_EQ(st.name(), names[k]);
    const std::vector<double>& v = want[k];
    ASSERT_EQ(v.size(), static_cast<size_t>(kSteps)) << names[k];
    double sum = 0;
    for (double x : v) sum += x;
    EXPECT_NEAR(st.mean_ms(), sum / kSteps, 1e-5) << names[k];
    for (auto [p, got] : {std::pair{0.5, st.p50_ms()}, std::pair{0.99, st.p99_ms()}}) {
      const double exact = SortedQuantile(v, p);
      EXPECT_NEAR(got, exact, exact * base::QuantileSketch::kRelativeError + 1e-5)
          << names[k] << " p" << p;
    }
  }
  double stage_sum = 0;
  for (int k = 0; k < RunRecorder::kNumStages; ++k) {
    for (double x : want[k]) stage_sum += x;
  }
  EXPECT_NEAR(s.overlap().stage_sum_ms(), stage_sum, 1e-3);
  const double busy = BusyTime(intervals);
  EXPECT_NEAR(s.overlap().busy_ms(), busy, 1e-3);
  EXPECT_GT(s.overlap().fraction(), 0.05);  // the pipelining is seen
}

}  // namespace
}  // namespace lemrt::runtime
