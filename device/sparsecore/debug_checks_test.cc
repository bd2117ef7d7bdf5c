#include "device/sparsecore/debug_checks.h"

#include <cmath>
#include <limits>
#include <vector>

#include "device/sparsecore/sparse_core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

using ::testing::HasSubstr;

constexpr char kConfig[] = R"pb(
topology { sparse_cores_per_chip: 2 }
sparse_core { debug_check_nan: true debug_check_bounds: true debug_guard_words: true }
tables { name: "t0" vocab_size: 10 dim: 3 combiner: SUM }
features { name: "f0" table: "t0" max_sequence_length: 4 }
model { num_dense_features: 1 bottom_mlp: 3 top_mlp: 1 }
training { global_batch: 2 embedding_learning_rate: 0.5 }
)pb";

using layout::CooEntry;

struct Fixture {
  config::RunConfig config;
  SgdOptimizer sgd{0.5f};
  std::unique_ptr<SparseCore> sc;
  explicit Fixture(bool checks_on = true) {
    auto c = config::ParseConfig(kConfig, "t", "", 1);
    EXPECT_TRUE(c.ok()) << c.status();
    config = *c;
    if (!checks_on) config.mutable_sparse_core()->Clear();
    const Optimizer* opts[] = {&sgd};
    sc = std::make_unique<SparseCore>(config, /*global_sc=*/1, opts);  // odd rows
  }
};

TEST(DebugChecksTest, GuardsDetectOverwritesOnEitherSide) {
  std::vector<float> buf;
  PlaceGuards(5, &buf);
  EXPECT_EQ(buf.size(), 5u + 2 * kGuardFloats);
  EXPECT_TRUE(VerifyGuards(buf, "b", "here").ok());
  buf[kGuardFloats + 5] = 1.0f;  // one past the payload
  EXPECT_THAT(VerifyGuards(buf, "b", "here").message(),
              HasSubstr("guard words after staging buffer 'b' (5 floats)"));
  PlaceGuards(5, &buf);
  buf[kGuardFloats - 1] = 0.0f;  // one before
  EXPECT_THAT(VerifyGuards(buf, "b", "here").message(), HasSubstr("before staging buffer 'b'"));
  EXPECT_EQ(FirstNonFinite(std::vector<float>{1, 2, INFINITY}), 2);
  EXPECT_EQ(FirstNonFinite(std::vector<float>{1, 2}), -1);
}

TEST(DebugChecksTest, CleanStepPassesEveryCheck) {
  Fixture f;
  std::vector<CooEntry> a = {{3, 0, 0, 0, 1.0f}, {5, 0, 0, 0, 1.0f}};
  std::vector<std::span<const CooEntry>> segs = {a};
  std::vector<float> p(3), g = {0.1f, 0.2f, 0.3f};
  std::vector<float*> outs = {p.data()};
  std::vector<const float*> ins = {g.data()};
  SparseCoreStepState state;
  f.sc->Forward(segs, outs, &state);
  EXPECT_TRUE(state.debug_status.ok()) << state.debug_status;
  f.sc->Backward(segs, ins, &state);
  EXPECT_TRUE(state.debug_status.ok()) << state.debug_status;
}

