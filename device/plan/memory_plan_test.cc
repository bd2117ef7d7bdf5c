#include "device/plan/memory_plan.h"
#include "device/plan/memory_plan_report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

using ::testing::HasSubstr;

// 1 chip x 4 SparseCores x 16 tiles, 128 KiB SPMEM per tile.
constexpr char kBase[] = R"pb(
topology { preset: TPU_V5P }
model { num_dense_features: 2 bottom_mlp: 4 top_mlp: 1 }
training { global_batch: 64 }
)pb";

config::RunConfig Load(const std::string& extra, int world_size = 1) {
  auto c = config::ParseConfig(std::string(kBase) + extra, "plan_test", "", world_size);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : config::RunConfig();
}

// The seed's example: a dim-1 table is padded to 8 floats, so 7/8 of its
// allocation is padding (vocab already a multiple of the SparseCore count).
TEST(MemoryPlanTest, DimOneTableIsSevenEighthsPadding) {
  auto c = Load(R"pb(tables { name: "narrow" vocab_size: 4096 dim: 1 combiner: SUM }
                     features { name: "f" table: "narrow" })pb");
  MemoryPlan p = BuildMemoryPlan(c, /*dense_params=*/0);
  ASSERT_EQ(p.tables.size(), 1u);
  const TablePlan& t = p.tables[0];
  EXPECT_EQ(t.padded_dim, 8);
  EXPECT_EQ(t.padded_vocab, 4096);
  EXPECT_EQ(t.table_bytes, 4096 * 8 * 4);
  EXPECT_EQ(t.slot_bytes, 0);  // SGD
  EXPECT_EQ(t.padding_bytes, 4096 * 7 * 4);
  EXPECT_DOUBLE_EQ(static_cast<double>(t.padding_bytes) / t.table_bytes, 7.0 / 8.0);
  EXPECT_EQ(p.padding_bytes, t.padding_bytes);
}

// Vocab 10 on 2 chips x 4 SparseCores pads to 16 rows (2 per SparseCore, 8 per
// chip); Adagrad's slot doubles the bytes and the padding.
TEST(MemoryPlanTest, VocabPaddedToSparseCoreCountWithSlots) {
  auto c = Load(R"pb(tables { name: "t" vocab_size: 10 dim: 8 combiner: SUM
                              optimizer { adagrad {} } }
                     features { name: "f" table: "t" })pb",
                /*world_size=*/2);
  MemoryPlan p = BuildMemoryPlan(c, 0);
  const TablePlan& t = p.tables[0];
  EXPECT_EQ(t.padded_vocab, 16);
  EXPECT_EQ(t.rows_per_chip, 8);
  EXPECT_EQ(t.slots_per_param, 1);
  EXPECT_EQ(t.table_bytes, 8 * 8 * 4);
  EXPECT_EQ(t.slot_bytes, 8 * 8 * 4);
  // Unpadded over both chips: 10 x 8 x 4 x 2 = 640 B, 320 per chip.
  EXPECT_EQ(t.padding_bytes, 2 * 256 - 320);
}

// Row-wise Adagrad keeps one float per row: 1000 rows on 4 SparseCores pad
// to 1000 per chip, so its slots are 4000 bytes (a whole number of 32-byte
// lines) where per-parameter Adagrad's would be a table's worth.
TEST(MemoryPlanTest, RowwiseAdagradHasOneSlotFloatPerRow) {
  auto c = Load(R"pb(tables { name: "r" vocab_size: 1000 dim: 64 combiner: SUM
                              optimizer { rowwise_adagrad {} } }
                     tables { name: "e" vocab_size: 1001 dim: 64 combiner: SUM
                              optimizer { rowwise_adagrad {} } }
                     features { name: "f" table: "r" }
                     features { name: "g" table: "e" })pb");
  MemoryPlan p = BuildMemoryPlan(c, /*dense_params=*/100);
  const TablePlan& t = p.tables[0];
  EXPECT_EQ(t.slots_per_param, 0);
  EXPECT_EQ(t.row_slots, 1);
  EXPECT_EQ(t.table_bytes, 1000 * 64 * 4);
  EXPECT_EQ(t.slot_bytes, 1000 * 4);
  EXPECT_EQ(t.padding_bytes, 0);
  // 1001 rows pad to 1004 per chip: 4016 bytes of accumulators, 4032 in lines.
  EXPECT_EQ(p.tables[1].slot_bytes, 4032);
  EXPECT_THAT(FormatMemoryPlan(p), HasSubstr("1/row"));
  // The dense optimizer (SGD) has no slots: parameters and gradients only.
  EXPECT_EQ(p.heap_dense_bytes, 100 * 2 * 4);
}

