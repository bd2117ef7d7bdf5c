// The static memory plan of one emulated chip ("compilation", reference
// sections 4 and 10): before the first step every static buffer is sized from
// the topology, the tables and the partition limits, and a plan that does not
// fit refuses to start with the chip's own failure messages. Immutable value;
// thread-safe.
//
// How the reference's terms map to lemrt (all sizes in bytes, f32 = 4 B):
//   N = num_chips x sparse_cores_per_chip, T = tiles_per_sparse_core.
//   padded_dim      = dim rounded up to 8 floats (32 B lines).
//   padded_vocab    = vocab_size rounded up to a multiple of N; each chip holds
//                     padded_vocab / N x S rows.
//   table bytes     = rows per chip x padded_dim x 4; slots = the table
//                     optimizer's slots_per_param x table bytes.
//   packing         = sparse_core.pack_narrow_tables: a table of dim <= 4
//                     stores rows at the next power-of-two width w (1, 2, 4
//                     floats), rows_per_line = 8 / w rows per 32 B line, so
//                     table bytes = ceil(rows per chip / rows_per_line) x 32
//                     (slots alike); packing_saved_bytes = what that saves.
//                     The stack and SPMEM terms keep feature_width =
//                     padded_dim (a gathered row still occupies a line).
//   feature_width   = padded_dim.
//   max_unique_nz_per_row = the table's ids per sample (sum of its features'
//                     max_sequence_length).
//   logical_replica_count = samples per chip per step (global_batch /
//                     num_chips): the rows whose ids are in flight on a chip.
//   stack (forward)  = (2 feature_width + 1) x nz x replicas x 4 per table;
//   stack (backward) = 3 feature_width x nz x replicas x 4 per table.
//   Peak stack: the tables run concurrently, except that the
//   xla_sc_num_serialized_tables_to_optimize_hbm tables with the largest stack
//   run one after another afterwards: max(phase) of max(sum(concurrent),
//   max(serialized)).
//   heap = dense parameters x (1 + dense slots + 1 gradient) x 4
//        + prefetched inputs per step x prefetch depth (2 with pipelining,
//          else 1); inputs per step = local batch x ((dense features + 1
//          label) x 4 + ids per sample x 24 B COO entry + activation width
//          x 4 x 2 (activations and their gradients)).
//   SPMEM per tile, per table (tables run one after another on a SparseCore,
//   so the tile needs the largest table's):
//     ids        = N partitions x max_ids_per_partition / T x 16 B (column,
//                  sample, gain, unique index)
//     unique ids = N x max_unique_ids_per_partition / T x 4 B
//     rows       = 2 x simd_width x padded_dim x 4 (double-buffered chunk of
//                  gathered rows, processed simd_width rows at a time)
//     fixed      = ids + unique ids + rows;
//     gather operand (partial sums) = sample_count x feature_width x 4 / T,
//                  sample_count = global_batch x the table's features.
#ifndef LEMRT_DEVICE_PLAN_MEMORY_PLAN_H_
#define LEMRT_DEVICE_PLAN_MEMORY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "host/limits.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"

