// Trains the configured DLRM on this chip, in lockstep with the other chips:
// per step host preprocessing -> SparseCore forward -> TensorCore -> SparseCore
// backward (run one after another; each stage is its own component with its
// own buffers). Evaluates every eval_every steps and at the end, and returns
// the run summary. Thread-compatible; one per rank.
#ifndef LEMRT_RUNTIME_TRAINER_H_
#define LEMRT_RUNTIME_TRAINER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "device/optimizers/optimizer.h"
#include "device/plan/memory_plan.h"
#include "host/coo.h"
#include "host/data_source.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"
#include "runtime/comm/communicator.h"
#include "runtime/host_stage.h"
#include "runtime/run_recorder.h"
#include "runtime/sparsecore_stage.h"
#include "runtime/timed_communicator.h"
#include "runtime/tensorcore_stage.h"

namespace lemrt::runtime {

struct EvalResult {
  double auc = 0.5;
  double logloss = 0;
  int64_t samples = 0;
  double teacher_auc = -1;  // < 0 when the data has no teacher
};

class Trainer {
 public:
  // Collective. `config` must be validated (config::LoadConfig); `config` and
  // `comm` must outlive the trainer. Errors on any rank (e.g. an unreadable
  // input shard) are agreed so every rank returns the same error.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const config::RunConfig& config,
                                                         Communicator& comm);

  // Collective: trains training.steps steps and evaluates. Data errors on
  // any rank stop every rank with the same error.
  absl::StatusOr<summary::RunSummary> Run();

  // Collective: evaluates the current model on the eval set.
  absl::StatusOr<EvalResult> Evaluate();

  const SparseCoreStage& sparse() const { return *sparse_; }
  const TensorCoreStage& dense() const { return *dense_; }
  // Where components report counters and spans (runtime/run_recorder.h).
  RunRecorder& recorder() { return *recorder_; }

 private:
  Trainer(const config::RunConfig& config, Communicator& comm);
  absl::Status TrainStep(int64_t step, double* loss_sum, double stage_ms[4]);

  const config::RunConfig& config_;
  // The static memory plan checked at start-up (issue 4).
  device::MemoryPlan memory_plan_;
  // The threads the SparseCore tiles run on (issue 4).
  std::unique_ptr<device::TilePool> tile_pool_;
  Communicator& comm_;
  // Stage times, trace, metrics; the SparseCore stage's exchanges are timed
  // through timed_sparse_comm_ (declared before sparse_, which uses it).
  std::unique_ptr<RunRecorder> recorder_;
  std::unique_ptr<TimedCommunicator> timed_sparse_comm_;
  std::unique_ptr<host::DataSource> data_;
  std::vector<std::unique_ptr<device::Optimizer>> table_optimizers_;
  std::unique_ptr<SparseCoreStage> sparse_;
  std::unique_ptr<TensorCoreStage> dense_;
  std::unique_ptr<HostStage> host_;  // data -> COO -> limits -> minibatches
  // Buffers between the stages of a step.
  host::Batch batch_;
  host::PartitionedCoo coo_;
  SparseStepBuffers sparse_buffers_;
  // The step's vocabulary-dimension minibatches and their SparseCore buffers.
  std::vector<host::PartitionedCoo> minibatches_;
  std::vector<SparseStepBuffers> minibatch_buffers_;
  std::vector<float> activations_;
  std::vector<float> d_activations_;
  int64_t ids_total_ = 0;
  int64_t ids_after_dedup_ = 0;
  int64_t unique_ids_ = 0;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_TRAINER_H_