// Hot-row replication: 10 Adagrad rows of dim 8 and 3 listed row-wise
// Adagrad rows of dim 4 on every one of 2 chips: replicas 10 x (8 + 8) + 3 x
// (4 + 1) floats, the gradient buffer 10 x 9 + 3 x 5 floats, both in the
// chip's total and on their own line of the report.
TEST(MemoryPlanTest, HotRowReplicasAreCountedPerChip) {
  const char* tables = R"pb(tables { name: "t" vocab_size: 1000 dim: 8 combiner: SUM
                                    optimizer { adagrad {} } HOT }
                           tables { name: "u" vocab_size: 100 dim: 4 combiner: SUM
                                    optimizer { rowwise_adagrad {} } HOTU }
                           features { name: "f" table: "t" }
                           features { name: "g" table: "u" })pb";
  auto with = [&](const char* hot, const char* hot_u) {
    std::string text = tables;
    text.replace(text.find("HOTU"), 4, hot_u);
    text.replace(text.find("HOT"), 3, hot);
    return BuildMemoryPlan(Load(text, /*world_size=*/2), 0);
  };
  const MemoryPlan none = with("", "");
  const MemoryPlan hot = with("hot_rows: 10", "hot_row_ids: [1, 5, 7]");
  EXPECT_EQ(none.hot_rows, 0);
  EXPECT_EQ(hot.hot_rows, 13);
  EXPECT_EQ(hot.hot_replica_bytes, (10 * 16 + 3 * 5) * 4);
  EXPECT_EQ(hot.hot_gradient_bytes, (10 * 9 + 3 * 5) * 4);
  EXPECT_EQ(hot.hbm_bytes_per_chip - none.hbm_bytes_per_chip,
            hot.hot_replica_bytes + hot.hot_gradient_bytes);
  EXPECT_THAT(FormatMemoryPlan(hot), HasSubstr("Hot-row replicas (in the total above): 13 rows"));
  EXPECT_THAT(FormatMemoryPlan(none), ::testing::Not(HasSubstr("Hot-row")));
}

TEST(MemoryPlanTest, StackFormulasAndSerialization) {
  auto c = Load(R"pb(tables { name: "a" vocab_size: 1000 dim: 16 combiner: SUM }
                     tables { name: "b" vocab_size: 1000 dim: 5 combiner: SUM }
                     features { name: "fa" table: "a" max_sequence_length: 3 }
                     features { name: "fa2" table: "a" max_sequence_length: 2 }
                     features { name: "fb" table: "b" })pb");
  MemoryPlan p = BuildMemoryPlan(c, 0);
  // a: feature_width 16, nz per row 5, 64 samples on the one chip.
  EXPECT_EQ(p.tables[0].ids_per_sample, 5);
  EXPECT_EQ(p.tables[0].stack_forward_bytes, (2 * 16 + 1) * 5 * 64 * 4);
  EXPECT_EQ(p.tables[0].stack_backward_bytes, 3 * 16 * 5 * 64 * 4);
  // b: feature width padded to 8.
  EXPECT_EQ(p.tables[1].stack_forward_bytes, (2 * 8 + 1) * 1 * 64 * 4);
  EXPECT_EQ(p.tables[1].stack_backward_bytes, 3 * 8 * 1 * 64 * 4);
  const int64_t all = std::max(p.tables[0].stack_forward_bytes + p.tables[1].stack_forward_bytes,
                               p.tables[0].stack_backward_bytes + p.tables[1].stack_backward_bytes);
  EXPECT_EQ(p.stack_bytes, all);

  c.mutable_sparse_core()->set_xla_sc_num_serialized_tables_to_optimize_hbm(2);
  MemoryPlan s = BuildMemoryPlan(c, 0);
  EXPECT_EQ(s.stack_bytes, std::max(s.tables[0].stack_forward_bytes,
                                    s.tables[0].stack_backward_bytes));
  EXPECT_LT(s.stack_bytes, p.stack_bytes);
  EXPECT_EQ(s.stack_bytes_unserialized, p.stack_bytes);
  EXPECT_LT(s.hbm_bytes_per_chip, p.hbm_bytes_per_chip);
}

TEST(MemoryPlanTest, SpmemAndLimits) {
  auto c = Load(R"pb(tables { name: "t" vocab_size: 100000 dim: 12 combiner: SUM }
                     features { name: "f" table: "t" max_sequence_length: 4 }
                     features { name: "g" table: "t" })pb");
  MemoryPlan p = BuildMemoryPlan(c, 0);
  ASSERT_EQ(p.stacks.size(), 1u);
  const StackPlan& t = p.stacks[0];
  // 64 samples / 4 SparseCores x 5 ids per sample may all go to one SC.
  EXPECT_EQ(t.limits.max_ids, 16 * 5);
  EXPECT_EQ(t.limits.max_unique_ids, 80);
  EXPECT_EQ(t.spmem_ids_bytes, 4 * 80 / 16 * 16);
  EXPECT_EQ(t.spmem_unique_bytes, 4 * 80 / 16 * 4);
  EXPECT_EQ(t.spmem_rows_bytes, 2 * 8 * 16 * 4);
  EXPECT_EQ(t.gather_operand_bytes, 16 * 2 * 16 * 4 / 16);  // 16 samples per SC x 2 features
  EXPECT_EQ(p.spmem_bytes_per_tile, t.spmem_fixed_bytes + t.gather_operand_bytes);
  EXPECT_EQ(t.spmem_bytes(), t.spmem_fixed_bytes + t.gather_operand_bytes);
  EXPECT_TRUE(CheckMemoryPlan(p).ok());
  // A table-wide limit over the 4 partitions lowers the per-partition one.
  c.mutable_sparse_core()->set_max_ids_per_partition(50);
  c.mutable_sparse_core()->set_max_unique_ids_per_partition(30);
  EXPECT_EQ(PartitionLimitsForPlan(c, 0).max_ids, 50);
  EXPECT_EQ(PartitionLimitsForPlan(c, 0).max_unique_ids, 30);
  EXPECT_EQ(BuildMemoryPlan(c, 0).stacks[0].spmem_ids_bytes, (4 * 50 + 15) / 16 * 16);  // ceil
  // The per-table map takes precedence over the per-partition field.
  (*c.mutable_sparse_core()->mutable_max_ids_per_table())["t"] = 100;
  EXPECT_EQ(PartitionLimitsForPlan(c, 0).max_ids, 25);
  EXPECT_EQ(PartitionLimitsForPlan(c, 0).max_unique_ids, 25);
}