namespace lemrt::device {

// Per-partition limits the plan sizes SPMEM for (a partition = the ids one
// source SparseCore sends one destination SparseCore for one table in one
// step, after per-sample dedup).
struct PlanPartitionLimits {
  int64_t max_ids = 0;         // ids
  int64_t max_unique_ids = 0;  // distinct rows
};

// The limits of table `table`: without configured per-partition limits,
// conservatively every id of a source SparseCore's samples (global_batch / N x
// the table's ids per sample) may go to one destination, and unique ids are
// further bounded by the rows one SparseCore owns; `configured` (the table's
// entry of host::ResolveLimits: limits file > max_ids_per_table /
// max_unique_ids_per_table over N partitions > max_ids_per_partition /
// max_unique_ids_per_partition) lowers them. The one place that turns limits
// into the plan's.
PlanPartitionLimits PartitionLimitsForPlan(const config::RunConfig& config, int table,
                                           const host::TableLimit& configured);
// As above with the config's limits resolved here. The config must not name
// a limits_file (CHECK; use the overloads taking host::PartitionLimits).
PlanPartitionLimits PartitionLimitsForPlan(const config::RunConfig& config, int table);

struct TablePlan {
  std::string name;
  int dim = 0;
  int padded_dim = 0;                 // floats
  int64_t vocab_size = 0;             // rows
  int64_t padded_vocab = 0;           // rows, multiple of N
  int64_t rows_per_chip = 0;          // padded_vocab / N x S
  int slots_per_param = 0;
  int rows_per_line = 1;              // > 1: packed narrow table
  int64_t table_bytes = 0;            // per chip, padded (or packed)
  int64_t slot_bytes = 0;             // per chip, padded
  int64_t padding_bytes = 0;          // per chip: (padded - unpadded) table + slots
  int64_t ids_per_sample = 0;         // max_unique_nz_per_row
  int num_features = 0;
  PlanPartitionLimits limits;
  int64_t stack_forward_bytes = 0;
  int64_t stack_backward_bytes = 0;
  bool serialized = false;            // one of the serialized tables
  // SPMEM per tile while this table runs.
  int64_t spmem_ids_bytes = 0;
  int64_t spmem_unique_bytes = 0;
  int64_t spmem_rows_bytes = 0;
  int64_t spmem_fixed_bytes = 0;      // ids + unique + rows
  int64_t gather_sample_count = 0;    // global_batch x the table's features
  int64_t gather_operand_bytes = 0;   // partial sums
};

struct MemoryPlan {
  int num_chips = 0;
  int sparse_cores_per_chip = 0;
  int tiles_per_sparse_core = 0;
  int64_t hbm_bytes = 0;              // capacity per chip
  int64_t spmem_bytes_per_tile_limit = 0;
  std::vector<TablePlan> tables;
  int64_t tables_bytes = 0;           // per chip, tables + slots
  int64_t stack_bytes = 0;            // per chip, peak
  int64_t stack_bytes_unserialized = 0;
  int64_t heap_bytes = 0;             // per chip
  int64_t heap_dense_bytes = 0;
  int64_t heap_inputs_bytes = 0;
  int prefetch_depth = 1;
  int64_t hbm_bytes_per_chip = 0;     // tables + slots + stack + heap
  int64_t spmem_bytes_per_tile = 0;   // max over tables of fixed + gather
  int64_t padding_bytes = 0;          // per chip
  int64_t unpadded_bytes = 0;         // per chip, tables + slots as if unpadded
  int64_t packing_saved_bytes = 0;    // per chip, tables + slots (pack_narrow_tables)
};

// Sizes every buffer. `dense_params` is the dense model's parameter count
// (DlrmDense::num_params); `limits` the config's resolved partition limits
// (host::ResolveLimits). The config must be validated.
MemoryPlan BuildMemoryPlan(const config::RunConfig& config, int64_t dense_params,
                           const host::PartitionLimits& limits);
// As above, resolving limits here; the config must not name a limits_file.
MemoryPlan BuildMemoryPlan(const config::RunConfig& config, int64_t dense_params);

// As above, counting the dense parameters of the configured DLRM and reading
// the limits file; errors are the DLRM shape's (InvalidArgument) and the
// limits file's (host::ResolveLimits: NotFound, InvalidArgument).
absl::StatusOr<MemoryPlan> BuildMemoryPlan(const config::RunConfig& config);

// OK when the plan fits; otherwise ResourceExhausted with the first failure:
//   "Fixed size allocations (<B>) do not fit in TileSpmem (<B>) ..." (ids and
//     unique ids from the limits; names table, terms and what to lower),
//   "Gather operand too large ..." (sample_count x feature_width / tiles over
//     what the tile has left),
//   "HBM out of memory ..." (names tables+slots, stack and heap and the
//     largest items).
absl::Status CheckMemoryPlan(const MemoryPlan& plan);

// The human-readable plan printed by lemrt_train --dry_run.
std::string FormatMemoryPlan(const MemoryPlan& plan);

// The summary's `memory` object.
void FillMemoryStats(const MemoryPlan& plan, summary::MemoryStats* out);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_PLAN_MEMORY_PLAN_H_
