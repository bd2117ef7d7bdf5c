#include "runtime/threads/thread_budget.h"

#include <string>

#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::runtime {
namespace {

config::RunConfig Config(const std::string& sparse_core) {
  const std::string text = R"pb(
topology { num_chips: 1 sparse_cores_per_chip: 2 }
tables { name: "a" vocab_size: 100 dim: 4 }
features { name: "a1" table: "a" }
model { num_dense_features: 2 bottom_mlp: [ 4 ] top_mlp: [ 4, 1 ] }
training { global_batch: 8 steps: 2 }
sparse_core { )pb" + sparse_core + " }\n";
  auto c = config::ParseConfig(text, "thread_budget_test", "", 1);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(ThreadBudgetTest, CountsEachBusyThreadOfTheTrainer) {
  const ThreadBudget b = ComputeThreadBudget(Config("host_worker_threads: 3 tile_threads: 4"),
                                             /*ranks_per_node=*/2, /*cores=*/64);
  EXPECT_EQ(b.tensorcore, 1);
  EXPECT_EQ(b.sparsecore_executor, 1);  // pipelining is on by default
  EXPECT_EQ(b.host_workers, 3);
  EXPECT_EQ(b.tile_workers, 3);
  EXPECT_EQ(b.busy_per_rank(), 8);
  EXPECT_FALSE(b.oversubscribed());  // 16 <= 64
  EXPECT_EQ(OversubscriptionWarning(b), "");
}

TEST(ThreadBudgetTest, SequentialRunKeepsOneThreadBusy) {
  const ThreadBudget b = ComputeThreadBudget(
      Config("disable_full_embedding_pipelining: true maximum_parallel_iterations: 0"),
      /*ranks_per_node=*/2, /*cores=*/2);
  EXPECT_EQ(b.sparsecore_executor, 0);
  EXPECT_EQ(b.host_workers, 0);
  EXPECT_EQ(b.tile_workers, 0);
  EXPECT_EQ(b.busy_per_rank(), 1);
  EXPECT_EQ(OversubscriptionWarning(b), "");
  // The one-thread pipelined reference has no executor thread either.
  EXPECT_EQ(ComputeThreadBudget(Config("pipeline_without_threads: true"), 1, 2)
                .sparsecore_executor,
            0);
}

// The GEMM team polls through a step only when no other thread of the rank
// is busy: not with the executor thread, host workers or tile workers.
TEST(ThreadBudgetTest, TensorCoreTeamPollsOnlyAlone) {
  const std::string alone = "disable_full_embedding_pipelining: true maximum_parallel_iterations: 0";
  EXPECT_TRUE(TensorCoreTeamPolls(Config(alone)));
  EXPECT_TRUE(TensorCoreTeamPolls(Config("pipeline_without_threads: true "
                                         "maximum_parallel_iterations: 0")));
  EXPECT_FALSE(TensorCoreTeamPolls(Config("")));  // executor thread and host workers
  EXPECT_FALSE(TensorCoreTeamPolls(Config("disable_full_embedding_pipelining: true")));
  EXPECT_FALSE(TensorCoreTeamPolls(Config(alone + " tile_threads: 2")));
}

TEST(ThreadBudgetTest, DefaultHostWorkersAreTheTrainers) {
  const config::RunConfig c = Config("");
  EXPECT_EQ(ComputeThreadBudget(c, 3, 8).host_workers, HostWorkerThreads(c, 3));
}

TEST(ThreadBudgetTest, WarningNamesTheCountsAndWhatToLower) {
  const ThreadBudget b = ComputeThreadBudget(Config("host_worker_threads: 2 tile_threads: 2"),
                                             /*ranks_per_node=*/2, /*cores=*/4);
  ASSERT_TRUE(b.oversubscribed());  // 2 x (1 + 1 + 2 + 1) = 10 > 4
  const std::string w = OversubscriptionWarning(b);
  EXPECT_NE(w.find("2 ranks on this node x 5 busy threads per rank (1 TensorCore (main) + 1 "
                   "SparseCore executor + 2 host workers + 1 tile workers) = 10 threads on 4 "
                   "cores"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("sparse_core.host_worker_threads (now 2"), std::string::npos) << w;
  EXPECT_NE(w.find("sparse_core.tile_threads (now 2)"), std::string::npos) << w;
  EXPECT_NE(w.find("maximum_parallel_iterations: 0"), std::string::npos) << w;
  EXPECT_NE(w.find("disable_full_embedding_pipelining"), std::string::npos) << w;
  EXPECT_NE(w.find("the ranks per node (now 2)"), std::string::npos) << w;
}

TEST(ThreadBudgetTest, AvailableCoresIsPositive) { EXPECT_GE(AvailableCores(), 1); }

}  // namespace
}  // namespace lemrt::runtime
