#include "device/sparsecore/table_init.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

constexpr char kConfig[] = R"pb(
topology { sparse_cores_per_chip: 4 tiles_per_sparse_core: 5 }
tables { name: "a" vocab_size: 1003 dim: 6 combiner: SUM optimizer { adagrad { initial_accumulator: 0.25 } } }
tables { name: "b" vocab_size: 7 dim: 16 combiner: SUM initializer { normal { stddev: 0.2 } } }
tables { name: "c" vocab_size: 2 dim: 3 combiner: SUM optimizer { adam {} } }
tables { name: "d" vocab_size: 2100 dim: 20 combiner: SUM initializer { uniform { scale: 0.3 } } }
tables { name: "e" vocab_size: 700 dim: 64 combiner: SUM optimizer { adagrad {} } }
features { name: "a" table: "a" } features { name: "b" table: "b" } features { name: "c" table: "c" }
features { name: "d" table: "d" } features { name: "e" table: "e" }
model { num_dense_features: 1 bottom_mlp: 4 top_mlp: 1 }
training { global_batch: 8 seed: 11 }
)pb";

// One chip's SparseCores (chip 1 of 2, so global rows are not local rows).
struct Chip {
  std::vector<std::unique_ptr<Optimizer>> optimizers;
  std::vector<const Optimizer*> opts;
  std::vector<std::unique_ptr<SparseCore>> scs;
  std::vector<SparseCore*> ptrs;
  Chip(const config::RunConfig& c, bool initialize) {
    for (const auto& t : c.tables()) {
      optimizers.push_back(CreateOptimizer(t.optimizer(), 0.1f));
      opts.push_back(optimizers.back().get());
    }
    for (int l = 0; l < 4; ++l) {
      scs.push_back(std::make_unique<SparseCore>(c, 4 + l, opts, initialize));
      ptrs.push_back(scs.back().get());
    }
  }
};

// Bit-identical weights and slots.
void ExpectSameTables(const Chip& a, const Chip& b, const char* what) {
  for (size_t l = 0; l < a.scs.size(); ++l) {
    for (int t = 0; t < a.scs[l]->num_tables(); ++t) {
      const TableShard& x = a.scs[l]->shard(t);
      const TableShard& y = b.scs[l]->shard(t);
      ASSERT_EQ(x.local_rows(), y.local_rows());
      ASSERT_TRUE(x.weights().empty() ||
                  std::memcmp(x.weights().data(), y.weights().data(),
                              sizeof(float) * x.weights().size()) == 0)
          << what << ": weights of SparseCore " << l << " table " << t;
      for (int64_t r = 0; r < x.local_rows(); ++r) {
        const auto sx = x.row_slots(r), sy = y.row_slots(r);
        // memcmp on an empty span's null data() is undefined (UBSan).
        ASSERT_TRUE(sx.empty() || std::memcmp(sx.data(), sy.data(), sizeof(float) * sx.size()) == 0)
            << what << ": slots of SparseCore " << l << " table " << t << " row " << r;
      }
    }
  }
}

TEST(TableInitTest, EveryModeGivesTheConstructorsValuesBitForBit) {
  auto c = config::ParseConfig(kConfig, "t", "", 2);
  ASSERT_TRUE(c.ok()) << c.status();
  const Chip reference(*c, /*initialize=*/true);
  // The reference is not trivially zero.
  ASSERT_NE(reference.scs[0]->shard(0).row(0)[0], 0.0f);
  ASSERT_EQ(reference.scs[0]->shard(0).row_slots(0)[0], 0.25f);
  // Rows of 20 and 64 floats take the eight-lane path (20: two blocks and a
  // tail of four); the reference computed them one element at a time.
  ASSERT_NE(reference.scs[0]->shard(3).row(0)[19], 0.0f);
  TilePool pool(3);
  for (TableInitMode mode :
       {TableInitMode::kHost, TableInitMode::kDevice, TableInitMode::kDeviceParallel}) {
    for (TilePool* p : {static_cast<TilePool*>(nullptr), &pool}) {
      for (int host_threads : {1, 3}) {
        Chip chip(*c, /*initialize=*/false);
        EXPECT_EQ(chip.scs[0]->shard(0).row(0)[0], 0.0f);
        InitializeTables(*c, chip.ptrs, chip.opts, mode, p, host_threads);
        ExpectSameTables(reference, chip, TableInitModeName(mode));
      }
    }
  }
}

