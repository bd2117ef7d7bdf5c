#include "runtime/step/host_prefetcher.h"

#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "layout/limits.h"
#include "proto/config_loader.h"
#include "runtime/comm/self_communicator.h"
#include "runtime/threads/thread_budget.h"

namespace lemrt::runtime {
namespace {

// Multi-hot features of three tables on 4 SparseCores; `limit` > 0 sets
// max_ids_per_partition so that steps split into minibatches.
config::RunConfig Config(int limit) {
  std::string text = R"pb(
topology { num_chips: 1 sparse_cores_per_chip: 4 }
tables { name: "a" vocab_size: 2000 dim: 4 combiner: SUM }
tables { name: "b" vocab_size: 500  dim: 4 combiner: MEAN }
tables { name: "c" vocab_size: 300  dim: 4 combiner: SQRTN }
features { name: "a1" table: "a" max_sequence_length: 6 }
features { name: "a2" table: "a" max_sequence_length: 4 }
features { name: "b1" table: "b" max_sequence_length: 3 }
features { name: "c1" table: "c" max_sequence_length: 2 }
model { num_dense_features: 3 bottom_mlp: [ 4 ] top_mlp: [ 4, 1 ] }
training { global_batch: 256 steps: 12 seed: 11 }
)pb";
  if (limit > 0) {
    text += "sparse_core { max_ids_per_partition: " + std::to_string(limit) +
            " allow_id_dropping: true }\n";
  }
  auto c = config::ParseConfig(text, "host_prefetcher_test", "", 1);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

// One step's output of the host stage, as raw bytes.
struct StepOutput {
  std::vector<std::vector<layout::CooEntry>> minibatches;
  std::vector<std::vector<int64_t>> offsets;
  std::vector<std::vector<int64_t>> ids;
  std::vector<float> dense, labels;

  bool operator==(const StepOutput& o) const {
    if (minibatches.size() != o.minibatches.size() || offsets != o.offsets || ids != o.ids ||
        dense != o.dense || labels != o.labels) {
      return false;
    }
    for (size_t m = 0; m < minibatches.size(); ++m) {
      if (minibatches[m].size() != o.minibatches[m].size() ||
          std::memcmp(minibatches[m].data(), o.minibatches[m].data(),
                      minibatches[m].size() * sizeof(layout::CooEntry)) != 0) {
        return false;
      }
    }
    return true;
  }
};

StepOutput Capture(const host::Batch& batch, const std::vector<layout::PartitionedCoo>& mbs) {
  StepOutput out;
  for (const auto& mb : mbs) {
    out.minibatches.push_back(mb.entries);
    out.offsets.push_back(mb.segment_offsets);
  }
  out.ids = batch.ids;
  out.dense = batch.dense;
  out.labels = batch.labels;
  return out;
}

// A data source that records the steps asked for and fails at `fail_step`.
class CheckedSource : public host::DataSource {
 public:
  CheckedSource(std::unique_ptr<host::DataSource> inner, int64_t fail_step)
      : inner_(std::move(inner)), fail_step_(fail_step) {}
  absl::Status TrainBatch(int64_t step, host::Batch* batch) override {
    steps.push_back(step);
    if (step == fail_step_) return absl::InvalidArgumentError("bad input line 7");
    return inner_->TrainBatch(step, batch);
  }
  absl::Status EvalBatch(int64_t chunk, host::Batch* batch) override {
    return inner_->EvalBatch(chunk, batch);
  }
  int64_t num_eval_chunks() const override { return inner_->num_eval_chunks(); }
  int64_t num_eval_samples() const override { return inner_->num_eval_samples(); }
  bool has_teacher() const override { return inner_->has_teacher(); }
  std::vector<int64_t> steps;

