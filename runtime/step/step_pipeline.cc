#include "runtime/step/step_pipeline.h"

#include <chrono>
#include <utility>

#include "glog/logging.h"

namespace lemrt::runtime {

StepPipeline::StepPipeline(PipelineOptions options, StepStages stages)
    : options_(options), stages_(std::move(stages)), executor_(/*inline_execution=*/!options.threads) {}

StepPipeline::~StepPipeline() { (void)Drain(); }

void StepPipeline::Submit(int64_t forward_step, std::function<absl::Status()> task) {
  in_flight_.push_back({forward_step, executor_.Submit([this, task = std::move(task)]() -> absl::Status {
    // The executor runs its tasks one at a time, so executor_error_ is
    // only touched by this thread while tasks are in flight.
    if (!executor_error_.ok()) return executor_error_;
    absl::Status st = task();
    if (!st.ok()) executor_error_ = st;
    return st;
  })});
}

void StepPipeline::JoinOldest() {
  const absl::Status st = in_flight_.front().done.get();
  in_flight_.pop_front();
  if (joined_error_.ok()) joined_error_ = st;
}

absl::Status StepPipeline::Drain() {
  while (!in_flight_.empty()) JoinOldest();
  return joined_error_;
}

absl::Status StepPipeline::Fail(absl::Status st) {
  const absl::Status first = Drain();
  failed_ = first.ok() ? std::move(st) : first;
  return failed_;
}

absl::StatusOr<PipelineStep> StepPipeline::Step(int64_t step, bool drain) {
  if (!failed_.ok()) return failed_;
  CHECK(next_step_ < 0 || step == next_step_) << "steps must come in order";
  CHECK_LT(step, options_.end_step);
  next_step_ = step + 1;
  StepSlot& slot = slots_[step % 2];
  PipelineStep out;
  out.slot = &slot;
  if (next_forward_ != step) {  // not started by the previous step
    CHECK(drained());
    Submit(step, [this, step, &slot] { return stages_.host_and_forward(step, slot); });
    next_forward_ = step;
  }
  // Join the tasks queued before the lookup of `step`, then the lookup; the
  // previous step's update, queued after it, stays in flight. A failure of
  // any earlier task makes the lookup return that failure unrun.
  const auto t0 = std::chrono::steady_clock::now();
  bool joined_forward = false;
  while (!joined_forward) {
    joined_forward = in_flight_.front().forward_step == step;
    JoinOldest();
  }
  out.forward_wait_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!joined_error_.ok()) return Fail(joined_error_);

  const bool overlap = options_.overlap && step >= options_.warmup_steps && !drain &&
                       step + 1 < options_.end_step;
  if (overlap) {
    StepSlot& next = slots_[(step + 1) % 2];
    Submit(step + 1, [this, step, &next] { return stages_.host_and_forward(step + 1, next); });
    next_forward_ = step + 1;
  }
  absl::Status st = stages_.dense(slot);
  if (!st.ok()) return Fail(std::move(st));
  Submit(/*forward_step=*/-1, [this, &slot] { return stages_.backward(slot); });
  if (!overlap) {
    st = Drain();
    if (!st.ok()) return Fail(std::move(st));
    out.drained = true;
  }
  return out;
}

}  // namespace lemrt::runtime
