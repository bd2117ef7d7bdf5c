// Trains the configured DLRM on this chip, in lockstep with the other chips.
// A step is host preprocessing -> SparseCore forward -> TensorCore ->
// SparseCore backward; each stage is its own component with its own buffers
// (a StepSlot, runtime/step/step_slot.h). The trainer builds the stages, and its
// step loop composes the step schedule (runtime/step/step_pipeline.h: which stage
// runs where, pipelined or not, every error surfaced) with evaluation,
// checkpoints and the summary. With pipelining the lookup of step j sees the
// updates of steps <= j-2 (the reference's "gradients of step i may not be
// visible until step i+2"); the pipeline drains (every update applied)
// before each evaluation and checkpoint and after the last step. The
// SparseCore executor and the TensorCore talk MPI on their own
// communicators, so their collectives never mix.
//
// Thread-compatible; one per rank.
#ifndef LEMRT_RUNTIME_TRAINER_H_
#define LEMRT_RUNTIME_TRAINER_H_

#include <array>
#include <csignal>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "device/optimizers/optimizer.h"
#include "device/plan/memory_plan.h"
#include "host/preprocess/coo.h"
#include "host/input/data_source.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"
#include "runtime/comm/collective_monitor.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/placement.h"
#include "runtime/eval/eval_tracker.h"
#include "runtime/eval/eval_scores.h"
#include "runtime/step/host_prefetcher.h"
#include "runtime/step/host_stage.h"
#include "runtime/observability/run_recorder.h"
#include "runtime/observability/run_stats.h"
#include "runtime/observability/startup_clock.h"
#include "runtime/step/sparsecore_stage.h"
#include "runtime/comm/stall_hook.h"
#include "runtime/step/step_pipeline.h"
#include "runtime/step/step_slot.h"
#include "runtime/step/table_serialization.h"
#include "runtime/comm/timed_communicator.h"
#include "runtime/step/tensorcore_stage.h"

namespace lemrt::checkpoint {
class Checkpointer;
}  // namespace lemrt::checkpoint

namespace lemrt::runtime {

class Trainer {
 public:
  // Collective. `config` must be validated (config::LoadConfig). The
  // SparseCore stages use `sparse_comm`, the TensorCore stage `dense_comm`;
  // when pipelining is on they are used from two threads at once, so they
  // must be distinct communicators (MPI_THREAD_MULTIPLE); they may be the
  // same object when pipelining is off. All must outlive the trainer. Every
  // error, on any rank (an unreadable limits file or input shard, a plan that
  // does not fit), is agreed before the next collective, so every rank
  // returns the same error. With `monitor` (optional; must outlive the
  // trainer), the trainer marks there which step and stage each
  // communicator's thread is in, and each step's time, for the collective
  // watchdog (runtime/comm/mpi_watchdog.h). `placement` (optional: of
  // sparse_comm's ranks, copied) gives each rank's host for the summary and
  // the exchange's within-host / between-host bytes; without it the trainer
  // gathers it first (runtime/comm/placement.h, which fails when two hosts
  // share a hostname). `process_start` (optional; ProcessStart()) starts the
  // start-up breakdown's launch phase (runtime/observability/startup_clock.h);
  // without it the breakdown starts at Create.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(
      const config::RunConfig& config, Communicator& sparse_comm, Communicator& dense_comm,
      CollectiveMonitor* monitor = nullptr, const Placement* placement = nullptr,
      std::optional<StartupClock::Clock::time_point> process_start = std::nullopt);
  ~Trainer();

  // Collective: trains training.steps steps and evaluates. Data errors on
  // any rank stop every rank with the same error. A stop request (see
  // set_stop_signal) on any rank makes every rank finish the same step,
  // save a checkpoint (with checkpoint.dir) and return the summary early,
  // with `stopped` set and no final evaluation; one during an evaluation
  // ends it and stops the same way. A step whose mean loss is not finite or
  // above 100 x ln 2 (diverged) is an error, before that step's checkpoint.
  absl::StatusOr<summary::RunSummary> Run();

