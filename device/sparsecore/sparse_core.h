// One emulated SparseCore: owns a shard of every table and runs the embedding
// lookup (dedup ids of its partition, gather rows, combine them into partial
// pooled vectors) and the update (sum gradients per id, apply the table's
// optimizer). It sees only entries whose col % N equals its global index.
// Thread-compatible; distinct SparseCores may run on distinct threads.
//
// Partial layout, per received segment: walking the segment's entries in
// order, each maximal run with the same (feature, row) is a "group"; the
// segment's partials are the groups' pooled vectors concatenated, each of its
// table's dim floats. Gradients come back in the same layout.
#ifndef LEMRT_DEVICE_SPARSECORE_SPARSE_CORE_H_
#define LEMRT_DEVICE_SPARSECORE_SPARSE_CORE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "device/optimizers/optimizer.h"
#include "device/sparsecore/debug_checks.h"
#include "device/sparsecore/quantization.h"
#include "device/sparsecore/step_state.h"
#include "device/sparsecore/table_shard.h"
#include "device/sparsecore/tile_pool.h"
#include "layout/coo_format.h"
#include "proto/config.pb.h"

namespace lemrt::device {

// Floats of a segment's partials (see the layout above).
int64_t PartialFloats(std::span<const layout::CooEntry> segment, std::span<const int> table_dims);

class SparseCore {
 public:
  // `optimizers[t]` is table t's optimizer; all must outlive the SparseCore.
  // `initialize_tables` false leaves the shards zero for InitializeTables
  // (table_init.h).
  SparseCore(const config::RunConfig& config, int global_sc,
             std::span<const Optimizer* const> optimizers, bool initialize_tables = true);

  // Lookup: `segments` are the partition's entries as received (any order of
  // segments, but the same order must be given to Backward). Writes segment
  // k's partials to partials[k] (PartialFloats(segments[k]) floats).
  void Forward(std::span<const std::span<const layout::CooEntry>> segments,
               std::span<float* const> partials, SparseCoreStepState* state) const;
  // Forward in its two parts, NumberIds then Lookup with the same arguments,
  // for a caller that numbers several SparseCores' ids at once on distinct
  // threads: NumberIds checks bounds, numbers the unique ids (DedupPartition,
  // one thread) and chooses the staged tables; Lookup gathers and combines
  // on the tiles (nothing, after a bounds failure).
  void NumberIds(std::span<const std::span<const layout::CooEntry>> segments,
                 SparseCoreStepState* state) const;
  void Lookup(std::span<const std::span<const layout::CooEntry>> segments,
              std::span<float* const> partials, SparseCoreStepState* state) const;

  // Tiles: the unique ids are split over tiles_per_sparse_core tiles (tile t
  // gets the t-th contiguous share of the sorted unique ids), which gather
  // their rows one run of same-table rows at a time (topology.simd_width
  // sizes the SPMEM row buffers of the memory plan only: the rows a vector
  // step takes change no value); the combine splits the partition's
  // table-major runs (table_major_runs.h) over the tiles, and Backward its
  // tables (each tile sums and updates whole tables: fewer tables than tiles
  // leave tiles idle).
  // Every output is written by exactly one tile in a fixed order, so results
  // are bit-identical whatever the pool and its timing. `pool` (may be null:
  // tiles run inline) must outlive the SparseCore's use of it.
  void set_tile_pool(TilePool* pool) { pool_ = pool; }
  TilePool* tile_pool() const { return pool_; }

  // The debug checks configured in sparse_core (debug_checks.h). Forward and
  // Backward leave the first failure in state->debug_status; a bounds
  // failure stops Forward before any row is read (the partials are then not
  // written), a NaN in the gradients stops Backward before any update.
  const DebugChecks& debug_checks() const { return checks_; }
  // Verifies the guard words of `state`'s staging buffers ('gathered' after
  // Forward, 'grad_acc' after Backward); `stage` names the stage in errors.
  absl::Status VerifyGuardWords(const SparseCoreStepState& state, std::string_view stage) const;
  int num_tiles() const { return tiles_; }

  // Post-training int8 evaluation (lemrt_train --eval_quantized): while on,
  // Forward pools every gathered row as its int8 round trip
  // (Int8RoundTripRow, before any simulated quantization), giving the
  // partials that tables with every row round-tripped in place would give,
  // bit for bit, without touching or copying the tables (the rows are
  // staged, so the extra memory is the staging buffer's). Forward only:
  // Backward must not run while it is on.
  void set_int8_lookups(bool on) { int8_lookups_ = on; }
  bool int8_lookups() const { return int8_lookups_; }

