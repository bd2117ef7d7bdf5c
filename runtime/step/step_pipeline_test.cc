#include "runtime/step/step_pipeline.h"

#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

// Fake stages that log "F3", "D3", "B3" as they run and fail where told.
class FakeStages {
 public:
  int64_t fail_forward = -1, fail_dense = -1, fail_backward = -1;

  StepStages stages() {
    StepStages s;
    s.host_and_forward = [this](int64_t step, StepSlot& slot) {
      slot.step = step;
      return Run("F", step, fail_forward);
    };
    s.dense = [this](StepSlot& slot) {
      std::lock_guard<std::mutex> lock(mu_);
      // The lookup of this step was joined and no update of step i-1 or later
      // has started on the other thread before the TensorCore's turn.
      dense_saw_updates_.push_back(updates_done_);
      log_.push_back(absl::StrCat("D", slot.step));
      return slot.step == fail_dense ? absl::InternalError(absl::StrCat("dense ", slot.step))
                                     : absl::OkStatus();
    };
    s.backward = [this](StepSlot& slot) {
      absl::Status st = Run("B", slot.step, fail_backward);
      std::lock_guard<std::mutex> lock(mu_);
      ++updates_done_;
      return st;
    };
    return s;
  }

  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  // Only the executor's tasks, in the order they ran.
  std::vector<std::string> executor_log() {
    std::vector<std::string> out;
    for (const std::string& e : log()) {
      if (e[0] != 'D') out.push_back(e);
    }
    return out;
  }
  std::vector<int64_t> dense_saw_updates() {
    std::lock_guard<std::mutex> lock(mu_);
    return dense_saw_updates_;
  }

 private:
  absl::Status Run(const char* stage, int64_t step, int64_t fail) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(absl::StrCat(stage, step));
    if (step == fail) return absl::InternalError(absl::StrCat(stage, " failed at step ", step));
    return absl::OkStatus();
  }

  std::mutex mu_;
  std::vector<std::string> log_;
  std::vector<int64_t> dense_saw_updates_;
  int64_t updates_done_ = 0;
};

PipelineOptions Options(bool overlap, bool threads, int64_t steps, int64_t warmup = 0) {
  PipelineOptions o;
  o.overlap = overlap;
  o.threads = threads;
  o.warmup_steps = warmup;
  o.end_step = steps;
  return o;
}

// Runs steps [first, end) with a drain after the steps in `drain_after` and
// the last; returns the first error.
absl::Status RunSteps(StepPipeline& p, int64_t first, int64_t end,
                      std::vector<int64_t> drain_after = {}) {
  for (int64_t step = first; step < end; ++step) {
    bool drain = step + 1 == end;
    for (int64_t d : drain_after) drain = drain || d == step;
    absl::StatusOr<PipelineStep> done = p.Step(step, drain);
    if (!done.ok()) return done.status();
    EXPECT_EQ(done->slot->step, step);
    if (drain) {
      EXPECT_TRUE(done->drained);
      EXPECT_TRUE(p.drained());
    }
  }
  return absl::OkStatus();
}

TEST(StepPipelineTest, UnpipelinedRunsEachStepToTheEnd) {
  FakeStages f;
  {
    StepPipeline p(Options(/*overlap=*/false, /*threads=*/false, 3), f.stages());
    ASSERT_TRUE(RunSteps(p, 0, 3).ok());
  }
  EXPECT_EQ(f.log(), (std::vector<std::string>{"F0", "D0", "B0", "F1", "D1", "B1", "F2", "D2",
                                               "B2"}));
}

TEST(StepPipelineTest, PipelinedScheduleMatchesTheDocumentedOne) {
  FakeStages f;
  {
    StepPipeline p(Options(/*overlap=*/true, /*threads=*/false, 4), f.stages());
    ASSERT_TRUE(RunSteps(p, 0, 4).ok());
  }
  // SparseCore: F(0) | F(1) B(0) | F(2) B(1) | F(3) B(2) | B(3); the
  // TensorCore step of i runs after F(i + 1) was queued.
  EXPECT_EQ(f.log(), (std::vector<std::string>{"F0", "F1", "D0", "B0", "F2", "D1", "B1", "F3",
                                               "D2", "B2", "D3", "B3"}));
}