  // Where Run reads stop requests: a signal number written asynchronously
  // (by a signal handler), 0 while there is none. Read once per step and
  // agreed over the ranks with the step's loss all-reduce (no extra
  // collective), and before each eval chunk (a one-number all-reduce), so a
  // stop cuts an evaluation short. Must outlive Run; null (the default)
  // never stops.
  void set_stop_signal(const volatile std::sig_atomic_t* signal) { stop_signal_ = signal; }
  // After Run: the signal that stopped it, agreed over the ranks (the
  // highest number caught); 0 when it ran to the end.
  int stopped_by() const { return stopped_by_; }

  // Collective: evaluates the current model on the eval set, each eval row
  // once (runtime/eval/eval_scores.h). No step may be in flight (outside Run, or
  // at Run's drain points). On rank 0, `predictions` (when not null)
  // receives every scored row in eval row order. With set_stop_signal, a
  // stop signal on any rank ends it before its next chunk: Cancelled on
  // every rank.
  absl::StatusOr<EvalResult> Evaluate(Predictions* predictions = nullptr);

  // Collective: loads checkpoint `dir` (a step directory, or a directory of
  // them: the newest) into the stages, re-sharding to this world size, and
  // returns its step. Errors as checkpoint::RestoreCheckpoint.
  absl::StatusOr<int64_t> Restore(const std::string& dir);

  // The run's config: the one given to Create with training.steps resolved
  // against the data (training.epochs; host/input/epoch_schedule.h).
  const config::RunConfig& config() const { return config_; }
  const host::DataSource& data() const { return *data_; }

  const SparseCoreStage& sparse() const { return *sparse_; }
  const TensorCoreStage& dense() const { return *dense_; }
  bool pipelining() const { return pipelining_; }
  // With pipelining: the SparseCore stages run on their own executor thread.
  bool executor_thread() const {
    return pipelining_ && !config_.sparse_core().pipeline_without_threads();
  }
  // Where components report counters and spans (runtime/observability/run_recorder.h).
  RunRecorder& recorder() { return *recorder_; }

 private:
  // The step loop's run state for the summary (its counters are in stats_).
  struct LoopTotals {
    int64_t first_step = 0;       // 0, or the restored step
    int64_t end_step = 0;         // steps done at the end (< steps when stopped)
    int stop_signal = 0;          // the signal that stopped the run, or 0
    std::string stop_signal_name; // "SIGTERM"
    int64_t stopped_early_at = 0; // training.early_stop_evals stopped after this step
  };

  Trainer(const config::RunConfig& config, Communicator& sparse_comm, Communicator& dense_comm);
  // The rest of Create once the data source and the steps are known: limits,
  // recorder, stages, tables and step buffers (trainer_setup.cc, with Create).
  static absl::StatusOr<std::unique_ptr<Trainer>> CreateStages(std::unique_ptr<Trainer> t,
                                                               device::MemoryPlan plan);
  // CreateStages' phases. Collective: the run recorder (agreed), told the
  // host stage's partition limits.
  absl::Status CreateRecorder();
  // Sizes each StepSlot's activations and reserves its buffers.
  void SizeStepSlots();
  // Collective, once before the first step: marks the run-start phase,
  // agrees on the slowest rank's start-up breakdown and logs it on rank 0.
  absl::Status ReportStartup();
  // Seconds this rank's share of a checkpoint takes at 10 MB/s (the
  // watchdog's allowance while one is saved or restored).
  double CheckpointIoAllowanceSeconds() const;
  // Collective: initialises the tables in the configured start-up mode
  // (device/sparsecore/table_init.h) and records the slowest chip's time.
  absl::Status InitializeTables(std::span<const device::Optimizer* const> optimizers);
  // Reserves every StepSlot's SparseCore buffers to the plan's bounds and
  // touches them when they fit (runtime/step/step_buffer_reserve.h), the
  // slots on startup_threads_ threads at once.
  void ReserveStepBuffers();

