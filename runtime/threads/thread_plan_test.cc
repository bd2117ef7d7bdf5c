#include "runtime/threads/thread_plan.h"

#include <sched.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/config_loader.h"
#include "runtime/threads/core_share.h"

namespace lemrt::runtime {
namespace {

cpu_set_t Mask(std::vector<int> cpus) {
  cpu_set_t s;
  CPU_ZERO(&s);
  for (int c : cpus) CPU_SET(c, &s);
  return s;
}

// ranks_on_cpu for a node whose ranks hold `masks`.
std::vector<int64_t> Counts(const std::vector<std::vector<int>>& masks) {
  std::vector<int64_t> n(CPU_SETSIZE, 0);
  for (const auto& m : masks) {
    for (int c : m) ++n[c];
  }
  return n;
}

TEST(CoreShareTest, BoundRanksOwnTheirMasks) {
  const auto counts = Counts({{0}, {1}});
  const CoreShare s = ComputeCoreShare(Mask({1}), counts, 2, 2);
  EXPECT_EQ(s.mask_cpus, 1);
  EXPECT_DOUBLE_EQ(s.cores, 1.0);
  EXPECT_EQ(s.whole_cores(), 1);
  EXPECT_EQ(s.node_cpus_used, 2);
}

TEST(CoreShareTest, UnboundRanksShareTheCpus) {
  const auto counts = Counts({{0, 1}, {0, 1}, {0, 1}, {0, 1}});
  const CoreShare s = ComputeCoreShare(Mask({0, 1}), counts, 4, 2);
  EXPECT_DOUBLE_EQ(s.cores, 0.5);
  EXPECT_EQ(s.whole_cores(), 1);  // at least one
  const CoreShare one = ComputeCoreShare(Mask({0, 1}), Counts({{0, 1}}), 1, 2);
  EXPECT_DOUBLE_EQ(one.cores, 2.0);
  EXPECT_EQ(one.whole_cores(), 2);
}

TEST(CoreShareTest, OverlappingMasksCountEachCpuOnce) {
  // Rank A on {0,1,2}, rank B on {2,3}: A owns 1 + 1 + 1/2.
  const auto counts = Counts({{0, 1, 2}, {2, 3}});
  EXPECT_DOUBLE_EQ(ComputeCoreShare(Mask({0, 1, 2}), counts, 2, 8).cores, 2.5);
  EXPECT_DOUBLE_EQ(ComputeCoreShare(Mask({2, 3}), counts, 2, 8).cores, 1.5);
  EXPECT_EQ(ComputeCoreShare(Mask({2, 3}), counts, 2, 8).node_cpus_used, 4);
}

config::RunConfig Config(const std::string& extra) {
  const std::string text = R"pb(
topology { num_chips: 1 sparse_cores_per_chip: 2 }
tables { name: "a" vocab_size: 100 dim: 4 }
features { name: "a1" table: "a" }
model { num_dense_features: 2 bottom_mlp: [ 4 ] top_mlp: [ 4, 1 ] }
training { global_batch: 8 steps: 2 }
)pb" + extra + "\n";
  auto c = config::ParseConfig(text, "thread_plan_test", "", 1);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

CoreShare Share(double cores, int local_ranks, int node_cpus, int mask_cpus) {
  CoreShare s;
  s.cores = cores;
  s.local_ranks = local_ranks;
  s.node_cpus = node_cpus;
  s.mask_cpus = mask_cpus;
  return s;
}

TEST(ThreadPlanTest, OneRankOnTwoCoresPipelinesAndUsesBothForGemms) {
  const ThreadPlan p = PlanThreads(Config(""), Share(2, 1, 2, 2));
  EXPECT_TRUE(p.pipelining);
  EXPECT_TRUE(p.executor_thread);  // the second core overlaps the stages
  EXPECT_TRUE(p.chose_executor_thread);
  // No core is spare, but two workers fill the stages' waits (the second
  // while the host stage is behind).
  EXPECT_EQ(p.maximum_parallel_iterations, 2);
  EXPECT_EQ(p.host_worker_threads, 2);
  EXPECT_EQ(p.gemm_threads, 2);
  EXPECT_EQ(p.tile_threads, 2);  // the tiles take the core the host stage leaves
  EXPECT_TRUE(p.chose_host_workers && p.chose_gemm_threads && p.chose_tile_threads);
}

// Pipelining changes results, so one core per rank keeps it as configured
// (on by default), but runs its schedule on the TensorCore thread: no
// executor thread, no host workers and one GEMM thread.
TEST(ThreadPlanTest, OneCorePerRankPipelinesOnOneThread) {
  for (double cores : {1.0, 0.5}) {
    const ThreadPlan p = PlanThreads(Config(""), Share(cores, 2, 2, 1));
    EXPECT_TRUE(p.pipelining);
    EXPECT_FALSE(p.executor_thread);
    EXPECT_TRUE(p.chose_executor_thread);
    EXPECT_EQ(p.maximum_parallel_iterations, 0);
    EXPECT_EQ(p.gemm_threads, 1);
    EXPECT_EQ(p.tile_threads, 1);
    config::RunConfig c = Config("");
    ApplyThreadPlan(p, &c);
    EXPECT_TRUE(c.sparse_core().pipeline_without_threads());
    EXPECT_FALSE(c.sparse_core().disable_full_embedding_pipelining());
  }
}

TEST(ThreadPlanTest, AConfiguredExecutorChoiceIsKept) {
  const ThreadPlan threaded = PlanThreads(
      Config("sparse_core { pipeline_without_threads: false }"), Share(1, 2, 2, 1));
  EXPECT_TRUE(threaded.executor_thread);
  EXPECT_FALSE(threaded.chose_executor_thread);
  const ThreadPlan inline_schedule = PlanThreads(
      Config("sparse_core { pipeline_without_threads: true }"), Share(8, 1, 8, 8));
  EXPECT_FALSE(inline_schedule.executor_thread);
  EXPECT_EQ(inline_schedule.host_worker_threads, 7);  // the executor's core is spare
  // Without pipelining there is no executor to choose.
  const ThreadPlan off = PlanThreads(
      Config("sparse_core { disable_full_embedding_pipelining: true }"), Share(2, 1, 2, 2));
  EXPECT_FALSE(off.executor_thread || off.chose_executor_thread);
  config::RunConfig c = Config("sparse_core { disable_full_embedding_pipelining: true }");
  ApplyThreadPlan(off, &c);
  EXPECT_FALSE(c.sparse_core().has_pipeline_without_threads());
}

TEST(ThreadPlanTest, ManyCoresGetHostWorkers) {
  const ThreadPlan p = PlanThreads(Config(""), Share(8, 2, 16, 8));
  EXPECT_TRUE(p.pipelining);
  EXPECT_EQ(p.maximum_parallel_iterations, 2);  // the field's default
  EXPECT_EQ(p.host_worker_threads, 6);
  EXPECT_EQ(p.gemm_threads, 8);
  EXPECT_EQ(p.tile_threads, 8);
}

TEST(ThreadPlanTest, PipeliningFollowsTheConfigNotTheCores) {
  const ThreadPlan p = PlanThreads(Config(""), Share(4, 2, 8, 4));
  EXPECT_TRUE(p.pipelining);
  EXPECT_EQ(p.host_worker_threads, 2);  // this rank's spare cores
  const ThreadPlan off = PlanThreads(
      Config("sparse_core { disable_full_embedding_pipelining: true }"), Share(8, 1, 8, 8));
  EXPECT_FALSE(off.pipelining);
  EXPECT_EQ(off.host_worker_threads, 7);  // no executor thread
  EXPECT_EQ(p.gemm_threads, 4);
}

TEST(ThreadPlanTest, SetFieldsAreKept) {
  const config::RunConfig c =
      Config("sparse_core { disable_full_embedding_pipelining: false "
             "pipeline_without_threads: false "
             "maximum_parallel_iterations: 3 host_worker_threads: 5 tile_threads: 3 } "
             "tensor_core { gemm_threads: 3 }");
  const ThreadPlan p = PlanThreads(c, Share(1, 2, 2, 1));
  EXPECT_TRUE(p.pipelining);
  EXPECT_EQ(p.maximum_parallel_iterations, 3);
  EXPECT_EQ(p.host_worker_threads, 5);
  EXPECT_EQ(p.gemm_threads, 3);
  EXPECT_EQ(p.tile_threads, 3);
  EXPECT_TRUE(p.executor_thread);
  EXPECT_FALSE(p.chose_executor_thread || p.chose_host_workers || p.chose_gemm_threads ||
               p.chose_tile_threads);
  config::RunConfig applied = c;
  ApplyThreadPlan(p, &applied);
  EXPECT_EQ(applied.SerializeAsString(), [&] {
    config::RunConfig want = c;
    want.mutable_sparse_core()->set_disable_full_embedding_pipelining(false);
    return want.SerializeAsString();
  }());
}

TEST(ThreadPlanTest, AConfiguredWorkerCountKeepsTheWorkers) {
  const ThreadPlan p =
      PlanThreads(Config("sparse_core { host_worker_threads: 4 }"), Share(1, 2, 2, 1));
  EXPECT_FALSE(p.chose_host_workers);
  EXPECT_EQ(p.maximum_parallel_iterations, 2);
  EXPECT_EQ(p.host_worker_threads, 4);
  // A configured depth with the worker count left at 0: the spare cores.
  const ThreadPlan q = PlanThreads(Config("sparse_core { maximum_parallel_iterations: 3 }"),
                                   Share(1, 2, 2, 1));
  EXPECT_EQ(q.maximum_parallel_iterations, 3);
  EXPECT_EQ(q.host_worker_threads, 1);
}

TEST(ThreadPlanTest, ApplyWritesExplicitValues) {
  config::RunConfig c = Config("");
  const ThreadPlan p = PlanThreads(c, Share(1, 1, 2, 1));
  ApplyThreadPlan(p, &c);
  EXPECT_TRUE(c.sparse_core().has_disable_full_embedding_pipelining());
  EXPECT_FALSE(c.sparse_core().disable_full_embedding_pipelining());
  EXPECT_TRUE(c.sparse_core().has_pipeline_without_threads());
  EXPECT_TRUE(c.sparse_core().pipeline_without_threads());
  EXPECT_EQ(c.sparse_core().maximum_parallel_iterations(), 0);
  EXPECT_EQ(c.tensor_core().gemm_threads(), 1);
  const std::string line = DescribeThreadPlan(p, Share(1, 1, 2, 1));
  EXPECT_NE(line.find("pipelining on (set) on the TensorCore thread (chosen)"), std::string::npos)
      << line;
  EXPECT_NE(line.find("no host workers (host work inline) (chosen)"), std::string::npos) << line;
  EXPECT_NE(line.find("1 GEMM thread (chosen)"), std::string::npos) << line;
  EXPECT_NE(line.find("1 tile thread (chosen)"), std::string::npos) << line;
  EXPECT_TRUE(c.sparse_core().has_tile_threads());
  EXPECT_EQ(c.sparse_core().tile_threads(), 1);
}

TEST(LaunchAdviceTest, NamesTheMpirunFlagsWhenAMaskBindsTighterThanTheShare) {
  // mpirun -np 1 on 2 CPUs binds the rank to one core.
  const std::string a = LaunchAdvice(Share(1, 1, 2, 1));
  EXPECT_NE(a.find("--bind-to none"), std::string::npos) << a;
  EXPECT_NE(a.find("--map-by slot:PE=2"), std::string::npos) << a;
  // 2 ranks bound to a core each, or unbound: each owns its share.
  EXPECT_EQ(LaunchAdvice(Share(1, 2, 2, 1)), "");
  EXPECT_EQ(LaunchAdvice(Share(1, 2, 2, 2)), "");
  EXPECT_EQ(LaunchAdvice(Share(2, 1, 2, 2)), "");
  // More ranks than CPUs.
  EXPECT_NE(LaunchAdvice(Share(0.5, 4, 2, 2)).find("at most 2 ranks per node"),
            std::string::npos);
}

}  // namespace
}  // namespace lemrt::runtime
