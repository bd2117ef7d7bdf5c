// The schedule of the training steps in flight on one chip: which stage of
// which step runs where and when, joining every task it started and
// surfacing every task's error. The trainer composes it with evaluation,
// checkpoints and the summary (runtime/trainer.h).
//
// A step is F (host preprocessing + SparseCore lookup), D (the TensorCore
// step, on the calling thread) and B (the SparseCore update). F and B run
// on one SparseCore executor (a thread), in submission order. Unpipelined:
// F(i) D(i) B(i) F(i+1) ... Pipelined, the lookup of step i+1 runs while the
// TensorCore works on step i, and the update of step i follows it:
//
//   SparseCore: F(0) | F(1)  B(0) | F(2)  B(1) | F(3)  B(2) | ... | B(n-1)
//   TensorCore:      | D(0)       | D(1)       | D(2)       | ... |
//
// so the lookup of step j sees the updates of steps <= j-2. Steps before
// warmup_steps, and a step after which the caller needs the pipeline empty
// (`drain`: evaluation, a checkpoint, a stop or the last step follow), do not
// overlap the next step's lookup, and Step returns only once their update
// has run.
//
// Errors. Every task's status is kept: once an executor task fails, the
// executor's later tasks are skipped (they return that first error without
// running, so no rank issues a collective its peers will not), and the next
// Step or Drain returns it. Stages must agree on their errors over ranks
// before their next collective (AgreeOnStatus), so every rank's pipeline
// fails at the same task with the same error. When several stages failed,
// the executor's first error wins over the TensorCore's (the executor's
// update of an earlier step names the cause, e.g. the NaN check's source).
//
// Thread-compatible: one thread (the trainer's) calls Step and Drain.
#ifndef LEMRT_RUNTIME_STEP_STEP_PIPELINE_H_
#define LEMRT_RUNTIME_STEP_STEP_PIPELINE_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/step/serial_executor.h"
#include "runtime/step/step_slot.h"

namespace lemrt::runtime {

// The stages of a step. The callables must outlive the pipeline (they are
// called until its destructor returns).
struct StepStages {
  // SparseCore executor: host preprocessing and lookup of `step` into `slot`.
  std::function<absl::Status(int64_t step, StepSlot& slot)> host_and_forward;
  // Calling thread: the TensorCore step of the step in `slot`.
  std::function<absl::Status(StepSlot& slot)> dense;
  // SparseCore executor: the update of the step in `slot`.
  std::function<absl::Status(StepSlot& slot)> backward;
};

struct PipelineOptions {
  bool overlap = true;        // pipelining (sparse_core.disable_full_embedding_pipelining off)
  bool threads = true;        // false: the executor runs tasks inline, same schedule
  int64_t warmup_steps = 0;   // steps [0, warmup_steps) do not overlap
  int64_t end_step = 0;       // exclusive; no lookup is started for it
};

// What Step hands back: its slot (valid until the next Step) and how long
// the calling thread waited for the step's lookup.
struct PipelineStep {
  StepSlot* slot = nullptr;
  double forward_wait_ms = 0;
  bool drained = false;  // no step is in flight (every update applied)
};

class StepPipeline {
 public:
  StepPipeline(PipelineOptions options, StepStages stages);
  // Joins every task in flight (their errors are dropped: the caller has
  // returned an error or drained already).
  ~StepPipeline();
  StepPipeline(const StepPipeline&) = delete;
  StepPipeline& operator=(const StepPipeline&) = delete;

  // Runs `step` up to the end of its TensorCore stage (see the schedule
  // above). Steps must come in increasing order, each once, from the first
  // step on (which may be > 0 after a restore). With `drain`, or when the
  // step does not overlap, returns only after every task has finished.
  // Errors: the first error of any stage of this or an earlier step; the
  // pipeline is then drained and further calls return the same error.
  absl::StatusOr<PipelineStep> Step(int64_t step, bool drain);

  // Joins every task in flight; returns the first error of any task so far
  // (OK when none failed).
  absl::Status Drain();

  // True when no task is in flight.
  bool drained() const { return in_flight_.empty(); }

  // The step slots; touch them only while drained() (start-up sizing,
  // evaluation).
  std::array<StepSlot, 2>& slots() { return slots_; }

 private:
  // A task submitted and not yet joined.
  struct InFlight {
    int64_t forward_step;  // the step of a lookup; -1 for an update
    std::shared_future<absl::Status> done;
  };
  // Submits `task` to the executor, wrapped so it is skipped after a failure.
  void Submit(int64_t forward_step, std::function<absl::Status()> task);
  // Waits for the oldest task in flight and drops it, keeping the first
  // failure in joined_error_.
  void JoinOldest();
  // Drains, and returns the executor's first error, else `st`.
  absl::Status Fail(absl::Status st);

  const PipelineOptions options_;
  const StepStages stages_;
  std::array<StepSlot, 2> slots_;
  // The executor's first failure, as its tasks see it (executor thread only).
  absl::Status executor_error_;
  // The first failure among the joined tasks (calling thread only); the same
  // error, since every task after a failure returns it.
  absl::Status joined_error_;
  absl::Status failed_;  // the error Step returned, once it failed
  int64_t next_step_ = -1;       // the step Step expects next (-1: any first)
  int64_t next_forward_ = -1;    // the step whose lookup was submitted last
  // Tasks submitted and not yet joined, oldest first (at most 3: B(i-1),
  // F(i+1), B(i)).
  std::deque<InFlight> in_flight_;
  // Declared last: destroyed first, after the destructor has joined it.
  SerialExecutor executor_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_STEP_STEP_PIPELINE_H_