TEST(MemoryPlanTest, FixedAllocationsDoNotFitInTileSpmem) {
  auto c = Load(R"pb(tables { name: "long" vocab_size: 1000000 dim: 8 combiner: SUM }
                     features { name: "f" table: "long" max_sequence_length: 4000 })pb");
  const absl::Status st = CheckMemoryPlan(BuildMemoryPlan(c, 0));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("Fixed size allocations ("));
  EXPECT_THAT(st.message(), HasSubstr("do not fit in TileSpmem (131072 bytes)"));
  EXPECT_THAT(st.message(), HasSubstr("table 'long'"));
  EXPECT_THAT(st.message(), HasSubstr("lower the table's max_ids_per_partition"));
}

TEST(MemoryPlanTest, GatherOperandTooLarge) {
  auto c = Load(R"pb(tables { name: "wide" vocab_size: 100000 dim: 256 combiner: SUM }
                     features { name: "f" table: "wide" })pb");
  c.mutable_training()->set_global_batch(16384);  // 4096 samples per SparseCore
  const absl::Status st = CheckMemoryPlan(BuildMemoryPlan(c, 0));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("Gather operand too large for table 'wide'"));
  EXPECT_THAT(st.message(), HasSubstr("sample_count 4096 x feature_width 256"));
  EXPECT_THAT(st.message(), HasSubstr("lower training.global_batch"));
}

TEST(MemoryPlanTest, HbmOutOfMemoryNamesStackHeapAndLargestItems) {
  auto c = Load(R"pb(tables { name: "big" vocab_size: 40000 dim: 8 combiner: SUM
                              optimizer { adagrad {} } }
                     tables { name: "small" vocab_size: 100 dim: 8 combiner: SUM }
                     features { name: "f" table: "big" }
                     features { name: "g" table: "small" })pb");
  c.mutable_topology()->set_hbm_bytes(1000000);
  MemoryPlan p = BuildMemoryPlan(c, 1000);
  const absl::Status st = CheckMemoryPlan(p);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("HBM out of memory"));
  EXPECT_THAT(st.message(), HasSubstr("hbm_bytes is 1000000 B"));
  EXPECT_THAT(st.message(), HasSubstr("stack"));
  EXPECT_THAT(st.message(), HasSubstr("heap"));
  EXPECT_THAT(st.message(), HasSubstr("largest items: table 'big'"));
  EXPECT_THAT(st.message(), HasSubstr("tables and slots dominate"));
  EXPECT_EQ(p.heap_dense_bytes, 1000 * 2 * 4);  // params + grads, SGD
}

// The example config fits a v5p chip on 1 and 4 chips.
TEST(MemoryPlanTest, ExampleConfigFits) {
  for (int world : {1, 4}) {
    auto c = config::LoadConfig(std::string(LEMRT_SOURCE_DIR) +
                                    "/examples/configs/dlrm_synthetic.pbtxt",
                                "", world);
    ASSERT_TRUE(c.ok()) << c.status();
    auto p = BuildMemoryPlan(*c);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(CheckMemoryPlan(*p).ok()) << CheckMemoryPlan(*p) << FormatMemoryPlan(*p);
    EXPECT_GT(p->heap_dense_bytes, 0);
    EXPECT_LE(p->spmem_bytes_per_tile, 128 * 1024);
    const std::string text = FormatMemoryPlan(*p);
    EXPECT_THAT(text, HasSubstr("user"));
    EXPECT_THAT(text, HasSubstr("SPMEM per tile"));
  }
}

