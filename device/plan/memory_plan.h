// The static memory plan of one emulated chip ("compilation", reference
// sections 4 and 10): before the first step every static buffer is sized from
// the topology, the tables and the partition limits, and a plan that does not
// fit refuses to start with the chip's own failure messages. Immutable value;
// thread-safe.
//
// How the reference's terms map to lemrt (all sizes in bytes, f32 = 4 B,
// bf16 = 2 B; e = a table's element bytes: 4, or 2 with dtype BF16; es =
// its slots', by slot_dtype):
//   N = num_chips x sparse_cores_per_chip, T = tiles_per_sparse_core.
//   padded_dim      = dim rounded up to a 32 B line: 8 fp32 or 16 bf16
//                     elements.
//   padded_vocab    = vocab_size rounded up to a multiple of N; each chip holds
//                     padded_vocab / N x S rows.
//   table bytes     = rows per chip x padded_dim x e; slots = the table
//                     optimizer's slots_per_param x (rows per chip x dim
//                     padded to a line of es-byte values x es) + its
//                     row_slots x rows per chip x es (row-wise Adagrad: one
//                     value per row), rounded up to a 32 B line.
//   packing         = sparse_core.pack_narrow_tables: a table of dim <= 4
//                     stores rows at the next power-of-two width w (1, 2, 4
//                     floats), rows_per_line = 8 / w rows per 32 B line, so
//                     table bytes = ceil(rows per chip / rows_per_line) x 32
//                     (slots alike); packing_saved_bytes = what that saves.
//                     The stack and SPMEM terms keep feature_width =
//                     padded_dim (a gathered row still occupies a line).
//   Stacks: the SparseCore runs stacked tables (layout/stacking.h; with
//   sparse_core.disable_table_stacking every table is its own stack): a
//   stack's members share padded_dim and are looked up as one batch, so the
//   stack, SPMEM and gather terms below are per stack; HBM for tables and
//   slots (above) stays per original table.
//   feature_width   = the stack's padded_dim.
//   max_unique_nz_per_row = the stack's ids per sample (sum over the
//                     features of its members of max_sequence_length).
//   logical_replica_count = samples per chip per step (global_batch /
//                     num_chips): the rows whose ids are in flight on a chip.
//   stack (forward)  = (2 feature_width + 1) x nz x replicas x 4 per stack;
//   stack (backward) = 3 feature_width x nz x replicas x 4 per stack
//                     (= the sum of its members' terms, also shown per table).
//   Peak stack: the stacks run concurrently, except that the
//   xla_sc_num_serialized_tables_to_optimize_hbm stacks with the largest
//   stack run one after another afterwards (runtime/step/table_serialization.h):
//   max(phase) of max(sum(concurrent), max(serialized)).
//   heap = dense parameters x (1 + 1 gradient) x 4 + the dense optimizer's
//          slot floats (SlotFloats(dense parameters)) x 4
//        + host inputs per step x prefetch depth
//        + activations per step x in-flight steps, where
//          in-flight steps = the trainer's StepSlots holding a step: 2 with
//            pipelining (step i on the TensorCore while step i + 1 is looked
//            up), else 1;
//          prefetch depth = host queue items (max(1,
//            sparse_core.maximum_parallel_iterations): runtime/step/host_prefetcher;
//            with 0 the one item is filled inline) + in-flight steps;
//          host inputs per step = local batch x ((dense features + 1 label)
//            x 4 + ids per sample x 24 B COO entry);
//          activations per step = local batch x activation width x 4 x 2
//            (activations and their gradients).
//   SPMEM per tile, per stack (the stacks run one after another on a
//   SparseCore, so the tile needs the largest stack's):
//     ids        = N partitions x max_ids_per_partition / T x 16 B (column,
//                  sample, gain, unique index)
//     unique ids = N x max_unique_ids_per_partition / T x 4 B
//     rows       = 2 x simd_width x padded_dim x 4 (double-buffered chunk of
//                  gathered rows, processed simd_width rows at a time); a
//                  BF16 stack: 2 x simd_width_bf16 x (dim padded to 16) x 2
//                  (Trillium's 16-wide bf16 vectors)
//     fixed      = ids + unique ids + rows;
//     gather operand (partial sums) = sample_count x feature_width x 4 / T,
//                  sample_count = global_batch / N (samples per SparseCore)
//                  x the stack's features.
//   The per-partition limits of a stack are the stack's (layout::StackLimits:
//   the largest of its members'), capped by the conservative bound (every id
//   of a source SparseCore's samples to one destination; unique ids at most
//   the stack rows one SparseCore owns).
#ifndef LEMRT_DEVICE_PLAN_MEMORY_PLAN_H_
#define LEMRT_DEVICE_PLAN_MEMORY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "layout/limits.h"
#include "proto/config.pb.h"