// Id shuffling: a shard row holds the initial values of its original row
// (OriginalRow = the permutation's inverse of its placed row), in every
// mode, so the initial model in original row order does not change.
TEST(TableInitTest, ShuffledShardsInitialiseTheirOriginalRows) {
  auto c = config::ParseConfig(kConfig, "t", "sparse_core { shuffle_ids: true }", 2);
  ASSERT_TRUE(c.ok()) << c.status();
  const Chip reference(*c, /*initialize=*/true);
  int64_t moved = 0;
  std::vector<float> want;
  for (const auto& sc : reference.scs) {
    for (int t = 0; t < sc->num_tables(); ++t) {
      const TableShard& shard = sc->shard(t);
      ASSERT_FALSE(shard.permutation().identity()) << t;
      want.resize(shard.dim());
      for (int64_t r = 0; r < shard.local_rows(); ++r) {
        const int64_t original = shard.OriginalRow(r);
        ASSERT_EQ(shard.permutation().Forward(original), shard.GlobalRow(r));
        moved += original != shard.GlobalRow(r);
        InitialRow(c->tables(t), t, original, c->training().seed(), want);
        ASSERT_EQ(std::memcmp(shard.row(r), want.data(), sizeof(float) * want.size()), 0)
            << "table " << t << " local row " << r;
      }
    }
  }
  EXPECT_GT(moved, 1000);
  TilePool pool(3);
  for (TableInitMode mode :
       {TableInitMode::kHost, TableInitMode::kDevice, TableInitMode::kDeviceParallel}) {
    Chip chip(*c, /*initialize=*/false);
    InitializeTables(*c, chip.ptrs, chip.opts, mode, &pool, 2);
    ExpectSameTables(reference, chip, TableInitModeName(mode));
  }
}

// InitialRow against the plain loop over the row's CounterRng stream, for
// dims below, at and around the eight-element vector width.
TEST(TableInitTest, InitialRowIsThePlainStreamFormula) {
  for (int dim : {1, 7, 8, 9, 16, 20, 64, 67}) {
    for (bool normal : {false, true}) {
      config::TableConfig table;
      table.set_dim(dim);
      if (normal) {
        table.mutable_initializer()->mutable_normal()->set_stddev(0.3);
      } else {
        table.mutable_initializer()->mutable_uniform()->set_scale(0.07);
      }
      for (int64_t row : {int64_t{0}, int64_t{5}, int64_t{123456789}}) {
        std::vector<float> got(dim), want(dim);
        InitialRow(table, 3, row, 42, std::span<float>(got));
        base::CounterRng rng(base::HashKeys({42, 0xE3B0C442ULL, 3, static_cast<uint64_t>(row)}));
        for (float& v : want) {
          v = normal ? static_cast<float>(rng.NextNormal() * table.initializer().normal().stddev())
                     : static_cast<float>((2.0 * rng.NextDouble() - 1.0) *
                                          table.initializer().uniform().scale());
        }
        ASSERT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * dim), 0)
            << "dim " << dim << (normal ? " normal" : " uniform") << " row " << row;
      }
    }
  }
}

// Shards of several MiB (above the 2 MiB where storage is a fresh mapping):
// sizing them touches none of their pages, and kHost's threads, claiming
// 4 MiB runs of rows (three per shard of "big"), write the constructor's
// values bit for bit on 1 and 2 threads.
TEST(TableInitTest, LargeShardsAreUntouchedUntilFilledAndFillTheSameOnAnyThreadCount) {
  auto c = config::ParseConfig(R"pb(
    topology { sparse_cores_per_chip: 4 }
    tables { name: "big" vocab_size: 300000 dim: 64 combiner: SUM }
    tables { name: "ada" vocab_size: 90000 dim: 32 combiner: SUM optimizer { adagrad { initial_accumulator: 0.5 } } }
    features { name: "big" table: "big" } features { name: "ada" table: "ada" }
    model { num_dense_features: 1 bottom_mlp: 4 top_mlp: 1 }
    training { global_batch: 8 seed: 5 }
  )pb",
                               "t", "", 2);
  ASSERT_TRUE(c.ok()) << c.status();
  const Chip reference(*c, /*initialize=*/true);
  for (int host_threads : {1, 2}) {
    Chip chip(*c, /*initialize=*/false);
    const std::span<const uint8_t> bytes = chip.scs[1]->shard(0).weight_bytes();
    ASSERT_GT(bytes.size(), size_t{8} << 20);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> resident(bytes.size() / page);
    ASSERT_EQ(mincore(const_cast<uint8_t*>(bytes.data()), resident.size() * page, resident.data()), 0);
    size_t touched = 0;
    for (unsigned char r : resident) touched += r & 1;
    EXPECT_EQ(touched, 0u) << "pages of a sized, unfilled shard in memory";
    EXPECT_EQ(chip.scs[1]->shard(0).row(100)[5], 0.0f);
    InitializeTables(*c, chip.ptrs, chip.opts, TableInitMode::kHost, nullptr, host_threads);
    ExpectSameTables(reference, chip, "large shards");
  }
}

TEST(TableInitTest, ModeFromConfig) {
  config::SparseCoreConfig sc;
  EXPECT_EQ(TableInitModeOf(sc), TableInitMode::kHost);  // defaults
  sc.set_initialize_tables_on_host(false);
  EXPECT_EQ(TableInitModeOf(sc), TableInitMode::kDevice);
  sc.set_enable_fast_table_initialization(true);
  EXPECT_EQ(TableInitModeOf(sc), TableInitMode::kDeviceParallel);
  sc.set_initialize_tables_on_host(true);
  EXPECT_EQ(TableInitModeOf(sc), TableInitMode::kDeviceParallel);
  EXPECT_STREQ(TableInitModeName(TableInitMode::kDeviceParallel), "device_parallel");
}

}  // namespace
}  // namespace lemrt::device