// sparse_core.limits_file lowers the plan's partition limits (and so SPMEM)
// like the other limit fields; an unreadable file is the limits loader's error.
TEST(MemoryPlanTest, LimitsFileLowersThePlan) {
  const std::string path = ::testing::TempDir() + "/plan_limits.pbtxt";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("tables { table: \"t\" max_ids_per_partition: 12 max_unique_ids_per_partition: 7 }\n",
               f);
    std::fclose(f);
  }
  auto c = Load(R"pb(tables { name: "t" vocab_size: 100000 dim: 16 combiner: SUM }
                     tables { name: "u" vocab_size: 100000 dim: 16 combiner: SUM }
                     features { name: "f" table: "t" max_sequence_length: 5 }
                     features { name: "g" table: "u" max_sequence_length: 5 })pb");
  // t and u would stack (the stack's limit is the larger member's: below).
  c.mutable_sparse_core()->set_disable_table_stacking(true);
  c.mutable_sparse_core()->set_max_ids_per_partition(50);  // the file's entry wins for t
  auto without = BuildMemoryPlan(c);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(without->stacks[0].limits.max_ids, 50);
  c.mutable_sparse_core()->set_limits_file(path);
  auto p = BuildMemoryPlan(c);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->stacks[0].limits.max_ids, 12);
  EXPECT_EQ(p->stacks[0].limits.max_unique_ids, 7);
  EXPECT_EQ(p->stacks[0].spmem_ids_bytes, (4 * 12 + 15) / 16 * 16);  // ceil(48 / 16) ids
  EXPECT_EQ(p->stacks[1].limits.max_ids, 50);  // not in the file
  EXPECT_LT(p->stacks[0].spmem_fixed_bytes, without->stacks[0].spmem_fixed_bytes);
  // Stacked, t + u take the larger member's limit (u's 50 from the field).
  c.mutable_sparse_core()->set_disable_table_stacking(false);
  auto stacked = BuildMemoryPlan(c);
  ASSERT_TRUE(stacked.ok()) << stacked.status();
  ASSERT_EQ(stacked->stacks.size(), 1u);
  EXPECT_EQ(stacked->stacks[0].limits.max_ids, 50);
  c.mutable_sparse_core()->set_limits_file(path + ".missing");
  auto missing = BuildMemoryPlan(c);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr(".missing"));
}

// pack_narrow_tables: dim 2 -> 4 rows per 32-byte line, dim 3 -> 2 (width 4),
// dim 1 -> 8; dim 5 and 8 are not packed. Slots are packed alike.
TEST(MemoryPlanTest, NarrowTablesPackSeveralRowsPerLine) {
  const char* tables = R"pb(
    tables { name: "d1" vocab_size: 4096 dim: 1 combiner: SUM }
    tables { name: "d2" vocab_size: 4096 dim: 2 combiner: SUM optimizer { adagrad {} } }
    tables { name: "d3" vocab_size: 4100 dim: 3 combiner: SUM }
    tables { name: "d5" vocab_size: 4096 dim: 5 combiner: SUM }
    tables { name: "d8" vocab_size: 4096 dim: 8 combiner: SUM }
    features { name: "a" table: "d1" } features { name: "b" table: "d2" }
    features { name: "c" table: "d3" } features { name: "d" table: "d5" }
    features { name: "e" table: "d8" })pb";
  auto c = Load(tables);
  const MemoryPlan plain = BuildMemoryPlan(c, 0);
  c.mutable_sparse_core()->set_pack_narrow_tables(true);
  const MemoryPlan packed = BuildMemoryPlan(c, 0);
  const int expect_rows_per_line[] = {8, 4, 2, 1, 1};
  int64_t saved = 0;
  for (int t = 0; t < 5; ++t) {
    const TablePlan& a = plain.tables[t];
    const TablePlan& b = packed.tables[t];
    EXPECT_EQ(a.rows_per_line, 1);
    EXPECT_EQ(b.rows_per_line, expect_rows_per_line[t]) << b.name;
    const int64_t lines = (b.rows_per_chip + b.rows_per_line - 1) / b.rows_per_line;
    EXPECT_EQ(b.table_bytes, lines * 32) << b.name;
    EXPECT_EQ(b.slot_bytes, b.slots_per_param * b.table_bytes);
    saved += a.table_bytes + a.slot_bytes - b.table_bytes - b.slot_bytes;
  }
  EXPECT_EQ(packed.tables[1].table_bytes, 4096 / 4 * 32);
  EXPECT_EQ(packed.tables[2].rows_per_chip, 4100);  // ceil(4100 / 4) x 4
  EXPECT_EQ(packed.tables[2].table_bytes, 4100 / 2 * 32);
  EXPECT_EQ(packed.packing_saved_bytes, saved);
  EXPECT_EQ(plain.packing_saved_bytes, 0);
  EXPECT_EQ(plain.tables_bytes - packed.tables_bytes, saved);
  EXPECT_EQ(plain.hbm_bytes_per_chip - packed.hbm_bytes_per_chip, saved);
  // The stack and SPMEM terms keep the padded feature width.
  EXPECT_EQ(plain.stack_bytes, packed.stack_bytes);
  EXPECT_EQ(plain.spmem_bytes_per_tile, packed.spmem_bytes_per_tile);
  EXPECT_THAT(FormatMemoryPlan(packed), HasSubstr("(packed, 4 rows per line)"));
  EXPECT_THAT(FormatMemoryPlan(packed), HasSubstr("Narrow-table packing"));
}

// Two tables that stack (same padded dim 16, combiner, optimizer): a (vocab
// 1000, features of 3 + 2 ids) and b (vocab 999, dim 12, one id). 1 chip x
// 4 SparseCores x 16 tiles, SIMD width 8, global batch 64.
constexpr char kStackable[] = R"pb(
  tables { name: "a" vocab_size: 1000 dim: 16 combiner: SUM }
  tables { name: "b" vocab_size: 999 dim: 12 combiner: SUM }
  features { name: "fa" table: "a" max_sequence_length: 3 }
  features { name: "fa2" table: "a" max_sequence_length: 2 }
  features { name: "fb" table: "b" })pb";

