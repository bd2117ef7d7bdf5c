// Step buffers reserved at start-up (runtime/step/step_buffer_reserve.h): with
// the plan's bounds, no buffer of a reserved SparseStepBuffers moves (is
// reallocated) in any step, with conservative bounds, with partition limits
// that split steps into minibatches, and with stacked, serialized tables; the
// activations and the trained tables are bit-identical to a run whose buffers
// grow on demand. On 1 and 2 ranks.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device/optimizers/optimizer.h"
#include "device/plan/memory_plan.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "host/input/data_source.h"
#include "layout/limits.h"
#include "proto/config_loader.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/step/host_stage.h"
#include "runtime/step/sparsecore_stage.h"
#include "runtime/step/step_buffer_reserve.h"
#include "runtime/step/table_serialization.h"
#include "runtime/step/tensorcore_stage.h"

namespace lemrt::runtime {
namespace {

// Multi-hot features of three combiners; a and d stack (padded dim 16, SUM,
// Adagrad). Global batch 64 (divisible by the 4 and 8 SparseCores).
constexpr char kConfig[] = R"pb(
tables { name: "a" vocab_size: 3000 dim: 16 combiner: SUM optimizer { adagrad {} } }
tables { name: "b" vocab_size: 500  dim: 8  combiner: MEAN }
tables { name: "c" vocab_size: 20   dim: 32 combiner: SQRTN }
tables { name: "d" vocab_size: 700  dim: 12 combiner: SUM optimizer { adagrad {} } }
features { name: "a1" table: "a" max_sequence_length: 6 }
features { name: "a2" table: "a" max_sequence_length: 2 }
features { name: "b1" table: "b" max_sequence_length: 5 }
features { name: "c1" table: "c" max_sequence_length: 9 }
features { name: "d1" table: "d" max_sequence_length: 3 }
sparse_core { }
model { num_dense_features: 4 bottom_mlp: [ 16, 8 ] top_mlp: [ 8, 1 ] }
training { global_batch: 64 seed: 5 }
data { synthetic { zipf_fraction: 0.7 } }
)pb";

struct Result {
  std::vector<float> activations;  // every step's, concatenated
  std::vector<float> tables;       // every shard's weights after the steps
  int moved = 0;                   // reserved buffers that moved
  size_t max_minibatches = 0;
  bool serialized = false;         // whether the stacks ran in serialized groups
};

Result Train(const std::string& config_text, bool reserve) {
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto config = config::ParseConfig(config_text, "reserve_test", "", world);
  CHECK(config.ok()) << config.status();
  auto comm = MpiCommunicator::Create(MPI_COMM_WORLD);
  CHECK(comm.ok()) << comm.status();
  auto data = host::CreateDataSource(*config, rank, world);
  CHECK(data.ok()) << data.status();
  auto limits = layout::ResolveLimits(*config);
  CHECK(limits.ok()) << limits.status();
  HostStage host(*config, **comm, **data, std::move(*limits));
  std::vector<std::unique_ptr<device::Optimizer>> owned;
  std::vector<const device::Optimizer*> optimizers;
  for (const auto& t : config->tables()) {
    owned.push_back(device::CreateOptimizer(t.optimizer(), 0.05f));
    optimizers.push_back(owned.back().get());
  }
  SparseCoreStage sparse(*config, **comm, optimizers);
  auto dense = TensorCoreStage::Create(*config, **comm);
  CHECK(dense.ok()) << dense.status();
  auto plan = device::BuildMemoryPlan(*config);
  CHECK(plan.ok()) << plan.status();
  Result r;
  const TableSerializer serializer(*plan);
  r.serialized = serializer.active();
  const StepBufferBounds bounds = StepBufferBoundsFromPlan(*config, *plan);

  std::vector<SparseStepBuffers> bufs(1);
  if (reserve) ReserveStepBuffers(bounds, /*touch=*/true, &bufs[0]);
  const std::vector<const void*> reserved = StepBufferAddresses(bounds, bufs[0]);
  const int64_t local_batch = config->training().global_batch() / world;
  host::Batch batch;
  layout::PartitionedCoo coo;
  std::vector<layout::PartitionedCoo> minibatches, groups;
  std::vector<float> act(local_batch * sparse.activation_width()), d_act(act.size());
  for (int s = 0; s < 6; ++s) {
    absl::Status st = host.PrepareTrain(s, &batch, &coo, &minibatches);
    CHECK(st.ok()) << st;
    r.max_minibatches = std::max(r.max_minibatches, minibatches.size());
    const std::span<const layout::PartitionedCoo> runs = serializer.Expand(minibatches, &groups);
    st = sparse.Forward(runs, &bufs, act);
    if (st.ok()) st = (*dense)->Step(s, batch, act, d_act).status();
    if (st.ok()) st = sparse.Backward(runs, d_act, &bufs);
    CHECK(st.ok()) << st;
    r.activations.insert(r.activations.end(), act.begin(), act.end());
  }
  const std::vector<const void*> after = StepBufferAddresses(bounds, bufs[0]);
  for (size_t i = 0; i < after.size(); ++i) r.moved += reserve && after[i] != reserved[i];
  for (const auto& sc : sparse.sparse_cores()) {
    for (int t = 0; t < sc->num_tables(); ++t) {
      const auto w = sc->shard(t).weights();
      r.tables.insert(r.tables.end(), w.begin(), w.end());
    }
  }
  return r;
}

void ExpectReservedRunMatches(const std::string& config_text, const char* what,
                              size_t min_minibatches = 1, bool serialized = false) {
  const Result grown = Train(config_text, /*reserve=*/false);
  const Result reserved = Train(config_text, /*reserve=*/true);
  EXPECT_EQ(reserved.moved, 0) << what << ": buffers outgrew the plan's bounds";
  EXPECT_GE(reserved.max_minibatches, min_minibatches) << what;
  EXPECT_EQ(reserved.serialized, serialized) << what << ": serialized stacks";
  ASSERT_EQ(grown.activations.size(), reserved.activations.size());
  EXPECT_EQ(std::memcmp(grown.activations.data(), reserved.activations.data(),
                        sizeof(float) * grown.activations.size()),
            0)
      << what << ": activations differ";
  ASSERT_EQ(grown.tables.size(), reserved.tables.size());
  EXPECT_EQ(std::memcmp(grown.tables.data(), reserved.tables.data(),
                        sizeof(float) * grown.tables.size()),
            0)
      << what << ": trained tables differ";
}

std::string WithSparseCore(const std::string& fields) {
  std::string text = kConfig;
  const std::string block = "sparse_core { ";
  text.replace(text.find(block), block.size(), block + fields + " ");
  return text;
}

TEST(StepBufferReserveTest, ConservativeBoundsHold) {
  ExpectReservedRunMatches(kConfig, "stacked, no limits");
  ExpectReservedRunMatches(WithSparseCore("disable_table_stacking: true"), "unstacked");
}

TEST(StepBufferReserveTest, PartitionLimitsBoundEachMinibatch) {
  ExpectReservedRunMatches(
      WithSparseCore("max_unique_ids_per_partition: 6"), "limits, minibatched",
      /*min_minibatches=*/2);
}

TEST(StepBufferReserveTest, SerializedStacksFit) {
  ExpectReservedRunMatches(
      WithSparseCore("xla_sc_num_serialized_tables_to_optimize_hbm: 2 "
                     "max_unique_ids_per_partition: 10"),
      "serialized stacks", /*min_minibatches=*/1, /*serialized=*/true);
}

// Limits make the bounds smaller than the conservative ones.
TEST(StepBufferReserveTest, LimitsTightenTheBounds) {
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  auto loose = config::ParseConfig(kConfig, "t", "", world);
  auto tight =
      config::ParseConfig(WithSparseCore("max_unique_ids_per_partition: 6"), "t", "", world);
  ASSERT_TRUE(loose.ok() && tight.ok());
  auto loose_plan = device::BuildMemoryPlan(*loose);
  auto tight_plan = device::BuildMemoryPlan(*tight);
  ASSERT_TRUE(loose_plan.ok() && tight_plan.ok());
  const StepBufferBounds a = StepBufferBoundsFromPlan(*loose, *loose_plan);
  const StepBufferBounds b = StepBufferBoundsFromPlan(*tight, *tight_plan);
  EXPECT_EQ(b.sc_ids, a.sc_ids);
  EXPECT_LT(b.sc_unique, a.sc_unique);
  EXPECT_LT(b.sc_unique_floats, a.sc_unique_floats);
  EXPECT_LT(b.bytes(), a.bytes());
  // Per stack (a+d, b, c): N partitions x 6 unique ids, at most the rows on
  // one SparseCore (table c has 20 rows).
  const int64_t n = int64_t{tight_plan->num_chips} * tight_plan->sparse_cores_per_chip;
  int64_t unique = 0, floats = 0;
  ASSERT_EQ(tight_plan->stacks.size(), 3u);
  for (const device::StackPlan& s : tight_plan->stacks) {
    unique += std::min(n * 6, s.rows_per_sparse_core);
    floats += std::min(n * 6, s.rows_per_sparse_core) * s.padded_dim;
  }
  EXPECT_EQ(b.sc_unique, unique);
  EXPECT_EQ(b.sc_unique_floats, floats);
  EXPECT_LT(b.sc_unique, 3 * n * 6);  // c's rows cap it
}

}  // namespace
}  // namespace lemrt::runtime
