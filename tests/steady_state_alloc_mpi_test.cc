// The steady-state training step allocates nothing: after a few warm-up
// steps, host preprocessing (HostStage), the SparseCore forward exchange and
// lookup, the TensorCore step (dense forward/backward, all-reduce, optimizer)
// and the SparseCore backward (gradient exchange and update) run the same
// sequence as the trainer's step without one call to the C++ allocator
// (operator new / new[], any alignment), on 1 and 2 ranks, also with
// serialized stacks (runtime/step/table_serialization.h: each step split into
// table groups with their own exchanges). Buffers may grow while warming up;
// the measured steps replay the warm-up steps' data.
//
// The counting operator new of this binary is process-wide (it must replace
// the global one); it counts only while `g_counting` is set. C allocations
// (MPI's internals, Eigen's aligned malloc) are not seen.
#include <execinfo.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "device/optimizers/optimizer.h"
#include "device/plan/memory_plan.h"
#include "device/sparsecore/tile_pool.h"
#include "device/tensorcore/gemm.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "host/batch.h"
#include "host/preprocess/coo.h"
#include "host/input/data_source.h"
#include "layout/limits.h"
#include "proto/config_loader.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/step/host_prefetcher.h"
#include "runtime/step/host_stage.h"
#include "runtime/hot_rows/hot_row_choice.h"
#include "runtime/step/sparsecore_stage.h"
#include "runtime/step/table_serialization.h"
#include "runtime/step/tensorcore_stage.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_news{0};