// Without stacking every table is its own stack with the per-table numbers
// (the formulas of SpmemAndLimits): a 5 ids and 2 features per sample, b 1
// and 1.
TEST(MemoryPlanTest, UnstackedPlanIsPerTable) {
  auto c = Load(std::string(kStackable) + " sparse_core { disable_table_stacking: true }");
  const MemoryPlan p = BuildMemoryPlan(c, 0);
  ASSERT_EQ(p.stacks.size(), 2u);
  const StackPlan& a = p.stacks[0];
  const StackPlan& b = p.stacks[1];
  EXPECT_EQ(a.table_names, std::vector<std::string>{"a"});
  EXPECT_EQ(b.table_names, std::vector<std::string>{"b"});
  // a: 16 samples per SC x 5 ids = 80 ids to one partition; 250 rows per SC.
  EXPECT_EQ(a.limits.max_ids, 80);
  EXPECT_EQ(a.limits.max_unique_ids, 80);
  EXPECT_EQ(a.spmem_ids_bytes, 4 * 80 / 16 * 16);
  EXPECT_EQ(a.spmem_unique_bytes, 4 * 80 / 16 * 4);
  EXPECT_EQ(a.spmem_rows_bytes, 2 * 8 * 16 * 4);
  EXPECT_EQ(a.gather_sample_count, 16 * 2);  // 64 samples / 4 SparseCores x 2 features
  EXPECT_EQ(a.gather_operand_bytes, 16 * 2 * 16 * 4 / 16);
  EXPECT_EQ(b.limits.max_ids, 16);
  EXPECT_EQ(b.spmem_ids_bytes, 4 * 16 / 16 * 16);
  EXPECT_EQ(b.gather_operand_bytes, 16 * 1 * 16 * 4 / 16);
  EXPECT_EQ(b.rows_per_sparse_core, 250);  // ceil(999 / 4)
  EXPECT_EQ(p.spmem_bytes_per_tile, std::max(a.spmem_bytes(), b.spmem_bytes()));
  EXPECT_EQ(a.stack_forward_bytes, (2 * 16 + 1) * 5 * 64 * 4);
  EXPECT_EQ(b.stack_backward_bytes, 3 * 16 * 1 * 64 * 4);
  EXPECT_EQ(p.stack_bytes, std::max(a.stack_forward_bytes + b.stack_forward_bytes,
                                    a.stack_backward_bytes + b.stack_backward_bytes));
}

// Stacked, the SparseCore looks a and b up as one batch: SPMEM and the gather
// operand are sized for the stack's 3 features and 6 ids per sample; HBM for
// tables and slots stays per table, and the stack term is the members' sum.
TEST(MemoryPlanTest, StackedPlanIsPerStack) {
  auto c = Load(kStackable);
  const MemoryPlan p = BuildMemoryPlan(c, 0);
  c.mutable_sparse_core()->set_disable_table_stacking(true);
  const MemoryPlan u = BuildMemoryPlan(c, 0);
  ASSERT_EQ(p.stacks.size(), 1u);
  const StackPlan& s = p.stacks[0];
  EXPECT_EQ(s.name, "a+b");
  EXPECT_EQ(s.tables, (std::vector<int>{0, 1}));
  EXPECT_EQ(s.table_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.tables[0].stack, 0);
  EXPECT_EQ(p.tables[1].stack, 0);
  EXPECT_EQ(s.padded_dim, 16);
  EXPECT_EQ(s.ids_per_sample, 6);
  EXPECT_EQ(s.num_features, 3);
  EXPECT_EQ(s.rows_per_sparse_core, (1000 + 1000) / 4);
  EXPECT_EQ(s.limits.max_ids, 16 * 6);
  EXPECT_EQ(s.limits.max_unique_ids, 16 * 6);
  EXPECT_EQ(s.spmem_ids_bytes, 4 * 96 / 16 * 16);
  EXPECT_EQ(s.spmem_unique_bytes, 4 * 96 / 16 * 4);
  EXPECT_EQ(s.spmem_rows_bytes, 2 * 8 * 16 * 4);
  EXPECT_EQ(s.gather_sample_count, 16 * 3);
  EXPECT_EQ(s.gather_operand_bytes, 16 * 3 * 16 * 4 / 16);
  EXPECT_EQ(p.spmem_bytes_per_tile, s.spmem_bytes());
  EXPECT_GT(p.spmem_bytes_per_tile, u.spmem_bytes_per_tile);
  EXPECT_EQ(s.stack_forward_bytes, (2 * 16 + 1) * 6 * 64 * 4);
  EXPECT_EQ(s.stack_forward_bytes,
            p.tables[0].stack_forward_bytes + p.tables[1].stack_forward_bytes);
  EXPECT_EQ(s.stack_backward_bytes,
            p.tables[0].stack_backward_bytes + p.tables[1].stack_backward_bytes);
  EXPECT_EQ(p.stack_bytes, u.stack_bytes);
  EXPECT_EQ(p.tables_bytes, u.tables_bytes);
  EXPECT_EQ(p.padding_bytes, u.padding_bytes);
  EXPECT_EQ(p.heap_bytes, u.heap_bytes);
  // The stack's limits are its largest member's: a member without one leaves
  // the stack at the conservative bound.
  (*c.mutable_sparse_core()->mutable_max_ids_per_table())["a"] = 40;  // 10 per partition
  c.mutable_sparse_core()->set_disable_table_stacking(false);
  EXPECT_EQ(BuildMemoryPlan(c, 0).stacks[0].limits.max_ids, 96);
  (*c.mutable_sparse_core()->mutable_max_ids_per_table())["b"] = 20;  // 5 per partition
  EXPECT_EQ(BuildMemoryPlan(c, 0).stacks[0].limits.max_ids, 10);
  EXPECT_EQ(BuildMemoryPlan(c, 0).stacks[0].spmem_ids_bytes, (4 * 10 + 15) / 16 * 16);  // ceil
  // Dry-run text and summary name the stack and its members.
  EXPECT_THAT(FormatMemoryPlan(p),
              HasSubstr("stack 'a+b' [a b]: dim 16, 3 feature(s), 6 id(s) per sample"));
  summary::MemoryStats m;
  FillMemoryStats(p, &m);
  ASSERT_EQ(m.stacks_size(), 1);
  EXPECT_EQ(m.stacks(0).name(), "a+b");
  ASSERT_EQ(m.stacks(0).tables_size(), 2);
  EXPECT_EQ(m.stacks(0).tables(1), "b");
  EXPECT_EQ(m.stacks(0).features(), 3);
  EXPECT_EQ(m.stacks(0).spmem_bytes_per_tile(), static_cast<double>(s.spmem_bytes()));
  EXPECT_EQ(m.spmem_bytes_per_tile(), static_cast<double>(s.spmem_bytes()));
}