  // The stages, each on its executor. HostAndForward and Backward run on the
  // SparseCore executor; Dense on the TensorCore (calling) thread.
  absl::Status HostAndForward(int64_t step, StepSlot& slot);
  absl::Status Dense(StepSlot& slot);
  absl::Status Backward(StepSlot& slot);
  // Run's phases, in order. Resume (collective): restores the configured
  // checkpoint (re-saving one restored at the last step) and starts the host
  // prefetcher; returns the first step to run.
  absl::StatusOr<int64_t> Resume();
  // Collective: runs the steps from totals->first_step until the last, a
  // stop or an early stop, setting totals->end_step (and the stop fields).
  absl::Status TrainSteps(LoopTotals* totals);
  // Collective, after `step` came out of the pipeline (`done`): the loss
  // all-reduce (carrying the stop request), the step into stats_, the
  // divergence check and the recorder's step. Returns whether any rank
  // asked to stop.
  absl::StatusOr<bool> FinishStep(int64_t step, const PipelineStep& done,
                                  std::chrono::steady_clock::time_point step_start);
  // Collective, at the drain point after `step`: the due evaluation (with
  // its checkpoints, AfterEvaluation) or the due checkpoint. Returns true
  // when training ends here (a stop during the evaluation, or an early stop).
  absl::StatusOr<bool> AtDrainPoint(int64_t step, LoopTotals* totals);
  // Collective: the final evaluation, or an empty result when the run was
  // stopped before it or during it (then saved, as Stop).
  absl::StatusOr<EvalResult> FinalEvaluation(LoopTotals* totals);
  // The step schedule over this trainer's stages.
  std::unique_ptr<StepPipeline> NewPipeline();
  // True when the pipeline must be empty after `step`: evaluation, a
  // checkpoint or the end of training follow it.
  bool DrainAfter(int64_t step) const;
  // Collective, after the last step (pipeline drained) and the final
  // evaluation `eval` (unset when stopped): records the evaluation, model
  // statistics and the run summary (trainer_summary.cc). The one pass that
  // makes the summary's collectives; every rank makes them in this order:
  //   1. RecordFinalEvaluation (unless stopped or stopped early): with
  //      training.eval_every, AfterEvaluation's (checkpoint saves);
  //   2. GatherSummaryTotals, on sparse_comm_ unless named:
  //      ComputeModelStats; the all-reduce (sum) of the id counts; the
  //      all-gather of train_sec on dense_comm_; the all-reduce (sum) of the
  //      skipped lines; with per-feature counts, their all-reduce (sum);
  //   3. HostStage::Summarise (the all-reduce of the dropped ids);
  //   4. RunRecorder::Finish;
  //   5. FillPlacement (one all-reduce).
  // Between 2 and 3 the Fill* functions (no collective) copy this rank's
  // state and the gathered totals into the summary's sections.
  absl::StatusOr<summary::RunSummary> Summarise(const LoopTotals& totals, const EvalResult& eval);
  // Summarise's parts (trainer_summary.cc). Collective: the final
  // evaluation's record (and checkpoint), and the totals over ranks.
  struct SummaryTotals;
  absl::Status RecordFinalEvaluation(int64_t steps_done, const EvalResult& eval);
  absl::StatusOr<SummaryTotals> GatherSummaryTotals(const LoopTotals& totals);
  // Not collective: each fills its sections of `s`.
  int64_t StepsReported(const LoopTotals& totals) const;  // an early stop's, else planned
  // world, batch, steps, stop, throughput, wall and step times
  void FillRunShape(const LoopTotals& totals, const SummaryTotals& all,
                    summary::RunSummary* s) const;
  void FillTrain(const LoopTotals& totals, const SummaryTotals& all, summary::RunSummary* s) const;
  void FillFeatureData(const SummaryTotals& all, summary::RunSummary* s) const;  // data.features
  // ids, params_l2, model_checksum, memory, model
  void FillModel(const SummaryTotals& all, summary::RunSummary* s) const;
  void FillBestEval(summary::RunSummary* s) const;  // logs it on rank 0 too
  void FillSetup(summary::RunSummary* s) const;     // stacking, startup, pipelining, threads
  // breakdown_ms (all but exchange, filled after RunRecorder::Finish), ns_per_id
  void FillBreakdown(const LoopTotals& totals, summary::RunSummary* s) const;
  // Rank 0 warns of each feature none of whose values was in its vocabulary.
  void WarnAboutOutOfVocabulary(const summary::RunSummary& summary) const;
  // Collective, at a drain point after `steps_done` steps: records the
  // evaluation `e` in eval_tracker_, saves the checkpoint when one is due,
  // and with checkpoint.keep_best saves (if not just saved) and pins the
  // model of a new best evaluation, unpinning the previous best. `final`:
  // the run ends here (a checkpoint directory then always gets this step).
  // Returns true when training.early_stop_evals says to stop.
  absl::StatusOr<bool> AfterEvaluation(int64_t steps_done, const EvalResult& e, bool final);