  // Update: grads[k] holds the loss gradients w.r.t. segment k's partials.
  // Sums each unique id's contributions in entry order (independent of
  // arrival timing), or, with training.world_size_independent where two
  // features share a table, in feature-major order (ForEachFeatureRun,
  // partition_dedup.h: (feature, global sample) for segments in source
  // order, whatever the number of SparseCores), and applies its table's
  // optimizer once per unique id.
  // Each training step is one optimizer update (Adam's t = number of steps
  // so far, counted per SparseCore; every SparseCore runs Backward every
  // step). A step split into several Backward calls (vocabulary-dimension
  // minibatches, serialized table groups; each row in one call only) passes
  // `continue_step` true for every call but the first, so t advances once.
  void Backward(std::span<const std::span<const layout::CooEntry>> segments,
                std::span<const float* const> grads, SparseCoreStepState* state,
                bool continue_step = false);
  // Numbers the unique ids of `segments` into `state` as Forward does
  // (partition_dedup.h), without a lookup: for one Backward over the
  // segments of several Forward calls that share rows (sample-dimension
  // minibatches), so each row's gradients are summed before its update.
  void DedupForBackward(std::span<const std::span<const layout::CooEntry>> segments,
                        SparseCoreStepState* state) const;

  int global_sc() const { return global_sc_; }
  // Optimizer updates (training steps) applied so far, for checkpoints.
  int64_t updates() const { return updates_; }
  void set_updates(int64_t updates) { updates_ = updates; }
  int num_tables() const { return static_cast<int>(shards_.size()); }
  const TableShard& shard(int table) const { return *shards_[table]; }
  TableShard& mutable_shard(int table) { return *shards_[table]; }
  std::span<const int> table_dims() const { return dims_; }

 private:
  // Runs fn(begin, end) for each tile's contiguous share of [0, n).
  template <typename Fn>
  void RunTiles(int64_t n, Fn&& fn) const;
  // Forward's phases after the deduplication, in order (sparse_core.cc):
  // which tables' rows are staged (state->stage_table); the staged rows'
  // gather into state->gathered (returns its rows, nullptr when no table is
  // staged); their int8 or simulated-quantization round trip; the combine
  // into `partials`; the debug checks of the staging buffer and partials.
  void ChooseStagedTables(SparseCoreStepState* state) const;
  float* GatherStagedRows(SparseCoreStepState* state) const;
  void RoundGatheredRows(float* gathered, SparseCoreStepState* state) const;
  void Combine(std::span<const std::span<const layout::CooEntry>> segments, const float* gathered,
               std::span<float* const> partials, SparseCoreStepState* state) const;
  void CheckForwardOutputs(std::span<const std::span<const layout::CooEntry>> segments,
                           std::span<float* const> partials, SparseCoreStepState* state) const;
  // Backward's phases after the gradients' NaN check, in order: table by
  // table (state->runs), the gradients' scatter into the per-id
  // accumulators state->grad_acc (a one-hot id's gain and gradient noted
  // instead, state->unique_gain / unique_grad), then the optimizer on the
  // table's unique rows as update `step` (UpdateRows: unique ids [begin,
  // end) of one table); after all tables, the NaN check of the updated rows
  // (the first non-finite row's error).
  void ScatterAndUpdate(std::span<const std::span<const layout::CooEntry>> segments,
                        std::span<const float* const> grads, int64_t step,
                        SparseCoreStepState* state);
  // The groups of entries [begin, end) of one segment, whose dedup numbers
  // start at state->entry_unique[entry] and whose gradients start at `g`;
  // returns the gradient after the last group.
  const float* ScatterSegmentGroups(std::span<const layout::CooEntry> seg, int64_t entry,
                                    int64_t begin, int64_t end, const float* g, float* acc,
                                    SparseCoreStepState* state) const;
  void UpdateRows(int64_t begin, int64_t end, int64_t step, float* acc, SparseCoreStepState* state);
  absl::Status CheckUpdatedRows(int64_t step, const SparseCoreStepState& state) const;

  int global_sc_;
  int tiles_ = 1;
  TilePool* pool_ = nullptr;
  DebugChecks checks_;
  // Simulated quantization of the gathered rows (quantization.h).
  TableQuantization quantization_;
  bool int8_lookups_ = false;
  std::vector<std::string> table_names_;
  // Debug checks (sparse_core_checks.cc); the step named in errors is
  // updates_ (0-based).
  absl::Status CheckBounds(std::span<const std::span<const layout::CooEntry>> segments) const;
  absl::Status CheckFiniteGroups(std::span<const std::span<const layout::CooEntry>> segments,
                                 std::span<const float* const> values, const char* what,
                                 const char* stage, int64_t step) const;
  int64_t updates_ = 0;
  // Backward sums each id's entries in feature-major order (see Backward).
  bool feature_major_ = false;
  // Per table, the learning rate and the bf16 rounding keys of the step
  // Backward runs (scratch).
  std::vector<float> table_lr_;
  std::vector<TableShard::RoundingKeys> table_keys_;
  std::vector<int> dims_;
  std::vector<std::unique_ptr<TableShard>> shards_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_SPARSE_CORE_H_
