// The pipelined trainer against an independent reference. The reference
// drives the stages (HostStage, SparseCoreStage, TensorCoreStage) with a
// plain single-threaded loop written here, not with the trainer's scheduler:
//
//   delayed:     F(0); for i: TC(i); F(i+1); B(i)    (update of i after lookup of i+1)
//   sequential:  for i: F(i); TC(i); B(i)
//
// The threaded, pipelined Trainer must equal `delayed` bit for bit (the
// the staleness of docs/pipelining.md: the lookup of step j sees the updates of steps <= j-2),
// the unpipelined Trainer must equal `sequential`, and the two references
// must differ (the delay is real). Run on 1 and 2 ranks.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "device/optimizers/optimizer.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "host/input/data_source.h"
#include "layout/limits.h"
#include "proto/config_loader.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/step/host_stage.h"
#include "runtime/observability/model_stats.h"
#include "runtime/step/sparsecore_stage.h"
#include "runtime/step/tensorcore_stage.h"
#include "runtime/trainer.h"

namespace lemrt::runtime {
namespace {

constexpr int kSteps = 9;

// Multi-hot features, two tables sharing ids across features, Adagrad and
// SGD, a high learning rate so that a one-step delay changes the model.
constexpr char kConfig[] = R"pb(
tables { name: "a" vocab_size: 3000 dim: 16 combiner: SUM optimizer { adagrad {} } }
tables { name: "b" vocab_size: 800  dim: 8  combiner: MEAN }
features { name: "a1" table: "a" max_sequence_length: 3 }
features { name: "a2" table: "a" }
features { name: "b1" table: "b" max_sequence_length: 2 }
model { num_dense_features: 13 bottom_mlp: [ 16, 8 ] top_mlp: [ 16, 1 ] }
training { global_batch: 96 steps: 9 seed: 5 embedding_learning_rate: 0.5
           eval_samples: 96 log_every: 0 }
)pb";

config::RunConfig LoadConfig(bool pipelining, int world) {
  auto config = config::ParseConfig(kConfig, "delayed_update_test", "", world);
  CHECK(config.ok()) << config.status();
  config->mutable_sparse_core()->set_disable_full_embedding_pipelining(!pipelining);
  return *config;
}

// The model checksum after the trainer's run.
std::string TrainerChecksum(const config::RunConfig& config) {
  auto sparse_comm = MpiCommunicator::Create(MPI_COMM_WORLD);
  auto dense_comm = MpiCommunicator::Create(MPI_COMM_WORLD);
  CHECK(sparse_comm.ok() && dense_comm.ok());
  auto trainer = Trainer::Create(config, **sparse_comm, **dense_comm);
  CHECK(trainer.ok()) << trainer.status();
  auto summary = (*trainer)->Run();
  CHECK(summary.ok()) << summary.status();
  return summary->model_checksum();
}

void Check(const absl::Status& status) { CHECK(status.ok()) << status; }

// The buffers of one step.
struct Slot {
  host::Batch batch;
  layout::PartitionedCoo coo;
  std::vector<layout::PartitionedCoo> minibatches;
  std::vector<SparseStepBuffers> sparse;
  std::vector<float> act, d_act;
};

// The model checksum after kSteps steps of the hand-written schedule.
std::string ReferenceChecksum(const config::RunConfig& config, bool delayed) {
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto comm = MpiCommunicator::Create(MPI_COMM_WORLD);
  CHECK(comm.ok()) << comm.status();
  auto data = host::CreateDataSource(config, rank, world);
  CHECK(data.ok()) << data.status();
  auto limits = layout::ResolveLimits(config);
  CHECK(limits.ok()) << limits.status();
  HostStage host(config, **comm, **data, std::move(*limits));
  std::vector<std::unique_ptr<device::Optimizer>> owned;
  std::vector<const device::Optimizer*> optimizers;
  for (const auto& t : config.tables()) {
    owned.push_back(
        device::CreateOptimizer(t.optimizer(), config.training().embedding_learning_rate()));
    optimizers.push_back(owned.back().get());
  }
  SparseCoreStage sparse(config, **comm, optimizers);
  auto dense = TensorCoreStage::Create(config, **comm);
  CHECK(dense.ok()) << dense.status();

  const int64_t local_batch = config.training().global_batch() / world;
  Slot slots[2];
  for (Slot& s : slots) {
    s.act.resize(local_batch * sparse.activation_width());
    s.d_act.resize(s.act.size());
  }
  auto forward = [&](int step) {
    Slot& s = slots[step % 2];
    Check(host.PrepareTrain(step, &s.batch, &s.coo, &s.minibatches));
    Check(sparse.Forward(s.minibatches, &s.sparse, s.act));
  };
  auto dense_step = [&](int step) {
    Slot& s = slots[step % 2];
    Check((*dense)->Step(step, s.batch, s.act, s.d_act).status());
  };
  auto backward = [&](int step) {
    Slot& s = slots[step % 2];
    Check(sparse.Backward(s.minibatches, s.d_act, &s.sparse));
  };
  if (delayed) {
    forward(0);
    for (int i = 0; i < kSteps; ++i) {
      dense_step(i);
      if (i + 1 < kSteps) forward(i + 1);
      backward(i);
    }
  } else {
    for (int i = 0; i < kSteps; ++i) {
      forward(i);
      dense_step(i);
      backward(i);
    }
  }
  auto stats = ComputeModelStats(**comm, sparse, (*dense)->model().params());
  CHECK(stats.ok()) << stats.status();
  return stats->checksum;
}

TEST(DelayedUpdateReferenceTest, PipelinedTrainerEqualsDelayedReference) {
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const std::string pipelined = TrainerChecksum(LoadConfig(/*pipelining=*/true, world));
  const std::string delayed = ReferenceChecksum(LoadConfig(true, world), /*delayed=*/true);
  const std::string unpipelined = TrainerChecksum(LoadConfig(/*pipelining=*/false, world));
  const std::string sequential = ReferenceChecksum(LoadConfig(false, world), /*delayed=*/false);
  EXPECT_EQ(pipelined, delayed);
  EXPECT_EQ(unpipelined, sequential);
  EXPECT_NE(delayed, sequential) << "a one-step delay of the updates should change the model";
}

}  // namespace
}  // namespace lemrt::runtime
