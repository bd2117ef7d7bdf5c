#include "device/sparsecore/tile_pool.h"

#include <atomic>
#include <cstring>
#include <vector>

#include "device/optimizers/adam.h"
#include "device/sparsecore/sparse_core.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

TEST(TilePoolTest, RunsEveryTaskOnceWithAnyThreadCount) {
  for (int threads : {0, 1, 2, 5}) {
    TilePool pool(threads);
    for (int tasks : {0, 1, 3, 16, 100}) {
      std::vector<std::atomic<int>> hits(tasks);
      pool.Run(tasks, [&](int t) { hits[t].fetch_add(1); });
      for (int t = 0; t < tasks; ++t) EXPECT_EQ(hits[t].load(), 1) << threads << " " << tasks;
    }
  }
}

constexpr char kConfig[] = R"pb(
topology { sparse_cores_per_chip: 1 tiles_per_sparse_core: 16 simd_width: 8 }
tables { name: "t0" vocab_size: 300 dim: 5 combiner: SUM optimizer { adam {} } }
tables { name: "t1" vocab_size: 40 dim: 12 combiner: SUM }
features { name: "f0" table: "t0" max_sequence_length: 8 }
features { name: "f1" table: "t1" max_sequence_length: 3 }
model { num_dense_features: 1 bottom_mlp: 3 top_mlp: 1 }
training { global_batch: 4 embedding_learning_rate: 0.05 }
)pb";

// Segments of pseudo-random entries over both tables (a fixed LCG).
std::vector<std::vector<layout::CooEntry>> MakeSegments(int step) {
  std::vector<std::vector<layout::CooEntry>> segs(3);
  uint64_t x = 12345 + step;
  auto next = [&] { return (x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int k = 0; k < 3; ++k) {
    for (int row = 0; row < 20; ++row) {
      for (int f = 0; f < 2; ++f) {
        const int n = 1 + next() % (f == 0 ? 8 : 3);
        for (int i = 0; i < n; ++i) {
          layout::CooEntry e{};
          e.col = static_cast<int64_t>(next() % (f == 0 ? 300 : 40));
          e.row = row;
          e.feature = f;
          e.table = f;
          e.gain = 0.25f * (1 + next() % 4);
          segs[k].push_back(e);
        }
      }
    }
  }
  return segs;
}

// Runs 3 steps of Forward + Backward; returns all partials and final rows.
std::vector<float> RunSteps(TilePool* pool) {
  auto c = config::ParseConfig(kConfig, "t", "", 1);
  EXPECT_TRUE(c.ok()) << c.status();
  auto o0 = CreateOptimizer(c->tables(0).optimizer(), 0.05f);
  auto o1 = CreateOptimizer(c->tables(1).optimizer(), 0.05f);
  const Optimizer* opts[] = {o0.get(), o1.get()};
  SparseCore sc(*c, 0, opts);
  EXPECT_EQ(sc.num_tiles(), 16);
  sc.set_tile_pool(pool);
  std::vector<float> out;
  SparseCoreStepState state;
  const std::vector<int> dims = {5, 12};
  for (int step = 0; step < 3; ++step) {
    auto segs = MakeSegments(step);
    std::vector<std::span<const layout::CooEntry>> views(segs.begin(), segs.end());
    std::vector<std::vector<float>> partials(3), grads(3);
    std::vector<float*> outs;
    std::vector<const float*> ins;
    for (int k = 0; k < 3; ++k) {
      partials[k].resize(PartialFloats(segs[k], dims));
      grads[k].resize(partials[k].size());
      for (size_t i = 0; i < grads[k].size(); ++i) grads[k][i] = 0.01f * ((i * 7 + k) % 13) - 0.06f;
      outs.push_back(partials[k].data());
      ins.push_back(grads[k].data());
    }
    sc.Forward(views, outs, &state);
    for (auto& p : partials) out.insert(out.end(), p.begin(), p.end());
    sc.Backward(views, ins, &state);
  }
  for (int t = 0; t < 2; ++t) {
    out.insert(out.end(), sc.shard(t).weights().begin(), sc.shard(t).weights().end());
  }
  return out;
}

TEST(SparseCoreTilesTest, ResultsAreBitIdenticalWithAndWithoutThreads) {
  const std::vector<float> inline_run = RunSteps(nullptr);
  for (int threads : {1, 3, 8}) {
    TilePool pool(threads);
    for (int rep = 0; rep < 3; ++rep) {
      const std::vector<float> threaded = RunSteps(&pool);
      ASSERT_EQ(threaded.size(), inline_run.size());
      EXPECT_EQ(std::memcmp(threaded.data(), inline_run.data(), sizeof(float) * threaded.size()), 0)
          << threads << " threads, repetition " << rep;
    }
  }
}

}  // namespace
}  // namespace lemrt::device