 private:
  std::unique_ptr<host::DataSource> inner_;
  int64_t fail_step_;
};

struct Rig {
  explicit Rig(const config::RunConfig& c, int64_t fail_step = -1) {
    auto data = host::CreateDataSource(c, 0, 1);
    EXPECT_TRUE(data.ok()) << data.status();
    source = std::make_unique<CheckedSource>(std::move(*data), fail_step);
    auto limits = layout::ResolveLimits(c);
    EXPECT_TRUE(limits.ok()) << limits.status();
    host = std::make_unique<HostStage>(c, comm, *source, std::move(*limits));
  }
  SelfCommunicator comm;
  std::unique_ptr<CheckedSource> source;
  std::unique_ptr<HostStage> host;
};

// The plain reference: HostStage::PrepareTrain one step after the other.
std::vector<StepOutput> Reference(const config::RunConfig& c, int64_t first, int64_t end) {
  Rig rig(c);
  std::vector<StepOutput> out;
  host::Batch batch;
  layout::PartitionedCoo coo;
  std::vector<layout::PartitionedCoo> mbs;
  for (int64_t s = first; s < end; ++s) {
    EXPECT_TRUE(rig.host->PrepareTrain(s, &batch, &coo, &mbs).ok());
    out.push_back(Capture(batch, mbs));
  }
  return out;
}

class HostPrefetcherTest : public ::testing::TestWithParam<int> {};  // limit (0 = none)

TEST_P(HostPrefetcherTest, EveryThreadCountAndDepthGivesTheReferenceSteps) {
  const config::RunConfig c = Config(GetParam());
  for (const int64_t first : {0, 5}) {
    const int64_t end = 12;
    const std::vector<StepOutput> ref = Reference(c, first, end);
    if (GetParam() > 0) {
      size_t most = 0;
      for (const auto& r : ref) most = std::max(most, r.minibatches.size());
      EXPECT_GT(most, 1u) << "the limit should force minibatching";
    }
    for (const auto& [threads, depth] :
         std::vector<std::pair<int, int>>{{1, 0}, {1, 1}, {2, 1}, {1, 4}, {3, 4}, {4, 2}}) {
      Rig rig(c);
      HostPrefetcher prefetcher(*rig.host, threads, depth, first, end);
      EXPECT_EQ(prefetcher.threads(), depth == 0 ? 0 : threads);
      host::Batch batch;
      std::vector<layout::PartitionedCoo> mbs;
      for (int64_t s = first; s < end; ++s) {
        HostWork& w = prefetcher.Take(s);
        EXPECT_EQ(w.index, s);
        EXPECT_TRUE(rig.host->Finish(w, &batch, &mbs).ok());
        prefetcher.Release(w);
        EXPECT_TRUE(Capture(batch, mbs) == ref[s - first])
            << "threads " << threads << " depth " << depth << " step " << s;
      }
      std::vector<int64_t> want;
      for (int64_t s = first; s < end; ++s) want.push_back(s);
      EXPECT_EQ(rig.source->steps, want) << "reads in step order, each once";
      EXPECT_EQ(rig.host->minibatches_per_step().size(), static_cast<size_t>(end - first));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Limits, HostPrefetcherTest, ::testing::Values(0, 6));

TEST(HostPrefetcherErrorTest, AFailedStepIsReportedAtItsTurnAndStopsTheWorkers) {
  const config::RunConfig c = Config(0);
  for (const int depth : {0, 1, 3}) {
    Rig rig(c, /*fail_step=*/4);
    HostPrefetcher prefetcher(*rig.host, 2, depth, 0, 12);
    host::Batch batch;
    std::vector<layout::PartitionedCoo> mbs;
    for (int64_t s = 0; s < 4; ++s) {
      HostWork& w = prefetcher.Take(s);
      EXPECT_TRUE(rig.host->Finish(w, &batch, &mbs).ok());
      prefetcher.Release(w);
    }
    HostWork& w = prefetcher.Take(4);
    const absl::Status st = rig.host->Finish(w, &batch, &mbs);
    prefetcher.Release(w);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(st.message()).find("step 4: bad input line 7"), std::string::npos)
        << st;
    // Workers stop claiming once the failure is known: at most the queue's
    // depth of steps past the last released one was read.
    EXPECT_LE(rig.source->steps.back(), 3 + std::max(depth, 1)) << "depth " << depth;
  }
}

TEST(HostPrefetcherErrorTest, DestroyedMidRunWithoutHanging) {
  const config::RunConfig c = Config(0);
  for (const int depth : {1, 4}) {
    Rig rig(c);
    HostPrefetcher prefetcher(*rig.host, 3, depth, 0, 12);
    HostWork& w = prefetcher.Take(0);
    prefetcher.Release(w);
    // The destructor stops the workers with steps still queued.
  }
}

TEST(HostPrefetcherThreadsTest, NoWorkersAtDepthZero) {
  // The count the run summary reports (threads.host_worker_threads): a
  // configured worker count runs no thread at depth 0.
  EXPECT_EQ(HostPrefetcher::WorkerThreads(1, 0), 0);
  EXPECT_EQ(HostPrefetcher::WorkerThreads(7, 0), 0);
  EXPECT_EQ(HostPrefetcher::WorkerThreads(0, 2), 1);
  EXPECT_EQ(HostPrefetcher::WorkerThreads(3, 4), 3);
  Rig rig(Config(0));
  EXPECT_EQ(HostPrefetcher(*rig.host, 5, 0, 0, 4).threads(), 0);
  EXPECT_EQ(HostPrefetcher(*rig.host, 5, 2, 0, 4).threads(), 5);
}

TEST(HostWorkerThreadsTest, DefaultsToTheCoresPerRank) {
  config::RunConfig c = Config(0);
  const int cores = AvailableCores();
  EXPECT_EQ(HostWorkerThreads(c, 1), cores);
  EXPECT_EQ(HostWorkerThreads(c, 4 * cores), 1);  // at least 1
  c.mutable_sparse_core()->set_host_worker_threads(3);
  EXPECT_EQ(HostWorkerThreads(c, 64), 3);
}

}  // namespace
}  // namespace lemrt::runtime