// Column 4 belongs to SparseCore 0: without the check SparseCore 1 would read
// its local row 2 (global row 5) silently; with it the lookup is refused.
TEST(DebugChecksTest, BoundsCheckNamesBufferAndIndex) {
  Fixture f;
  std::vector<CooEntry> a = {{3, 0, 0, 0, 1.0f}, {4, 1, 0, 0, 1.0f}};
  std::vector<std::span<const CooEntry>> segs = {a};
  std::vector<float> p(6);
  std::vector<float*> outs = {p.data()};
  SparseCoreStepState state;
  f.sc->Forward(segs, outs, &state);
  EXPECT_EQ(state.debug_status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(state.debug_status.message(),
              HasSubstr("bounds check: sc_forward on SparseCore 1, segment 0 entry 1: gather index "
                        "(column 4 of table 't0') is not a row of this SparseCore's shard"));
  std::vector<CooEntry> b = {{11, 0, 0, 0, 1.0f}};  // past the vocabulary
  segs = {b};
  f.sc->Forward(segs, outs, &state);
  EXPECT_THAT(state.debug_status.message(), HasSubstr("column 11 of table 't0'"));

  Fixture off(/*checks_on=*/false);
  segs = {a};
  off.sc->Forward(segs, outs, &state);
  EXPECT_TRUE(state.debug_status.ok());
}

TEST(DebugChecksTest, NanInGradientsStopsTheUpdateAndNamesStageTableStep) {
  Fixture f;
  std::vector<CooEntry> a = {{3, 0, 0, 0, 1.0f}};
  std::vector<std::span<const CooEntry>> segs = {a};
  std::vector<float> p(3), g = {0.1f, std::numeric_limits<float>::quiet_NaN(), 0.3f};
  std::vector<float*> outs = {p.data()};
  std::vector<const float*> ins = {g.data()};
  SparseCoreStepState state;
  const std::vector<float> before(f.sc->shard(0).row(1), f.sc->shard(0).row(1) + 3);
  f.sc->Forward(segs, outs, &state);
  ASSERT_TRUE(state.debug_status.ok());
  f.sc->Backward(segs, ins, &state);
  EXPECT_THAT(state.debug_status.message(),
              HasSubstr("NaN check: step 0, stage sc_backward: gradients of table 't0' "
                        "(feature 0, sample 0, element 1) is nan"));
  for (int k = 0; k < 3; ++k) EXPECT_EQ(f.sc->shard(0).row(1)[k], before[k]);
}

TEST(DebugChecksTest, InfInUpdatedRowIsReported) {
  Fixture f;
  std::vector<CooEntry> a = {{3, 0, 0, 0, 1.0f}};
  std::vector<std::span<const CooEntry>> segs = {a};
  const float huge = std::numeric_limits<float>::max();
  // Row 3 starts at -max in element 0; SGD's w -= 0.5 * max overflows to -inf.
  std::vector<float> p(3), g = {huge, 0.0f, 0.0f};
  std::vector<float*> outs = {p.data()};
  std::vector<const float*> ins = {g.data()};
  SparseCoreStepState state;
  f.sc->mutable_shard(0).mutable_row(1)[0] = -huge;
  f.sc->Forward(segs, outs, &state);
  ASSERT_TRUE(state.debug_status.ok()) << state.debug_status;  // -max is finite
  f.sc->Backward(segs, ins, &state);
  EXPECT_THAT(state.debug_status.message(),
              HasSubstr("NaN check: step 0, stage sc_backward: the update made row 3 of table "
                        "'t0' non-finite (element 0)"));
}

TEST(DebugChecksTest, CorruptedStagingBufferIsNamed) {
  Fixture f;
  std::vector<CooEntry> a = {{3, 0, 0, 0, 1.0f}, {5, 0, 0, 0, 1.0f}};
  std::vector<std::span<const CooEntry>> segs = {a};
  std::vector<float> p(3);
  std::vector<float*> outs = {p.data()};
  SparseCoreStepState state;
  f.sc->Forward(segs, outs, &state);
  ASSERT_TRUE(state.debug_status.ok());
  // A stray write one float past the gathered rows (2 rows x 3 floats).
  state.gathered[kGuardFloats + 6] = 0.0f;
  const absl::Status st = f.sc->VerifyGuardWords(state, "sc_forward");
  EXPECT_THAT(st.message(), HasSubstr("buffer sanitizer: sc_forward on SparseCore 1: the guard "
                                      "words after staging buffer 'gathered' (6 floats)"));
}

}  // namespace
}  // namespace lemrt::device