namespace lemrt::device {

// Per-partition limits the plan sizes SPMEM for (a partition = the ids one
// source SparseCore sends one destination SparseCore for one stacked table in
// one step, after per-sample dedup).
struct PlanPartitionLimits {
  int64_t max_ids = 0;         // ids
  int64_t max_unique_ids = 0;  // distinct rows
};

// The limits of a partition of a table (or stack) with `ids_per_sample` ids
// per sample and `rows_per_sparse_core` rows on each SparseCore: without
// configured limits, conservatively every id of a source SparseCore's samples
// (global_batch / N x ids_per_sample) may go to one destination, and unique
// ids are further bounded by the rows one SparseCore owns; `configured` (an
// entry of layout::ResolveLimits, or of layout::StackLimits for a stack: limits
// file > max_ids_per_table / max_unique_ids_per_table over N partitions >
// max_ids_per_partition / max_unique_ids_per_partition) lowers them. The one
// place that turns limits into the plan's.
PlanPartitionLimits PartitionLimitsForPlan(const config::RunConfig& config, int64_t ids_per_sample,
                                           int64_t rows_per_sparse_core,
                                           const layout::TableLimit& configured);
// Table `table` alone (as if it were its own stack), with the config's limits
// resolved here. The config must not name a limits_file (CHECK).
PlanPartitionLimits PartitionLimitsForPlan(const config::RunConfig& config, int table);

// HBM of one original table on one chip.
struct TablePlan {
  std::string name;
  int dim = 0;
  int padded_dim = 0;                 // elements (8 fp32 / 16 bf16 a line)
  int element_bytes = 4;              // 4 fp32, 2 bf16 (TableConfig.dtype)
  int slot_element_bytes = 4;         // of the optimizer slots (slot_dtype)
  int64_t vocab_size = 0;             // rows
  int64_t padded_vocab = 0;           // rows, multiple of N
  int64_t rows_per_chip = 0;          // padded_vocab / N x S
  int slots_per_param = 0;
  int row_slots = 0;                  // optimizer slot floats per row
  int rows_per_line = 1;              // > 1: packed narrow table
  int64_t table_bytes = 0;            // per chip, padded (or packed)
  int64_t slot_bytes = 0;             // per chip, padded
  int64_t padding_bytes = 0;          // per chip: (padded - unpadded) table + slots
  int64_t ids_per_sample = 0;         // the table's share of its stack's nz per row
  int num_features = 0;
  int stack = 0;                      // index into MemoryPlan::stacks
  // The table's share of its stack's HBM stack (informational; the peak is
  // computed per stack).
  int64_t stack_forward_bytes = 0;
  int64_t stack_backward_bytes = 0;
};

// One stacked table as the SparseCore runs it: its HBM stack, its SPMEM per
// tile and whether it is serialized.
struct StackPlan {
  std::string name;                   // layout::TableStack::name
  std::vector<int> tables;            // member table indices, member order
  std::vector<std::string> table_names;
  int padded_dim = 0;                 // feature_width, floats
  int element_bytes = 4;              // of the stored rows: 4 fp32, 2 bf16
  int simd_width = 0;                 // rows a vector step: simd_width(_bf16)
  int64_t row_elements = 0;           // a gathered row, padded to a line
  int64_t rows_per_sparse_core = 0;   // stack rows / N
  int64_t ids_per_sample = 0;         // max_unique_nz_per_row
  int num_features = 0;
  PlanPartitionLimits limits;
  int64_t stack_forward_bytes = 0;
  int64_t stack_backward_bytes = 0;
  bool serialized = false;            // one of the serialized stacks
  // SPMEM per tile while this stack runs.
  int64_t spmem_ids_bytes = 0;
  int64_t spmem_unique_bytes = 0;
  int64_t spmem_rows_bytes = 0;
  int64_t spmem_fixed_bytes = 0;      // ids + unique + rows
  int64_t gather_sample_count = 0;    // global_batch / N x the stack's features
  int64_t gather_operand_bytes = 0;   // partial sums
  int64_t spmem_bytes() const { return spmem_fixed_bytes + gather_operand_bytes; }
};

struct MemoryPlan {
  int num_chips = 0;
  int sparse_cores_per_chip = 0;
  int tiles_per_sparse_core = 0;
  int64_t hbm_bytes = 0;              // capacity per chip
  int64_t spmem_bytes_per_tile_limit = 0;
  std::vector<TablePlan> tables;      // config order
  std::vector<StackPlan> stacks;      // layout::StackingPlan order
  int64_t tables_bytes = 0;           // per chip, tables + slots
  int64_t stack_bytes = 0;            // per chip, peak
  int64_t stack_bytes_unserialized = 0;
  int64_t heap_bytes = 0;             // per chip
  int64_t heap_dense_bytes = 0;
  int64_t dense_params = 0;           // the dense model's parameters
  std::string dense_model;            // its interaction (DescribeInteraction)
  int64_t heap_inputs_bytes = 0;      // host inputs x depth + activations x in-flight
  int64_t host_inputs_per_step = 0;   // bytes per chip
  int64_t activations_per_step = 0;   // bytes per chip, activations + gradients
  int host_queue_items = 1;           // max(1, maximum_parallel_iterations)
  int in_flight_steps = 1;            // 2 with pipelining
  int prefetch_depth = 1;             // host_queue_items + in_flight_steps
  // Hot-row replication (TableConfig.hot_rows), per chip: every hot row's
  // replica (weights and slots) and the per-step gradient buffer
  // (runtime/hot_rows/hot_row_replicas.h: hot rows x (dim + 1) floats over all
  // tables).
  int64_t hot_rows = 0;
  int64_t hot_replica_bytes = 0;
  int64_t hot_gradient_bytes = 0;
  int64_t hbm_bytes_per_chip = 0;     // tables + slots + stack + heap + hot rows
  int64_t spmem_bytes_per_tile = 0;   // max over stacks of fixed + gather
  int64_t padding_bytes = 0;          // per chip
  int64_t unpadded_bytes = 0;         // per chip, tables + slots as if unpadded
  int64_t packing_saved_bytes = 0;    // per chip, tables + slots (pack_narrow_tables)
};

// Sizes every buffer. `dense_params` is the dense model's parameter count
// (CountDenseParams); `limits` the config's resolved per-table partition
// limits (layout::ResolveLimits; the plan takes each stack's with
// layout::StackLimits, as host preprocessing does). The config must be
// validated.
MemoryPlan BuildMemoryPlan(const config::RunConfig& config, int64_t dense_params,
                           const layout::PartitionLimits& limits);
// As above, resolving limits here; the config must not name a limits_file.
MemoryPlan BuildMemoryPlan(const config::RunConfig& config, int64_t dense_params);

// As above, counting the dense parameters of the configured model from its
// description (CountDenseParams, no model is built) and reading the limits
// file; errors are the model's (InvalidArgument) and the limits file's
// (layout::ResolveLimits: NotFound, InvalidArgument).
absl::StatusOr<MemoryPlan> BuildMemoryPlan(const config::RunConfig& config);

// OK when the plan fits. InvalidArgument when a stack holds more rows than a
// row key does (2^48, base/row_key.h); otherwise ResourceExhausted with the
// first failure:
//   "Fixed size allocations (<B>) do not fit in TileSpmem (<B>) ..." (ids and
//     unique ids from the limits; names the stack and its tables, the terms
//     and what to lower),
//   "Gather operand too large ..." (the stack's sample_count x feature_width
//     / tiles over what the tile has left),
//   "HBM out of memory ..." (names tables+slots, stack and heap and the
//     largest items).
absl::Status CheckMemoryPlan(const MemoryPlan& plan);

// "628480000 B (599.37 MiB)": bytes with a binary-unit rendering (KiB from
// 1024, MiB, GiB), as the plan's messages and report print them.
std::string FormatBytes(int64_t bytes);

// A table's optimizer state as the report prints it: "2" (slots per
// parameter), "1/row" (per-row slots), "1+1/row", "0".
std::string SlotLabel(const TablePlan& table);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_PLAN_MEMORY_PLAN_H_
