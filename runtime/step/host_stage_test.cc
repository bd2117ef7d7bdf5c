// HostStage at 1-4 ranks as threads (runtime/comm/local_communicator.h):
// a step is the COO the builder makes of the rank's batch; with partition
// limits exceeded on one rank only, every rank runs the same number of
// minibatches, which keep every entry of the step and fit the limit; and an
// error on one rank (a read failure, an id out of range, a partition over its
// limit with minibatching off) ends the step on every rank with that rank's
// sentence, after which the next step runs.
#include "runtime/step/host_stage.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "gtest/gtest.h"
#include "host/input/train_only_source.h"
#include "layout/limits.h"
#include "proto/config_loader.h"
#include "runtime/comm/local_communicator.h"

namespace lemrt::runtime {
namespace {

constexpr int kGlobal = 96;  // samples; local batches divide by 2 SparseCores at 1-4 ranks
constexpr int64_t kVocabA = 64;

config::RunConfig Config(int world_size, const std::string& sparse_core = "") {
  const std::string text = absl::StrCat(R"pb(
                                          topology { sparse_cores_per_chip: 2 }
                                          tables { name: "a" vocab_size: 64 dim: 4 combiner: SUM }
                                          tables { name: "b" vocab_size: 30 dim: 8 combiner: MEAN }
                                          features { name: "fa" table: "a" max_sequence_length: 4 }
                                          features { name: "fb" table: "b" max_sequence_length: 2 }
                                          model {
                                            num_dense_features: 1
                                            bottom_mlp: [ 4 ]
                                            top_mlp: [ 4, 1 ]
                                          }
                                          training { global_batch: 96 steps: 4 seed: 3 }
                                          sparse_core {)pb",
                                        sparse_core, " }");
  auto c = config::ParseConfig(text, "host_stage_test", "", world_size);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

// Rank `rank`'s samples of a global batch from a counter RNG: rank 0's
// samples read 4 ids of table "a" each (its partitions are the crowded
// ones), the others' 1 to 4 of rows 0..3; 0 to 2 ids of "b" (rows 0 and 1
// on ranks but 0).
// Steps listed in `fail_read` fail to read on `bad_rank`; at `bad_id_step`
// that rank's first sample reads row 64 of "a" (out of range).
class FakeSource : public host::TrainOnlySource {
 public:
  FakeSource(int rank, int world_size, int bad_rank, int64_t fail_read, int64_t bad_id_step)
      : rank_(rank),
        n_(kGlobal / world_size),
        bad_(rank == bad_rank),
        fail_read_(fail_read),
        bad_id_step_(bad_id_step) {}

  absl::Status TrainBatch(int64_t step, host::Batch* batch) override {
    if (bad_ && step == fail_read_) return absl::DataLossError("bad record");
    batch->Resize(n_, 1, 2);
    batch->global_samples = kGlobal;
    for (int i = 0; i < n_; ++i) {
      const int g = rank_ * n_ + i;
      base::CounterRng rng(
          base::HashKeys({5, static_cast<uint64_t>(step), static_cast<uint64_t>(g)}));
      const int len_a = rank_ == 0 ? 4 : 1 + static_cast<int>(rng.NextBelow(4));
      for (int k = 0; k < len_a; ++k) {
        const auto id = static_cast<int64_t>(rng.NextBelow(rank_ == 0 ? kVocabA : 4));
        batch->ids[0].push_back(bad_ && step == bad_id_step_ && i == 0 ? kVocabA : id);
      }
      batch->offsets[0][i + 1] = static_cast<int64_t>(batch->ids[0].size());
      const int len_b = static_cast<int>(rng.NextBelow(3));
      for (int k = 0; k < len_b; ++k)
        batch->ids[1].push_back(static_cast<int64_t>(rng.NextBelow(rank_ == 0 ? 30 : 2)));
      batch->offsets[1][i + 1] = static_cast<int64_t>(batch->ids[1].size());
    }
    return absl::OkStatus();
  }

 private:
  const int rank_, n_;
  const bool bad_;
  const int64_t fail_read_, bad_id_step_;
};

using EntryKey = std::tuple<int64_t, int32_t, int32_t, int32_t, float>;

EntryKey KeyOf(const layout::CooEntry& e) { return {e.col, e.row, e.feature, e.table, e.gain}; }

// A COO's entries as (destination SC, source SC, entry) keys, sorted.
std::vector<std::tuple<int, int, EntryKey>> EntriesOf(const layout::PartitionedCoo& coo) {
  std::vector<std::tuple<int, int, EntryKey>> out;
  const int S = coo.local_sparse_cores;
  for (int d = 0; d < coo.total_sparse_cores; ++d) {
    for (int s = 0; s < S; ++s) {
      for (const layout::CooEntry& e : coo.segment(d, s)) out.emplace_back(d, s, KeyOf(e));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The most distinct rows of one table in one (source SC, destination SC)
// partition of `coo`.
int MaxUniqueIds(const layout::PartitionedCoo& coo) {
  size_t most = 0;
  for (int d = 0; d < coo.total_sparse_cores; ++d) {
    for (int s = 0; s < coo.local_sparse_cores; ++s) {
      std::set<std::pair<int32_t, int64_t>> rows;
      for (const layout::CooEntry& e : coo.segment(d, s)) rows.insert({e.table, e.col});
      std::set<int32_t> tables;
      for (const auto& [t, col] : rows) tables.insert(t);
      for (int32_t t : tables) {
        size_t n = 0;
        for (const auto& [u, col] : rows) n += u == t;
        most = std::max(most, n);
      }
    }
  }
  return static_cast<int>(most);
}

// What one rank saw of one step.
struct StepView {
  absl::Status status;
  std::vector<std::tuple<int, int, EntryKey>> whole, reference, in_minibatches;
  int minibatches = 0;
  int whole_max_unique_ids = 0;  // of the step before the split
  int max_unique_ids = 0;        // of its minibatches
};

// Runs PrepareTrain for steps 0..steps-1 on every rank of a `W`-rank world;
// views[step][rank].
std::vector<std::vector<StepView>> RunSteps(int W, const config::RunConfig& config, int steps,
                                            int bad_rank = -1, int64_t fail_read = -1,
                                            int64_t bad_id_step = -1) {
  std::mutex mu;
  std::vector<std::vector<StepView>> views(steps, std::vector<StepView>(W));
  const std::vector<absl::Status> status = RunLocalRanks(W, [&](Communicator& comm) {
    absl::StatusOr<layout::PartitionLimits> limits = layout::ResolveLimits(config);
    if (!limits.ok()) return limits.status();
    FakeSource source(comm.rank(), W, bad_rank, fail_read, bad_id_step);
    FakeSource reference_source(comm.rank(), W, bad_rank, fail_read, bad_id_step);
    HostStage stage(config, comm, source, *limits);
    host::CooBuilder builder(host::MakeCooOptions(config));
    host::Batch batch, reference_batch;
    layout::PartitionedCoo coo, reference;
    std::vector<layout::PartitionedCoo> minibatches;
    for (int step = 0; step < steps; ++step) {
      StepView view;
      view.status = stage.PrepareTrain(step, &batch, &coo, &minibatches);
      if (view.status.ok()) {
        view.whole = EntriesOf(coo);
        view.whole_max_unique_ids = MaxUniqueIds(coo);
        if (reference_source.TrainBatch(step, &reference_batch).ok() &&
            builder.Build(reference_batch, &reference).ok()) {
          view.reference = EntriesOf(reference);
        }
        view.minibatches = static_cast<int>(minibatches.size());
        for (const layout::PartitionedCoo& mb : minibatches) {
          const auto entries = EntriesOf(mb);
          view.in_minibatches.insert(view.in_minibatches.end(), entries.begin(), entries.end());
          view.max_unique_ids = std::max(view.max_unique_ids, MaxUniqueIds(mb));
        }
        std::sort(view.in_minibatches.begin(), view.in_minibatches.end());
      }
      std::lock_guard<std::mutex> lock(mu);
      views[step][comm.rank()] = std::move(view);
    }
    return absl::OkStatus();
  });
  for (int r = 0; r < W; ++r) EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
  return views;
}

class HostStageTest : public testing::TestWithParam<int> {};

TEST_P(HostStageTest, AStepWithoutLimitsIsTheBuildersCooInOneMinibatch) {
  const int W = GetParam();
  const auto views = RunSteps(W, Config(W), 2);
  for (int step = 0; step < 2; ++step) {
    for (int r = 0; r < W; ++r) {
      SCOPED_TRACE(absl::StrCat("step ", step, " rank ", r, " of ", W));
      const StepView& v = views[step][r];
      ASSERT_TRUE(v.status.ok()) << v.status;
      EXPECT_FALSE(v.whole.empty());
      EXPECT_EQ(v.whole, v.reference);
      EXPECT_EQ(v.minibatches, 1);
      EXPECT_EQ(v.in_minibatches, v.whole);
    }
  }
}

TEST_P(HostStageTest, MinibatchesOverOneRanksLimitAreAgreedAndKeepEveryEntry) {
  const int W = GetParam();
  constexpr int kLimit = 3;
  const config::RunConfig config =
      Config(W, absl::StrCat("max_unique_ids_per_partition: ", kLimit));
  const auto views = RunSteps(W, config, 2);
  for (int step = 0; step < 2; ++step) {
    for (int r = 0; r < W; ++r) {
      SCOPED_TRACE(absl::StrCat("step ", step, " rank ", r, " of ", W));
      const StepView& v = views[step][r];
      ASSERT_TRUE(v.status.ok()) << v.status;
      EXPECT_EQ(v.whole, v.reference);
      // Rank 0's partitions are over, the others' fit; every rank splits alike.
      EXPECT_EQ(v.whole_max_unique_ids > kLimit, r == 0) << v.whole_max_unique_ids;
      EXPECT_GT(v.minibatches, 1);
      EXPECT_EQ(v.minibatches, views[step][0].minibatches);
      EXPECT_EQ(v.in_minibatches, v.whole);  // nothing lost, nothing added
      EXPECT_LE(v.max_unique_ids, kLimit);
    }
  }
}

// Step 1 fails on the last rank: a read error, then (second run) an id out
// of range; step 2 runs again on every rank.
TEST_P(HostStageTest, OneRanksErrorEndsTheStepOnEveryRankWithItsSentence) {
  const int W = GetParam();
  const std::string rank = W > 1 ? absl::StrCat("rank ", W - 1, ": ") : "";
  for (const bool read_error : {true, false}) {
    SCOPED_TRACE(read_error ? "read error" : "id out of range");
    const auto views =
        RunSteps(W, Config(W), 3, /*bad_rank=*/W - 1, read_error ? 1 : -1, read_error ? -1 : 1);
    for (int r = 0; r < W; ++r) {
      SCOPED_TRACE(absl::StrCat("rank ", r, " of ", W));
      EXPECT_TRUE(views[0][r].status.ok()) << views[0][r].status;
      const absl::Status& st = views[1][r].status;
      EXPECT_EQ(st, views[1][0].status);
      if (read_error) {
        EXPECT_EQ(st, absl::DataLossError(rank + "step 1: bad record"));
      } else {
        EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
        EXPECT_TRUE(absl::StartsWith(st.message(), rank + "step 1: ")) << st;
        EXPECT_TRUE(absl::StrContains(st.message(), "64")) << st;
      }
      EXPECT_TRUE(views[2][r].status.ok()) << views[2][r].status;
    }
  }
}

TEST_P(HostStageTest, APartitionOverItsLimitWithoutMinibatchingFailsEveryRankAlike) {
  const int W = GetParam();
  const config::RunConfig config =
      Config(W, "max_unique_ids_per_partition: 3 disable_minibatching: true");
  const auto views = RunSteps(W, config, 1);
  for (int r = 0; r < W; ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r, " of ", W));
    const absl::Status& st = views[0][r].status;
    EXPECT_EQ(st, views[0][0].status);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    // Only rank 0's partitions are over.
    EXPECT_TRUE(absl::StartsWith(st.message(), W > 1 ? "rank 0: step 0: " : "step 0: ")) << st;
    EXPECT_TRUE(absl::StrContains(st.message(), "minibatching is disabled")) << st;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, HostStageTest, testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return absl::StrCat(info.param, "_ranks"); });

}  // namespace
}  // namespace lemrt::runtime