// SPMEM limits that the tables fit one by one but their stack does not.
TEST(MemoryPlanTest, StackFailsWhereItsTablesFit) {
  auto c = Load(kStackable);
  const MemoryPlan stacked = BuildMemoryPlan(c, 0);
  c.mutable_sparse_core()->set_disable_table_stacking(true);
  const MemoryPlan alone = BuildMemoryPlan(c, 0);
  const StackPlan& s = stacked.stacks[0];
  // Gather: room for the largest table's, not for the stack's 3 features.
  const int64_t limit = alone.spmem_bytes_per_tile;
  ASSERT_LT(limit, s.spmem_bytes());
  ASSERT_GT(limit, s.spmem_fixed_bytes);
  c.mutable_topology()->set_spmem_bytes_per_tile(limit);
  EXPECT_TRUE(CheckMemoryPlan(BuildMemoryPlan(c, 0)).ok());
  c.mutable_sparse_core()->set_disable_table_stacking(false);
  absl::Status st = CheckMemoryPlan(BuildMemoryPlan(c, 0));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(),
              HasSubstr("Gather operand too large for stack 'a+b' (tables 'a', 'b'): "
                        "sample_count 48 x feature_width 16"));
  EXPECT_THAT(st.message(), HasSubstr("or split the stack"));
  // Fixed: room for the largest table's fixed allocations only.
  const int64_t fixed =
      std::max(alone.stacks[0].spmem_fixed_bytes, alone.stacks[1].spmem_fixed_bytes);
  ASSERT_LT(fixed, s.spmem_fixed_bytes);
  c.mutable_topology()->set_spmem_bytes_per_tile(fixed);
  st = CheckMemoryPlan(BuildMemoryPlan(c, 0));
  EXPECT_THAT(st.message(), HasSubstr("Fixed size allocations ("));
  EXPECT_THAT(st.message(), HasSubstr("for stack 'a+b' (tables 'a', 'b')"));
  EXPECT_THAT(st.message(), HasSubstr("lower the members' max_ids_per_partition"));
}

// A stack's rows are keyed like one table's (base/row_key.h): two tables of
// 2^47 + 8 rows each fit alone but not stacked.
TEST(MemoryPlanTest, StackBeyondTheRowKeyIsAnError) {
  auto c = Load(R"pb(tables { name: "a" vocab_size: 140737488355336 dim: 16 combiner: SUM }
                     tables { name: "b" vocab_size: 140737488355336 dim: 12 combiner: SUM }
                     features { name: "fa" table: "a" }
                     features { name: "fb" table: "b" })pb");
  absl::Status st = CheckMemoryPlan(BuildMemoryPlan(c, 0));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("stack 'a+b' (tables 'a', 'b') holds 281474976710672 rows"));
  EXPECT_THAT(st.message(), HasSubstr("more than the 2^48 = 281474976710656 rows a row key holds"));
  c.mutable_sparse_core()->set_disable_table_stacking(true);
  st = CheckMemoryPlan(BuildMemoryPlan(c, 0));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;  // HBM, not the key
}

