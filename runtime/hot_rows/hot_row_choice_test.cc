// ChooseHotRows at 1-4 ranks as threads (runtime/comm/local_communicator.h):
// every rank chooses the same rows, the K most frequent over all ranks'
// counted batches with ties to the smaller id, listed rows win over counting,
// and one rank's source error ends every rank with the same sentence.
#include "runtime/hot_rows/hot_row_choice.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "gtest/gtest.h"
#include "host/input/train_only_source.h"
#include "proto/config_loader.h"
#include "runtime/comm/local_communicator.h"

namespace lemrt::runtime {
namespace {

// Table "counted" replicates its 2 hottest of batches 0 and 1; table
// "listed" replicates rows 5 and 2.
config::RunConfig Config(int world_size) {
  const std::string text = R"pb(
    tables { name: "counted" vocab_size: 100 dim: 4 hot_rows: 2 }
    tables {
      name: "listed"
      vocab_size: 100
      dim: 4
      hot_row_ids: [ 5, 2 ]
    }
    features { name: "c" table: "counted" }
    features { name: "l" table: "listed" }
    model {
      num_dense_features: 1
      bottom_mlp: [ 4 ]
      top_mlp: [ 4, 1 ]
    }
    training { global_batch: 48 steps: 5 }
    sparse_core { hot_row_count_steps: 2 }
  )pb";
  auto c = config::ParseConfig(text, "hot_row_choice_test", "", world_size);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

// Rank r's batches, one id per sample of feature "c": id 7 (r + 1) times,
// id 3 twice, id 50 three times on rank 0 only, id 10 + r once. Feature "l"
// reads id 9 (not counted: its table lists its rows).
class FakeSource : public host::TrainOnlySource {
 public:
  FakeSource(int rank, int64_t fail_at) : rank_(rank), fail_at_(fail_at) {}

  absl::Status TrainBatch(int64_t step, host::Batch* batch) override {
    if (step == fail_at_) return absl::DataLossError("bad row");
    std::vector<int64_t> ids(rank_ + 1, 7);
    ids.insert(ids.end(), {3, 3, 10 + rank_});
    if (rank_ == 0) ids.insert(ids.end(), {50, 50, 50});
    batch->Resize(static_cast<int64_t>(ids.size()), 1, 2);
    for (size_t i = 0; i < ids.size(); ++i) {
      batch->offsets[0][i + 1] = batch->offsets[1][i + 1] = static_cast<int64_t>(i) + 1;
    }
    batch->ids[0] = ids;
    batch->ids[1].assign(ids.size(), 9);
    return absl::OkStatus();
  }

 private:
  const int rank_;
  const int64_t fail_at_;
};

class HotRowChoiceTest : public ::testing::TestWithParam<int> {};

TEST_P(HotRowChoiceTest, EveryRankChoosesTheHottestOfAllRanks) {
  const int W = GetParam();
  const config::RunConfig config = Config(W);
  std::mutex mu;
  std::vector<HotRowChoice> chosen(W);
  const std::vector<absl::Status> status = RunLocalRanks(W, [&](Communicator& comm) {
    FakeSource source(comm.rank(), /*fail_at=*/-1);
    auto choice = ChooseHotRows(config, comm, &source);
    if (!choice.ok()) return choice.status();
    std::lock_guard<std::mutex> lock(mu);
    chosen[comm.rank()] = *std::move(choice);
    return absl::OkStatus();
  });
  for (int r = 0; r < W; ++r) ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
  // Counts over 2 batches: id 7 W(W+1), id 3 4W, id 50 6: with one rank 50
  // and 3 are the hottest; with 2, 7 and 50 tie at 6 behind 3 and the
  // smaller id wins; with more, 7 and 3 lead.
  const std::vector<int64_t> expected =
      W == 1 ? std::vector<int64_t>{3, 50} : std::vector<int64_t>{3, 7};
  int64_t total = 0;
  for (int r = 0; r < W; ++r) total += 2 * ((r + 1) + 3 + (r == 0 ? 3 : 0));
  const int64_t held = W == 1 ? 4 + 6 : 4 * W + W * (W + 1);
  for (int r = 0; r < W; ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r, " of ", W));
    EXPECT_EQ(chosen[r].rows[0], expected);
    EXPECT_DOUBLE_EQ(chosen[r].share[0], static_cast<double>(held) / static_cast<double>(total));
    EXPECT_EQ(chosen[r].rows[1], (std::vector<int64_t>{2, 5}));  // listed, sorted
    EXPECT_EQ(chosen[r].share[1], 1.0);
  }
}

