// The SparseCore stages of a step on one chip: forward (ship ids to their
// owners, look up, ship partial pooled vectors back, sum them into
// activations) and backward (ship activation gradients to the owners, update
// rows). Buffers live in SparseStepBuffers, one per step in flight, so the
// lookup state of a step stays with that step. Thread-compatible.
//
// Exchanges per step (W ranks, S SparseCores per chip, N = W x S):
//   forward 1: MPI_Alltoall of S x S segment sizes per rank pair (8 S^2 B)
//   forward 2: MPI_Alltoallv of COO entries (24 B per id after per-sample dedup)
//   forward 3: MPI_Alltoallv of partials (4 x dim B per (sample, feature,
//              destination SparseCore) group; 2 x dim B with
//              sparse_core.exchange_dtype BF16: each value rounded to the
//              nearest bf16 before it is sent, widened exactly after)
//   backward:  MPI_Alltoallv of gradients, the reverse of forward 3 (bf16
//              alike).
// Segment order everywhere is [destination SC][source local SC]; on the
// receiving side [source rank][destination local SC][source local SC].
#ifndef LEMRT_RUNTIME_STEP_SPARSECORE_STAGE_H_
#define LEMRT_RUNTIME_STEP_SPARSECORE_STAGE_H_

#include <chrono>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "device/sparsecore/sparse_core.h"
#include "host/preprocess/coo.h"
#include "proto/config.pb.h"
#include "runtime/comm/communicator.h"
#include "runtime/hot_rows/hot_row_replicas.h"

namespace lemrt::runtime {

// When one local SparseCore's lookup (Forward) or update (Backward) kernel
// ran, and on how many entries, for the trace and breakdown (runtime/observability/run_recorder.h).
struct SparseCoreSpan {
  int local_sc = 0;
  bool backward = false;
  std::chrono::steady_clock::time_point begin, end;
  int64_t ids = 0;         // entries received (after per-sample dedup)
  int64_t unique_ids = 0;  // unique (table, row) of the partition
  // The forward's numbering of the unique ids (SparseCore::NumberIds), which
  // the local SparseCores run at once before their lookups.
  bool numbering = false;
};

// Everything one step's SparseCore work keeps between forward and backward.
struct SparseStepBuffers {
  std::vector<int64_t> send_counts, recv_counts;  // [rank][dest local SC][src local SC]
  std::vector<layout::CooEntry> recv_entries;
  // The received entries the SparseCores read: recv_entries.data(), or on
  // one rank the step's own COO entries (nothing crosses, so nothing is
  // copied; the COO outlives the step's backward).
  const layout::CooEntry* entries = nullptr;
  std::vector<int64_t> recv_offsets;              // entries, per received segment (+1)
  std::vector<float> owner_partials;              // partials this chip computed, per received segment
  std::vector<int64_t> owner_offsets;             // floats, per received segment (+1)
  std::vector<float> source_partials;             // partials for this chip's own segments
  std::vector<int64_t> source_offsets;            // floats, per own segment (+1)
  std::vector<device::SparseCoreStepState> sc_states;  // per local SparseCore
  // Per-rank element counts of the last all-to-all-v (entries, then partial
  // or gradient values): sent to / received from rank q.
  std::vector<int64_t> send_rank_counts, recv_rank_counts;
  std::vector<float> grads_in;                    // owner side, layout of owner_partials
  std::vector<float> grads_out;                   // source side, layout of source_partials
  // BF16 exchanges (sparse_core.exchange_dtype): the values as sent and
  // received, in the layout of the float buffers they stand for.
  std::vector<uint16_t> send_bf16, recv_bf16;
  // Kernel spans of the last Forward (which clears the list) and Backward.
  std::vector<SparseCoreSpan> sc_spans;
};

class SparseCoreStage {
 public:
  // Creates this chip's S SparseCores (global indices rank x S .. rank x S +
  // S - 1) with their table shards. `comm` and `optimizers` must outlive it;
  // `config` is for comm's world (topology.num_chips == comm.size(), as
  // config::ParseConfig(..., comm.size()) gives; CHECKed).
  // `initialize_tables` false leaves the shards zero for the caller's
  // device::InitializeTables (start-up modes, device/sparsecore/table_init.h).
  SparseCoreStage(const config::RunConfig& config, Communicator& comm,
                  std::span<const device::Optimizer* const> optimizers,
                  bool initialize_tables = true);