TEST(StepPipelineTest, ThreadedScheduleEqualsInlineAndStalenessIsTwoSteps) {
  for (int64_t warmup : {0, 2}) {
    FakeStages inline_run, threaded;
    {
      StepPipeline p(Options(true, false, 12, warmup), inline_run.stages());
      ASSERT_TRUE(RunSteps(p, 0, 12, {5}).ok());
    }
    {
      StepPipeline p(Options(true, true, 12, warmup), threaded.stages());
      ASSERT_TRUE(RunSteps(p, 0, 12, {5}).ok());
    }
    EXPECT_EQ(threaded.executor_log(), inline_run.executor_log()) << "warmup " << warmup;
    // D(i) runs after B(i - 2) (it was queued before F(i)) and, threaded, maybe
    // before B(i - 1).
    const std::vector<int64_t> saw = threaded.dense_saw_updates();
    ASSERT_EQ(saw.size(), 12u);
    for (int64_t i = 0; i < 12; ++i) {
      EXPECT_GE(saw[i], std::max<int64_t>(0, i - 1)) << "step " << i;
      EXPECT_LE(saw[i], i) << "step " << i;
    }
  }
}

TEST(StepPipelineTest, DrainPointAppliesEveryUpdate) {
  FakeStages f;
  StepPipeline p(Options(true, true, 10), f.stages());
  for (int64_t step = 0; step < 4; ++step) {
    absl::StatusOr<PipelineStep> done = p.Step(step, /*drain=*/step == 3);
    ASSERT_TRUE(done.ok());
  }
  EXPECT_TRUE(p.drained());
  const std::vector<std::string> log = f.executor_log();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), "B3");  // no lookup of step 4 started
  ASSERT_TRUE(RunSteps(p, 4, 10).ok());
}

// A failed update of a pipelined run surfaces (it was dropped before), at
// the latest two steps later, and nothing runs on the executor after it.
TEST(StepPipelineTest, PipelinedUpdateErrorSurfaces) {
  for (bool threads : {false, true}) {
    FakeStages f;
    f.fail_backward = 3;
    absl::Status st;
    int64_t failed_at = -1;
    {
      StepPipeline p(Options(true, threads, 10), f.stages());
      for (int64_t step = 0; step < 10 && st.ok(); ++step) {
        absl::StatusOr<PipelineStep> done = p.Step(step, step == 9);
        st = done.status();
        failed_at = step;
      }
      // Once failed, it stays failed.
      EXPECT_EQ(p.Step(failed_at + 1, false).status(), st);
      EXPECT_TRUE(p.drained());
    }
    EXPECT_EQ(st, absl::InternalError("B failed at step 3")) << threads;
    EXPECT_LE(failed_at, 5);
    const std::vector<std::string> log = f.executor_log();
    // F(4) was queued before B(3) and ran; nothing after B(3).
    EXPECT_EQ(log.back(), "B3");
  }
}

TEST(StepPipelineTest, ForwardErrorSurfacesAtItsStep) {
  FakeStages f;
  f.fail_forward = 4;
  StepPipeline p(Options(true, true, 10), f.stages());
  absl::Status st = RunSteps(p, 0, 10);
  EXPECT_EQ(st, absl::InternalError("F failed at step 4"));
  EXPECT_TRUE(p.drained());
  for (const std::string& e : f.log()) EXPECT_NE(e, "D4");
}

TEST(StepPipelineTest, EarlierUpdateErrorWinsOverDenseError) {
  FakeStages f;
  f.fail_backward = 2;
  f.fail_dense = 3;
  StepPipeline p(Options(true, /*threads=*/false, 10), f.stages());
  // Inline: B(2) runs (and fails) before D(3); F(4) is skipped; D(3) fails.
  EXPECT_EQ(RunSteps(p, 0, 10), absl::InternalError("B failed at step 2"));
}

TEST(StepPipelineTest, DenseErrorJoinsTheLookupInFlight) {
  FakeStages f;
  f.fail_dense = 5;
  {
    StepPipeline p(Options(true, true, 10), f.stages());
    EXPECT_EQ(RunSteps(p, 0, 10), absl::InternalError("dense 5"));
    EXPECT_TRUE(p.drained());
  }
  const std::vector<std::string> log = f.executor_log();
  EXPECT_EQ(log.back(), "F6");  // queued before D(5), joined; no update of step 5
}

TEST(StepPipelineTest, StartsAtARestoredStep) {
  FakeStages f;
  {
    StepPipeline p(Options(true, true, 8), f.stages());
    ASSERT_TRUE(RunSteps(p, 5, 8).ok());
  }
  EXPECT_EQ(f.executor_log(),
            (std::vector<std::string>{"F5", "F6", "B5", "F7", "B6", "B7"}));
}

TEST(StepPipelineTest, DestructorJoinsTasksInFlight) {
  FakeStages f;
  {
    StepPipeline p(Options(true, true, 10), f.stages());
    ASSERT_TRUE(p.Step(0, false).ok());
    ASSERT_TRUE(p.Step(1, false).ok());
    EXPECT_FALSE(p.drained());
  }
  EXPECT_EQ(f.executor_log(), (std::vector<std::string>{"F0", "F1", "B0", "F2", "B1"}));
}

}  // namespace
}  // namespace lemrt::runtime