TEST_P(HotRowChoiceTest, OneRanksSourceErrorEndsEveryRankWithItsSentence) {
  const int W = GetParam();
  const config::RunConfig config = Config(W);
  const std::vector<absl::Status> status = RunLocalRanks(W, [&](Communicator& comm) {
    FakeSource source(comm.rank(), /*fail_at=*/comm.rank() == W - 1 ? 1 : -1);
    return ChooseHotRows(config, comm, &source).status();
  });
  const std::string sentence = "choosing hot rows, step 1: bad row";
  for (int r = 0; r < W; ++r) {
    EXPECT_EQ(status[r],
              absl::DataLossError(W > 1 ? absl::StrCat("rank ", W - 1, ": ", sentence) : sentence))
        << "rank " << r;
  }
}

// Rank r's batch of `step`: 12 samples of 0-3 ids of feature "z" each,
// skewed towards low ids (id = 500 u^3), duplicates within a sample allowed.
class SkewedSource : public host::TrainOnlySource {
 public:
  explicit SkewedSource(int rank) : rank_(rank) {}

  static std::vector<int64_t> IdsOf(int rank, int64_t step, int sample) {
    base::CounterRng rng(base::HashKeys(
        {static_cast<uint64_t>(rank), static_cast<uint64_t>(step), static_cast<uint64_t>(sample)}));
    std::vector<int64_t> ids(rng.NextBelow(4));
    for (int64_t& id : ids) {
      const double u = rng.NextDouble();
      id = static_cast<int64_t>(500 * u * u * u);
    }
    return ids;
  }
  absl::Status TrainBatch(int64_t step, host::Batch* batch) override {
    batch->Resize(kSamples, 1, 1);
    for (int i = 0; i < kSamples; ++i) {
      for (int64_t id : IdsOf(rank_, step, i)) batch->ids[0].push_back(id);
      batch->offsets[0][i + 1] = static_cast<int64_t>(batch->ids[0].size());
    }
    return absl::OkStatus();
  }

  static constexpr int kSamples = 12;

 private:
  const int rank_;
};

// The plain reference: every id of every rank's counted batches counted,
// sorted by count (descending), then id; the first 6 kept.
TEST_P(HotRowChoiceTest, TheHottestAreThoseOfAPlainCountOverAllRanks) {
  const int W = GetParam();
  constexpr int kHot = 6, kCountSteps = 3;
  constexpr char kText[] = R"pb(
    tables { name: "z" vocab_size: 500 dim: 4 hot_rows: 6 }
    features { name: "z1" table: "z" max_sequence_length: 3 }
    model {
      num_dense_features: 1
      bottom_mlp: [ 4 ]
      top_mlp: [ 4, 1 ]
    }
    training { steps: 5 }
    sparse_core { hot_row_count_steps: 3 }
  )pb";
  auto config = config::ParseConfig(
      kText, "hot_row_choice_test",
      absl::StrCat("training { global_batch: ", SkewedSource::kSamples * W, " }"), W);
  ASSERT_TRUE(config.ok()) << config.status();
  std::map<int64_t, int64_t> counts;
  int64_t total = 0;
  for (int r = 0; r < W; ++r) {
    for (int step = 0; step < kCountSteps; ++step) {
      for (int i = 0; i < SkewedSource::kSamples; ++i) {
        for (int64_t id : SkewedSource::IdsOf(r, step, i)) ++counts[id], ++total;
      }
    }
  }
  std::vector<std::pair<int64_t, int64_t>> by_count;  // (-count, id)
  for (const auto& [id, n] : counts) by_count.emplace_back(-n, id);
  std::sort(by_count.begin(), by_count.end());
  std::vector<int64_t> expected;
  int64_t held = 0;
  for (int k = 0; k < kHot; ++k) expected.push_back(by_count[k].second), held -= by_count[k].first;
  std::sort(expected.begin(), expected.end());
  ASSERT_GT(-by_count[0].first, -by_count[kHot].first);  // the skew shows

  std::mutex mu;
  std::vector<HotRowChoice> chosen(W);
  const std::vector<absl::Status> status = RunLocalRanks(W, [&](Communicator& comm) {
    SkewedSource source(comm.rank());
    auto choice = ChooseHotRows(*config, comm, &source);
    if (!choice.ok()) return choice.status();
    std::lock_guard<std::mutex> lock(mu);
    chosen[comm.rank()] = *std::move(choice);
    return absl::OkStatus();
  });
  for (int r = 0; r < W; ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r, " of ", W));
    ASSERT_TRUE(status[r].ok()) << status[r];
    EXPECT_EQ(chosen[r].rows[0], expected);
    EXPECT_DOUBLE_EQ(chosen[r].share[0], static_cast<double>(held) / static_cast<double>(total));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, HotRowChoiceTest, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return absl::StrCat(info.param, "_ranks"); });

}  // namespace
}  // namespace lemrt::runtime