  // Lookup for `coo`; writes activations [local batch x activation_width()]
  // (feature f at columns feature_offset(f) .. + its table's dim).
  absl::Status Forward(const layout::PartitionedCoo& coo, SparseStepBuffers* buf,
                       std::span<float> activations);

  // Update from d_activations (same layout as activations) for the step whose
  // Forward filled `buf`. `continue_step`: this call continues the step of
  // the previous one (a later minibatch or table group), so the optimizers'
  // step count does not advance (device::SparseCore::Backward).
  absl::Status Backward(const layout::PartitionedCoo& coo, std::span<const float> d_activations,
                        SparseStepBuffers* buf, bool continue_step = false);

  // Vocabulary-dimension minibatches of one step (runtime/step/host_stage.h): runs
  // the exchange and lookup once per minibatch, buffers (*bufs)[m] for
  // minibatch m (resized to at least minibatches.size()), and sums every
  // minibatch's partials into `activations`. All ranks pass the same number
  // of minibatches.
  absl::Status Forward(std::span<const layout::PartitionedCoo> minibatches,
                       std::vector<SparseStepBuffers>* bufs, std::span<float> activations);

  // Update for the step whose minibatch Forward filled `bufs`: the gradient
  // exchange once per minibatch and the update once per row group
  // (layout::PartitionedCoo::row_group): a vocabulary-dimension minibatch is
  // its own row group, updated after its exchange; the sample-dimension
  // minibatches of one (host/preprocess/sample_split.h) share rows, so after all their
  // exchanges each local SparseCore updates the group's rows once, from
  // gradients summed over the group. Every row is updated once per step, as
  // without minibatching; the optimizers' step count advances once per step.
  absl::Status Backward(std::span<const layout::PartitionedCoo> minibatches,
                        std::span<const float> d_activations, std::vector<SparseStepBuffers>* bufs);

  // Hot-row replication (runtime/hot_rows/hot_row_replicas.h): the replicated rows of
  // every table, set before the first step (empty: none). `optimizers` as
  // for the constructor.
  void SetHotRows(host::HotRowSet set, std::span<const device::Optimizer* const> optimizers);
  const HotRowReplicas* hot_rows() const { return hot_.get(); }
  // Collective (when hot rows are set): the replicas from the rows' owners,
  // after the tables are initialised or restored.
  absl::Status RefreshHotRows();
  // Adds the step's hot entries' rows into `activations` (after Forward).
  void LookupHot(std::span<const host::HotEntry> hot, std::span<float> activations) const;
  // Collective (when hot rows are set): the hot rows' update of the step
  // whose Backward just ran (the same optimizer update number).
  absl::Status UpdateHot(std::span<const host::HotEntry> hot, std::span<const float> d_activations);

  int activation_width() const { return activation_width_; }
  int feature_offset(int f) const { return feature_offsets_[f]; }
  const std::vector<std::unique_ptr<device::SparseCore>>& sparse_cores() const { return scs_; }

  // Unique ids the local SparseCores gathered in the last Forward.
  int64_t last_unique_ids(const SparseStepBuffers& buf) const;
  // The same over the first `minibatches` buffers of a minibatch Forward.
  int64_t last_unique_ids(std::span<const SparseStepBuffers> bufs, size_t minibatches) const;