// xla_sc_num_serialized_tables_to_optimize_hbm counts stacks: with a + b
// stacked and c alone, 1 serializes the stack with the larger stack term
// (a + b: 6 ids x dim 16 vs c: 4 ids x dim 16), whole.
TEST(MemoryPlanTest, SerializationIsPerStack) {
  auto c = Load(std::string(kStackable) + R"pb(
      tables { name: "c" vocab_size: 500 dim: 16 combiner: MEAN }
      features { name: "fc" table: "c" max_sequence_length: 4 })pb");
  const MemoryPlan all = BuildMemoryPlan(c, 0);
  ASSERT_EQ(all.stacks.size(), 2u);
  EXPECT_EQ(all.stacks[1].table_names, std::vector<std::string>{"c"});
  const int64_t fwd_ab = all.stacks[0].stack_forward_bytes;
  const int64_t bwd_ab = all.stacks[0].stack_backward_bytes;
  const int64_t fwd_c = all.stacks[1].stack_forward_bytes;
  const int64_t bwd_c = all.stacks[1].stack_backward_bytes;
  EXPECT_EQ(fwd_c, (2 * 16 + 1) * 4 * 64 * 4);
  EXPECT_EQ(all.stack_bytes, std::max(fwd_ab + fwd_c, bwd_ab + bwd_c));
  c.mutable_sparse_core()->set_xla_sc_num_serialized_tables_to_optimize_hbm(1);
  const MemoryPlan one = BuildMemoryPlan(c, 0);
  EXPECT_TRUE(one.stacks[0].serialized);
  EXPECT_FALSE(one.stacks[1].serialized);
  EXPECT_EQ(one.stack_bytes, std::max({fwd_ab, bwd_ab, fwd_c, bwd_c}));
  EXPECT_EQ(one.stack_bytes, std::max(fwd_ab, bwd_ab));
  EXPECT_EQ(one.stack_bytes_unserialized, all.stack_bytes);
  EXPECT_THAT(FormatMemoryPlan(one), HasSubstr("(serialized)"));
  // More than there are stacks serializes every stack.
  c.mutable_sparse_core()->set_xla_sc_num_serialized_tables_to_optimize_hbm(3);
  const MemoryPlan every = BuildMemoryPlan(c, 0);
  EXPECT_TRUE(every.stacks[0].serialized && every.stacks[1].serialized);
  EXPECT_EQ(every.stack_bytes, one.stack_bytes);
  // Unstacked, 1 serializes table a only (5 ids): peak = b + c concurrently.
  c.mutable_sparse_core()->set_xla_sc_num_serialized_tables_to_optimize_hbm(1);
  c.mutable_sparse_core()->set_disable_table_stacking(true);
  const MemoryPlan u = BuildMemoryPlan(c, 0);
  ASSERT_EQ(u.stacks.size(), 3u);
  EXPECT_TRUE(u.stacks[0].serialized);
  EXPECT_FALSE(u.stacks[1].serialized || u.stacks[2].serialized);
  EXPECT_EQ(u.stack_bytes,
            std::max({u.stacks[0].stack_forward_bytes, u.stacks[0].stack_backward_bytes,
                      u.stacks[1].stack_forward_bytes + u.stacks[2].stack_forward_bytes,
                      u.stacks[1].stack_backward_bytes + u.stacks[2].stack_backward_bytes}));
}

// The heap holds the dense parameters, the host inputs of every step in the
// host queue or in flight, and the activations of the steps in flight:
//   dense params x (2 + slots) x 4
//   + local batch x ((dense + 1) x 4 + ids x 24) x (max(1, q) + in_flight)
//   + local batch x activation width x 4 x 2 x in_flight,
// q = maximum_parallel_iterations, in_flight = 2 with pipelining, else 1.
TEST(MemoryPlanTest, HeapCountsHostQueueAndInFlightSteps) {
  // 2 chips: 32 samples per chip; 2 dense features; 3 + 1 ids and
  // activation width 16 + 8 per sample.
  auto c = Load(R"pb(tables { name: "a" vocab_size: 1000 dim: 16 combiner: SUM }
                     tables { name: "b" vocab_size: 1000 dim: 8 combiner: MEAN }
                     features { name: "fa" table: "a" max_sequence_length: 3 }
                     features { name: "fb" table: "b" })pb",
                /*world_size=*/2);
  const int64_t host = 32 * ((2 + 1) * 4 + 4 * 24);
  const int64_t act = 32 * (16 + 8) * 4 * 2;
  const int64_t dense = 1000 * 2 * 4;  // SGD: params + gradients
  struct Case {
    int queue;
    bool pipelining;
    int depth, in_flight;
  };
  for (const Case& k : {Case{2, true, 4, 2}, Case{0, true, 3, 2}, Case{1, false, 2, 1},
                        Case{5, false, 6, 1}, Case{8, true, 10, 2}}) {
    c.mutable_sparse_core()->set_maximum_parallel_iterations(k.queue);
    c.mutable_sparse_core()->set_disable_full_embedding_pipelining(!k.pipelining);
    const MemoryPlan p = BuildMemoryPlan(c, 1000);
    SCOPED_TRACE(absl::StrCat("queue ", k.queue, " pipelining ", k.pipelining));
    EXPECT_EQ(p.host_inputs_per_step, host);
    EXPECT_EQ(p.activations_per_step, act);
    EXPECT_EQ(p.host_queue_items, std::max(1, k.queue));
    EXPECT_EQ(p.in_flight_steps, k.in_flight);
    EXPECT_EQ(p.prefetch_depth, k.depth);
    EXPECT_EQ(p.heap_dense_bytes, dense);
    EXPECT_EQ(p.heap_inputs_bytes, host * k.depth + act * k.in_flight);
    EXPECT_EQ(p.heap_bytes, dense + host * k.depth + act * k.in_flight);
    EXPECT_EQ(p.hbm_bytes_per_chip, p.tables_bytes + p.stack_bytes + p.heap_bytes);
    EXPECT_THAT(FormatMemoryPlan(p),
                HasSubstr(absl::StrFormat("x prefetch depth %d (%d host queue items + %d "
                                          "in-flight steps)",
                                          k.depth, std::max(1, k.queue), k.in_flight)));
    summary::MemoryStats m;
    FillMemoryStats(p, &m);
    EXPECT_EQ(m.prefetch_depth(), k.depth);
    EXPECT_EQ(m.in_flight_steps(), k.in_flight);
  }
}