// With LEMRT_ALLOC_TRACE set, each counted allocation prints its call stack
// to stderr (symbolise with addr2line), to find the allocating component.
void* CountedNew(std::size_t n, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_news.fetch_add(1);
    if (std::getenv("LEMRT_ALLOC_TRACE") != nullptr) {
      g_counting.store(false);
      void* frames[24];
      const int depth = backtrace(frames, 24);
      backtrace_symbols_fd(frames, depth, STDERR_FILENO);
      (void)!write(STDERR_FILENO, "--\n", 3);
      g_counting.store(true);
    }
  }
  if (n == 0) n = 1;
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(n);
  } else if (posix_memalign(&p, align, n) != 0) {
    p = nullptr;
  }
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return CountedNew(n, 0); }
void* operator new[](std::size_t n) { return CountedNew(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return CountedNew(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return CountedNew(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace lemrt::runtime {
namespace {

// Multi-hot features, a combiner of each kind, SGD and Adagrad tables, global
// batch 192 (divisible by the 4 and 8 SparseCores of 1 and 2 ranks).
constexpr char kConfig[] = R"pb(
tables { name: "a" vocab_size: 20000 dim: 16 combiner: SUM optimizer { adagrad {} } }
tables { name: "b" vocab_size: 5000  dim: 8  combiner: MEAN }
tables { name: "c" vocab_size: 3000  dim: 32 combiner: SQRTN }
features { name: "a1" table: "a" }
features { name: "a2" table: "a" max_sequence_length: 4 }
features { name: "b1" table: "b" max_sequence_length: 3 }
features { name: "c1" table: "c" max_sequence_length: 2 }
model { num_dense_features: 13 bottom_mlp: [ 32, 16 ] top_mlp: [ 32, 1 ] }
training { global_batch: 192 seed: 7 }
)pb";

// kConfig plus table d, which stacks with a (padded dim 16, SUM, Adagrad):
// stacks a+d, b and c, the two with the largest stack term serialized.
constexpr char kSerializedConfig[] = R"pb(
tables { name: "a" vocab_size: 20000 dim: 16 combiner: SUM optimizer { adagrad {} } }
tables { name: "b" vocab_size: 5000  dim: 8  combiner: MEAN }
tables { name: "c" vocab_size: 3000  dim: 32 combiner: SQRTN }
tables { name: "d" vocab_size: 7000  dim: 12 combiner: SUM optimizer { adagrad {} } }
features { name: "a1" table: "a" }
features { name: "a2" table: "a" max_sequence_length: 4 }
features { name: "b1" table: "b" max_sequence_length: 3 }
features { name: "c1" table: "c" max_sequence_length: 2 }
features { name: "d1" table: "d" max_sequence_length: 2 }
sparse_core { xla_sc_num_serialized_tables_to_optimize_hbm: 2 }
model { num_dense_features: 13 bottom_mlp: [ 32, 16 ] top_mlp: [ 32, 1 ] }
training { global_batch: 192 seed: 7 }
)pb";

// The host stage of a config on this rank, with what it needs, and the
// config's hot rows (runtime/hot_rows/hot_row_choice.h; listed rows: no counting).
struct HostRig {
  explicit HostRig(const char* config_text = kConfig) {
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    auto parsed = config::ParseConfig(config_text, "alloc_test", "", world);
    CHECK(parsed.ok()) << parsed.status();
    config = std::move(*parsed);
    auto c = MpiCommunicator::Create(MPI_COMM_WORLD);
    CHECK(c.ok()) << c.status();
    comm = std::move(*c);
    auto d = host::CreateDataSource(config, rank, world);
    CHECK(d.ok()) << d.status();
    data = std::move(*d);
    auto limits = layout::ResolveLimits(config);
    CHECK(limits.ok()) << limits.status();
    auto chosen = ChooseHotRows(config, *comm, nullptr);
    CHECK(chosen.ok()) << chosen.status();
    hot_rows = chosen->placed;
    host = std::make_unique<HostStage>(config, *comm, *data, std::move(*limits), hot_rows);
  }
  int world = 1, rank = 0;
  config::RunConfig config;
  host::HotRowSet hot_rows;
  std::unique_ptr<MpiCommunicator> comm;
  std::unique_ptr<host::DataSource> data;
  std::unique_ptr<HostStage> host;
};

// Runs the trainer's step (runtime/trainer.cc, without the recorder's hooks)
// over 8 steps, then replays them counting operator new; with `tile_threads`
// > 1 the SparseCores share a tile pool of that many threads, as the
// trainer's do. Returns the most minibatches a step had.
size_t ExpectReplayedStepsAllocateNothing(const char* config_text, bool serialized,
                                          int tile_threads = 0) {
  HostRig rig(config_text);
  const int world = rig.world, rank = rig.rank;
  const config::RunConfig* config = &rig.config;
  Communicator& comm = *rig.comm;
  HostStage& host = *rig.host;
  std::vector<std::unique_ptr<device::Optimizer>> owned;
  std::vector<const device::Optimizer*> optimizers;
  for (const auto& t : config->tables()) {
    owned.push_back(
        device::CreateOptimizer(t.optimizer(), config->training().embedding_learning_rate()));
    optimizers.push_back(owned.back().get());
  }
  SparseCoreStage sparse(*config, comm, optimizers);
  device::TilePool pool(tile_threads);
  if (tile_threads > 1) {
    for (const auto& sc : sparse.sparse_cores()) sc->set_tile_pool(&pool);
  }
  sparse.SetHotRows(rig.hot_rows, optimizers);
  CHECK(sparse.RefreshHotRows().ok());
  auto dense = TensorCoreStage::Create(*config, comm);
  CHECK(dense.ok()) << dense.status();
  auto plan = device::BuildMemoryPlan(*config);
  CHECK(plan.ok()) << plan.status();
  const TableSerializer serializer(*plan);
  CHECK_EQ(serializer.active(), serialized);
  std::vector<layout::PartitionedCoo> groups;  // the trainer's StepSlot::table_groups
  size_t max_minibatches = 0;

  const int64_t local_batch = config->training().global_batch() / world;
  host::Batch batch;
  layout::PartitionedCoo coo;
  std::vector<layout::PartitionedCoo> minibatches;
  std::vector<SparseStepBuffers> bufs;
  std::vector<host::HotEntry> hot;
  int64_t hot_seen = 0;
  std::vector<float> act(local_batch * sparse.activation_width());
  std::vector<float> d_act(act.size());
  // The trainer's step (runtime/trainer.cc), without the recorder's hooks.
  auto step = [&](int64_t s) {
    absl::Status st = host.PrepareTrain(s, &batch, &coo, &minibatches, &hot);
    if (!st.ok()) return st;
    max_minibatches = std::max(max_minibatches, minibatches.size());
    hot_seen += static_cast<int64_t>(hot.size());
    const std::span<const layout::PartitionedCoo> runs = serializer.Expand(minibatches, &groups);
    st = sparse.Forward(runs, &bufs, act);
    if (st.ok()) sparse.LookupHot(hot, act);
    if (st.ok()) st = (*dense)->Step(s, batch, act, d_act).status();
    if (st.ok()) st = sparse.Backward(runs, d_act, &bufs);
    if (st.ok()) st = sparse.UpdateHot(hot, d_act);
    return st;
  };

  // Warm-up runs steps 0..kSteps-1; the measured pass replays the same steps
  // (the data is a function of the step), so every buffer has already grown
  // to the sizes it needs and any allocation left is made every step.
  constexpr int kSteps = 8;
  for (int s = 0; s < kSteps; ++s) {
    const absl::Status st = step(s);
    CHECK(st.ok()) << st;
  }
  constexpr int kMeasured = kSteps;
  int64_t news_per_step[kMeasured];
  for (int s = 0; s < kMeasured; ++s) {
    const int64_t before = g_news.load();
    g_counting.store(true);
    const absl::Status st = step(s);
    g_counting.store(false);
    news_per_step[s] = g_news.load() - before;
    CHECK(st.ok()) << st;
  }
  if (!rig.hot_rows.empty()) {
    EXPECT_GT(hot_seen, 0) << "rank " << rank << ": no hot entry";
  }
  for (int s = 0; s < kMeasured; ++s) {
    EXPECT_EQ(news_per_step[s], 0) << "rank " << rank << " replayed step " << s
                                   << " called operator new " << news_per_step[s] << " times"
                                   << (serialized ? " (serialized stacks)" : "");
  }
  return max_minibatches;
}

TEST(SteadyStateAllocTest, TrainingStepAllocatesNothing) {
  ExpectReplayedStepsAllocateNothing(kConfig, /*serialized=*/false);
}

// The tile pool's threads (device/sparsecore/tile_pool.h): every job the
// stage and its SparseCores hand it (numbering, lookups, partial sums,
// gradient copies, updates) runs without a call to the allocator.
TEST(SteadyStateAllocTest, TilePoolStepAllocatesNothing) {
  ExpectReplayedStepsAllocateNothing(kConfig, /*serialized=*/false, /*tile_threads=*/3);
}

// bf16 dense products (model.dense_dtype): each thread's bf16 operand
// scratch grows in the warm-up steps and stays.
TEST(SteadyStateAllocTest, Bf16DenseStepAllocatesNothing) {
  if (!device::CheckBf16Products().ok()) {
    GTEST_SKIP() << device::CheckBf16Products();
  }
  std::string bf16 = kConfig;
  const std::string top = "top_mlp: [ 32, 1 ]";
  bf16.replace(bf16.find(top), top.size(), top + " dense_dtype: BF16");
  ExpectReplayedStepsAllocateNothing(bf16.c_str(), /*serialized=*/false);
}

// Serialized stacks: each step runs three table groups (b, then a+d, then c:
// its own exchange, lookup and update each).
TEST(SteadyStateAllocTest, SerializedStepAllocatesNothing) {
  ExpectReplayedStepsAllocateNothing(kSerializedConfig, /*serialized=*/true);
}

// Partition limits split steps into a varying number of vocabulary-dimension
// minibatches (host/preprocess/minibatch.h), each run as three serialized table groups.
TEST(SteadyStateAllocTest, MinibatchedSerializedStepAllocatesNothing) {
  std::string limited = kSerializedConfig;
  const std::string block = "sparse_core { ";
  limited.replace(limited.find(block), block.size(),
                  block + "max_unique_ids_per_partition: 8 ");
  const size_t max_minibatches =
      ExpectReplayedStepsAllocateNothing(limited.c_str(), /*serialized=*/true);
  EXPECT_GT(max_minibatches, 1u);
}

// Hot-row replication (runtime/hot_rows/hot_row_replicas.h): the hot entries taken
// out of the COO, their lookup and their update with its all-reduce
// allocate nothing once warm; also under partition limits (the split counts
// by sorting, as the builder's counts would include the hot ids).
TEST(SteadyStateAllocTest, HotRowStepAllocatesNothing) {
  std::string hot = kConfig;
  hot.insert(hot.find("combiner: SUM optimizer"), "hot_row_ids: [0, 1, 2, 7] ");
  hot.insert(hot.find("combiner: MEAN"), "hot_row_ids: [3] ");
  ExpectReplayedStepsAllocateNothing(hot.c_str(), /*serialized=*/false);
  hot += "sparse_core { max_unique_ids_per_partition: 8 }";
  EXPECT_GT(ExpectReplayedStepsAllocateNothing(hot.c_str(), /*serialized=*/false), 1u);
}

// The host worker threads (runtime/step/host_prefetcher.h): with two workers and a
// queue of two steps, the workers' local half (data read, COO, dedup,
// partition, stats) and the consumer's collective half (agreement, split)
// allocate nothing once warm. A step of one minibatch swaps its COO's
// buffers with the minibatch's, so the buffers rotate between the queue
// items and the minibatch list: warm means every buffer has held the
// largest step, which takes a few passes (kWarmPasses). Counting
// covers whole passes, so the workers' allocations are seen too.
TEST(SteadyStateAllocTest, PrefetchedHostStepsAllocateNothing) {
  HostRig rig;
  const int rank = rig.rank;
  HostStage& host = *rig.host;
  constexpr int kSteps = 8;
  constexpr int kWarmPasses = 4;
  HostPrefetcher prefetcher(host, /*threads=*/2, /*depth=*/2, 0, kSteps);
  host::Batch batch;
  std::vector<layout::PartitionedCoo> minibatches;
  auto pass = [&] {
    for (int s = 0; s < kSteps; ++s) {
      HostWork& w = prefetcher.Take(s);
      const absl::Status st = host.Finish(w, &batch, &minibatches);
      prefetcher.Release(w);
      CHECK(st.ok()) << st;
    }
  };
  auto counted_pass = [&] {
    const int64_t before = g_news.load();
    g_counting.store(true);
    prefetcher.Restart(0, kSteps);
    pass();
    g_counting.store(false);
    return g_news.load() - before;
  };
  // Warm-up: step s fills item s % 2, as in the replay. The same number of
  // passes on every rank (Finish is collective).
  pass();
  for (int p = 1; p < kWarmPasses; ++p) (void)counted_pass();
  const int64_t news = counted_pass();
  EXPECT_EQ(news, 0) << "rank " << rank << ": the prefetched replay called operator new " << news
                     << " times after " << kWarmPasses << " warm-up passes";
}

}  // namespace
}  // namespace lemrt::runtime
