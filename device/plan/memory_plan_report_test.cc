#include "device/plan/memory_plan_report.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

using ::testing::HasSubstr;

// 1 chip x 4 SparseCores x 16 tiles; a two-table stack and a packed dim-2 table.
constexpr char kConfig[] = R"pb(
topology { preset: TPU_V5P }
sparse_core { pack_narrow_tables: true xla_sc_num_serialized_tables_to_optimize_hbm: 1 }
tables { name: "a" vocab_size: 4000 dim: 16 combiner: SUM }
tables { name: "b" vocab_size: 1000 dim: 12 combiner: SUM }
tables { name: "n" vocab_size: 800 dim: 2 combiner: SUM optimizer { adagrad {} } }
features { name: "fa" table: "a" max_sequence_length: 2 }
features { name: "fb" table: "b" }
features { name: "fn" table: "n" }
model { num_dense_features: 2 bottom_mlp: 4 top_mlp: 1 }
training { global_batch: 64 }
)pb";

MemoryPlan Plan() {
  auto c = config::ParseConfig(kConfig, "report_test", "", 1);
  EXPECT_TRUE(c.ok()) << c.status();
  return BuildMemoryPlan(c.ok() ? *c : config::RunConfig(), /*dense_params=*/100);
}

TEST(MemoryPlanReportTest, FormatBytesUsesBinaryUnits) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1024 B (1.0 KiB)");
  EXPECT_EQ(FormatBytes(int64_t{3} << 20), "3145728 B (3.00 MiB)");
  EXPECT_EQ(FormatBytes(int64_t{96} << 30), "103079215104 B (96.00 GiB)");
}

// The dry-run text has a row per table, a block per stack and the totals,
// with the plan's own numbers.
TEST(MemoryPlanReportTest, DryRunTextNamesEveryTableStackAndTotal) {
  const MemoryPlan p = Plan();
  const std::string text = FormatMemoryPlan(p);
  EXPECT_THAT(text, HasSubstr("Memory plan per chip (1 chips x 4 SparseCores x 16 tiles)"));
  for (const TablePlan& t : p.tables) {
    EXPECT_THAT(text, HasSubstr("\n" + t.name + " ")) << t.name;
    EXPECT_THAT(text, HasSubstr(" " + std::to_string(t.table_bytes) + " ")) << t.name;
  }
  EXPECT_THAT(text, HasSubstr("(packed, 4 rows per line)"));
  ASSERT_EQ(p.stacks.size(), 2u);
  for (const StackPlan& s : p.stacks) {
    EXPECT_THAT(text, HasSubstr("stack '" + s.name + "'"));
    EXPECT_THAT(text, HasSubstr("total " + std::to_string(s.spmem_bytes()) + " (limits:"));
  }
  EXPECT_THAT(text, HasSubstr("stack 'a+b' [a b]: dim 16, 2 feature(s), 3 id(s) per sample"));
  EXPECT_THAT(text, HasSubstr("(serialized)"));
  EXPECT_THAT(text, HasSubstr("total " + FormatBytes(p.hbm_bytes_per_chip) + " of " +
                              FormatBytes(p.hbm_bytes)));
  EXPECT_THAT(text, HasSubstr("SPMEM per tile " + std::to_string(p.spmem_bytes_per_tile) +
                              " of 131072 bytes"));
  EXPECT_THAT(text, HasSubstr("Narrow-table packing (pack_narrow_tables) saves " +
                              FormatBytes(p.packing_saved_bytes)));
}

TEST(MemoryPlanReportTest, SummaryStatsCopyThePlan) {
  const MemoryPlan p = Plan();
  summary::MemoryStats m;
  m.add_stacks()->set_name("stale");  // replaced, not appended to
  FillMemoryStats(p, &m);
  EXPECT_EQ(m.hbm_bytes_per_chip(), static_cast<double>(p.hbm_bytes_per_chip));
  EXPECT_EQ(m.hbm_stack_bytes(), static_cast<double>(p.stack_bytes));
  EXPECT_EQ(m.hbm_heap_bytes(), static_cast<double>(p.heap_bytes));
  EXPECT_EQ(m.hbm_table_bytes(), static_cast<double>(p.tables_bytes));
  EXPECT_EQ(m.hbm_capacity_bytes(), static_cast<double>(p.hbm_bytes));
  EXPECT_EQ(m.spmem_bytes_per_tile(), static_cast<double>(p.spmem_bytes_per_tile));
  EXPECT_EQ(m.padding_bytes(), static_cast<double>(p.padding_bytes));
  EXPECT_GT(m.packing_saved_bytes(), 0);
  EXPECT_EQ(m.packing_saved_bytes(), static_cast<double>(p.packing_saved_bytes));
  EXPECT_EQ(m.prefetch_depth(), p.prefetch_depth);
  EXPECT_EQ(m.in_flight_steps(), p.in_flight_steps);
  ASSERT_EQ(m.stacks_size(), static_cast<int>(p.stacks.size()));
  int serialized = 0;
  for (int i = 0; i < m.stacks_size(); ++i) {
    const StackPlan& s = p.stacks[i];
    const summary::StackMemoryStats& o = m.stacks(i);
    EXPECT_EQ(o.name(), s.name);
    ASSERT_EQ(o.tables_size(), static_cast<int>(s.table_names.size()));
    EXPECT_EQ(o.padded_dim(), s.padded_dim);
    EXPECT_EQ(o.features(), s.num_features);
    EXPECT_EQ(o.ids_per_sample(), static_cast<double>(s.ids_per_sample));
    EXPECT_EQ(o.max_ids_per_partition(), static_cast<double>(s.limits.max_ids));
    EXPECT_EQ(o.max_unique_ids_per_partition(), static_cast<double>(s.limits.max_unique_ids));
    EXPECT_EQ(o.spmem_fixed_bytes(), static_cast<double>(s.spmem_fixed_bytes));
    EXPECT_EQ(o.gather_operand_bytes(), static_cast<double>(s.gather_operand_bytes));
    EXPECT_EQ(o.spmem_bytes_per_tile(), static_cast<double>(s.spmem_bytes()));
    EXPECT_EQ(o.stack_forward_bytes(), static_cast<double>(s.stack_forward_bytes));
    EXPECT_EQ(o.stack_backward_bytes(), static_cast<double>(s.stack_backward_bytes));
    EXPECT_EQ(o.serialized(), s.serialized);
    serialized += o.serialized();
  }
  EXPECT_EQ(serialized, 1);
}

}  // namespace
}  // namespace lemrt::device