// BF16 rows halve the table bytes (dim 64: 128 B a row instead of 256),
// BF16 slots halve the slots' too; dims pad to 16 bf16 elements (one 32 B
// line); the SPMEM row buffers follow the bf16 SIMD width (Trillium 16
// rows a step at 2 B, the same bytes as 8 fp32 rows), and the summary line
// names the formats.
TEST(MemoryPlanTest, Bf16TablesAndSlotsHalveTheirBytes) {
  const std::string table = R"pb(tables { name: "t" vocab_size: 4096 dim: DIM combiner: SUM
                                          optimizer { adam {} } DTYPES }
                                 features { name: "f" table: "t" })pb";
  auto plan = [&](int dim, const std::string& dtypes, const std::string& preset = "") {
    std::string text = absl::StrReplaceAll(table, {{"DIM", std::to_string(dim)},
                                                   {"DTYPES", dtypes}});
    auto c = config::ParseConfig(std::string(kBase) + text + preset, "plan_test", "", 1);
    EXPECT_TRUE(c.ok()) << c.status();
    return BuildMemoryPlan(*c, 0);
  };
  const MemoryPlan fp = plan(64, "");
  const MemoryPlan rows = plan(64, "dtype: BF16");
  const MemoryPlan both = plan(64, "dtype: BF16 slot_dtype: BF16");
  EXPECT_EQ(fp.tables[0].table_bytes, 4096 * 64 * 4);
  EXPECT_EQ(rows.tables[0].table_bytes, fp.tables[0].table_bytes / 2);
  EXPECT_EQ(rows.tables[0].slot_bytes, fp.tables[0].slot_bytes);  // Adam: 2 fp32 slots
  EXPECT_EQ(both.tables[0].slot_bytes, fp.tables[0].slot_bytes / 2);
  EXPECT_EQ(both.tables_bytes, fp.tables_bytes / 2);
  EXPECT_EQ(both.unpadded_bytes, fp.unpadded_bytes / 2);
  EXPECT_EQ(rows.tables[0].element_bytes, 2);
  // Dim 20: 24 fp32 elements (3 lines of 8) but 32 bf16 ones (2 lines of 16).
  EXPECT_EQ(plan(20, "").tables[0].padded_dim, 24);
  EXPECT_EQ(plan(20, "dtype: BF16").tables[0].padded_dim, 32);
  EXPECT_EQ(plan(20, "dtype: BF16").tables[0].table_bytes, 4096 * 32 * 2);
  // SPMEM rows: v5p has no bf16 vector mode (8 rows a step at 2 B: half the
  // fp32 bytes); Trillium processes 16 bf16 rows a step.
  EXPECT_EQ(fp.stacks[0].spmem_rows_bytes, 2 * 8 * 64 * 4);
  EXPECT_EQ(rows.stacks[0].spmem_rows_bytes, 2 * 8 * 64 * 2);
  auto tr = config::ParseConfig(
      absl::StrReplaceAll(std::string(kBase), {{"TPU_V5P", "TRILLIUM"}}) +
          absl::StrReplaceAll(table, {{"DIM", "64"}, {"DTYPES", "dtype: BF16"}}),
      "plan_test", "", 1);
  ASSERT_TRUE(tr.ok()) << tr.status();
  const MemoryPlan t = BuildMemoryPlan(*tr, 0);
  EXPECT_EQ(t.stacks[0].simd_width, 16);
  EXPECT_EQ(t.stacks[0].spmem_rows_bytes, 2 * 16 * 64 * 2);
  EXPECT_THAT(FormatMemoryPlan(both), HasSubstr("(bf16 rows, bf16 slots)"));
  EXPECT_THAT(FormatMemoryPlan(fp), ::testing::Not(HasSubstr("bf16")));
}

// BF16 and FP32 tables of one dim do not share a stack (automatic stacking
// keeps them apart; an explicit stack of both is a config error naming why).
TEST(MemoryPlanTest, Bf16AndFp32TablesAreNotStacked) {
  const std::string tables = R"pb(
    tables { name: "a" vocab_size: 100 dim: 16 combiner: SUM dtype: BF16 }
    tables { name: "b" vocab_size: 100 dim: 16 combiner: SUM }
    tables { name: "c" vocab_size: 100 dim: 16 combiner: SUM dtype: BF16 }
    features { name: "a" table: "a" } features { name: "b" table: "b" }
    features { name: "c" table: "c" })pb";
  const MemoryPlan p = BuildMemoryPlan(Load(tables), 0);
  ASSERT_EQ(p.stacks.size(), 2u);
  EXPECT_EQ(p.stacks[0].table_names, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(p.stacks[0].element_bytes, 2);
  EXPECT_EQ(p.stacks[1].element_bytes, 4);
  auto bad = config::ParseConfig(
      std::string(kBase) + tables + R"pb(sparse_core { table_stacks { name: "s" tables: "a" tables: "b" } })pb",
      "plan_test", "", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("dtypes differ"));
}

}  // namespace
}  // namespace lemrt::device