  // Marks `channel`'s step and stage in the monitor (when there is one).
  void Mark(int channel, int64_t step, const char* stage, double extra_timeout_s = 0) {
    if (monitor_ != nullptr) monitor_->SetStage(channel, step, stage, extra_timeout_s);
  }
  // At a stop request agreed after `step`: drains, saves (unless `saved`:
  // this step's checkpoint is on disk already), records the stop.
  absl::Status Stop(int64_t step, bool saved, LoopTotals* totals);
  // Collective, before eval chunk `chunk`: Cancelled on every rank when a
  // stop signal reached any rank (read here, agreed with a one-number
  // all-reduce), so that a stop does not wait for a long evaluation; OK
  // without a stop signal (set_stop_signal unset: no collective).
  absl::Status AgreeOnEvalStop(int64_t chunk);

  config::RunConfig config_;
  const volatile std::sig_atomic_t* stop_signal_ = nullptr;
  CollectiveMonitor* monitor_ = nullptr;
  Placement placement_;  // of sparse_comm_'s ranks
  // Seconds this rank's share of a checkpoint may take to write or read at
  // 10 MB/s: the watchdog's allowance while checkpoints are saved or restored.
  double checkpoint_io_allowance_s_ = 0;
  int stopped_by_ = 0;
  // Restores, saves, keeps the checkpoint directory (locked while we live).
  std::unique_ptr<checkpoint::Checkpointer> checkpointer_;
  // The static memory plan checked at start-up.
  device::MemoryPlan memory_plan_;
  // The threads the SparseCore tiles run on.
  std::unique_ptr<device::TilePool> tile_pool_;
  Communicator& sparse_comm_;
  Communicator& dense_comm_;
  bool pipelining_;
  StallHook stall_hook_;  // LEMRT_TEST_STALL (the fault suite only)
  // Stage times, trace, metrics; the SparseCore stage's exchanges are timed
  // through timed_sparse_comm_ (declared before sparse_, which uses it).
  std::unique_ptr<RunRecorder> recorder_;
  std::unique_ptr<TimedCommunicator> timed_sparse_comm_;
  std::unique_ptr<host::DataSource> data_;
  std::vector<std::unique_ptr<device::Optimizer>> table_optimizers_;
  std::unique_ptr<SparseCoreStage> sparse_;
  std::unique_ptr<TensorCoreStage> dense_;
  std::unique_ptr<HostStage> host_;  // data -> COO -> limits -> minibatches
  // Splits each minibatch by the plan's serialized tables.
  std::unique_ptr<TableSerializer> table_serializer_;
  // Start-up: table initialisation mode and the slowest chip's time; this
  // rank's phases, and the slowest rank's (agreed before the first step).
  std::string table_init_mode_;
  double table_init_ms_ = 0;
  StartupClock startup_;
  StartupBreakdown startup_breakdown_;
  // Threads of the table fill and the step buffers' first touch: the GEMM
  // team's or the host workers', whichever is more (nothing else runs yet).
  // Also the end-of-run statistics' threads (ComputeModelStats).
  int startup_threads_ = 1;
  // Host worker threads running host_'s local half ahead (made by Run once
  // the first step is known; after host_, so it stops first).
  std::unique_ptr<HostPrefetcher> prefetcher_;
  int host_worker_threads_ = 1;
  // The run statistics the stages and the step loop report into and the
  // summary reads (runtime/observability/run_stats.h: which thread writes
  // what).
  RunStats stats_;
  // The best evaluation so far and the early-stop count; the step whose
  // checkpoint is pinned as the best (0: none) and its directory.
  EvalTracker eval_tracker_;
  int64_t best_pinned_step_ = 0;
  std::string best_checkpoint_;
  EvalScores eval_scores_;
  // The step schedule and its two StepSlots; declared last so it is
  // destroyed (joining its tasks, which use the members above) first.
  std::unique_ptr<StepPipeline> pipeline_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_TRAINER_H_