 private:
  // Forward's first exchange: coo's segment sizes and entries to their
  // owners (buf->recv_offsets, buf->entries); on one rank the COO's own.
  absl::Status ExchangeEntries(const layout::PartitionedCoo& coo, SparseStepBuffers* buf);
  // One rank with fp32 exchanges: the values' exchanges are a buffer swap
  // (owner and source layouts are one; a bf16 exchange still rounds).
  bool Alone() const { return W_ == 1 && !bf16_exchange_; }
  // Backward's exchange: gradients of coo's groups to their owners
  // (buf->grads_in).
  absl::Status ExchangeGradients(const layout::PartitionedCoo& coo,
                                 std::span<const float> d_activations, SparseStepBuffers* buf);
  // The partials' or gradients' exchange: the values at `send` (per-segment
  // float offsets send_offsets) to their ranks, into `recv` (recv_offsets),
  // as fp32 or (bf16_exchange_) as bf16 through buf's bf16 buffers.
  absl::Status ExchangeValues(const float* send, std::span<const int64_t> send_offsets,
                              float* recv, std::span<const int64_t> recv_offsets,
                              SparseStepBuffers* buf);
  // Appends local SC l's received gradient views of `buf` to ins_.
  void AppendGradientViews(const SparseStepBuffers& buf, int l);
  // The exchanges and the one update of the minibatches group_members_.
  absl::Status BackwardRowGroup(std::span<const layout::PartitionedCoo> minibatches,
                                std::span<const float> d_activations,
                                std::vector<SparseStepBuffers>* bufs, bool continue_step);

  // Forward's exchange and lookup; adds the partials into activations.
  absl::Status ForwardAccumulate(const layout::PartitionedCoo& coo, SparseStepBuffers* buf,
                                 std::span<float> activations);

  // Appends local SC l's kernel span (begin .. now, over `segs`) to buf.sc_spans.
  void RecordSpan(SparseStepBuffers& buf, int l, bool backward,
                  std::chrono::steady_clock::time_point begin,
                  std::span<const std::span<const layout::CooEntry>> segs,
                  bool numbering = false) const;

  // Views of local SC l's received segments, in (source rank, source SC) order.
  void SegmentsOf(const SparseStepBuffers& buf, int l,
                  std::vector<std::span<const layout::CooEntry>>* segs) const;

  // Calls fn(first entry, dim, offset) for each (feature, row) group of coo,
  // `offset` its partial's first float in the partial layout (floats[k]:
  // segment k's). Each local source SparseCore's segments are walked in
  // destination order, the sources at once on the tile pool: a source's
  // samples are its own (host/preprocess/coo.h: contiguous row ranges), so
  // no two sources touch one activation row, and each row sees its groups
  // in the order of a walk of the whole layout. The walks note their rows'
  // range, and a COO whose sources share a sample fails a CHECK.
  template <typename Fn>
  void ForEachGroupBySource(const layout::PartitionedCoo& coo, std::span<const int64_t> floats,
                            Fn&& fn);
  // The rank's SparseCores share one tile pool (trainer_setup gives each the
  // same): SparseCore 0's, or null.
  device::TilePool* tile_pool() const { return S_ > 0 ? scs_[0]->tile_pool() : nullptr; }
  // Whether the nonempty [lo, hi] ranges are increasing and disjoint.
  static bool RangesAreDisjoint(std::span<const std::pair<int32_t, int32_t>> ranges);

  Communicator& comm_;
  bool bf16_exchange_;
  int S_;
  int W_;
  bool world_size_independent_;  // training.world_size_independent
  int activation_width_ = 0;
  std::vector<int> feature_offsets_;
  std::vector<int> feature_dims_;
  std::vector<int> table_dims_;
  std::vector<std::unique_ptr<device::SparseCore>> scs_;
  std::unique_ptr<HotRowReplicas> hot_;  // null: no hot rows
  // Scratch for per-SC views (no per-step allocation after the first steps).
  std::vector<std::span<const layout::CooEntry>> segs_;
  std::vector<std::vector<std::span<const layout::CooEntry>>> sc_segs_;  // [S_]: Forward's
  std::vector<float*> outs_;
  std::vector<const float*> ins_;
  std::vector<std::span<const layout::CooEntry>> group_segs_;
  std::vector<const float*> group_ins_;
  std::vector<std::pair<int32_t, int32_t>> source_rows_;  // ForEachGroupBySource's [lo, hi] rows
  std::vector<char> group_done_;
  std::vector<size_t> group_members_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_STEP_SPARSECORE_STAGE_H_
