// The host stage of a step on one chip: read the local batch, shuffle the
// ids of tables with id shuffling (host/preprocess/batch_id_shuffle.h), build the
// partitioned COO (host/preprocess/coo.h), check it against the partition limits and
// split it into vocabulary-dimension minibatches agreed by all chips
// (host/preprocess/minibatch.h), split a minibatch still over its limits along the
// sample dimension (host/preprocess/sample_split.h), dropping ids when allowed. One per rank. A step's work
// has two halves: the local half (ReadLocal + BuildLocal into a HostWork:
// data read, COO, per-sample dedup, partition, partition stats) has no
// collectives and may run on host worker threads (runtime/step/host_prefetcher.h);
// the collective half (Finish: agreement and minibatch split) runs on one
// thread in step order. ReadLocal and BuildLocal are thread-safe (ReadLocal
// serialises the data source); everything else is thread-compatible.
//
// Collectives per call: AgreeOnStatus (one all-reduce, plus a broadcast on
// error), and when any table has limits one all-reduce max of 64 int64
// boundary flags (512 B per rank), with minibatching one all-reduce max of
// the sample ranges per vocabulary-dimension minibatch (8 B each), then
// AgreeOnStatus again for the split.
#ifndef LEMRT_RUNTIME_STEP_HOST_STAGE_H_
#define LEMRT_RUNTIME_STEP_HOST_STAGE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "host/batch.h"
#include "host/preprocess/coo.h"
#include "host/input/data_source.h"
#include "host/preprocess/hot_rows.h"
#include "host/preprocess/batch_id_shuffle.h"
#include "host/preprocess/minibatch.h"
#include "host/preprocess/sample_split.h"
#include "layout/limits.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

// One step's (or eval chunk's) local preprocessing: its batch, whole COO
// (before the split and any dropping) and this chip's minibatch boundary
// bits, with the builder and splitter scratch it was made with (the splitter
// keeps the step's partition counts for the split). Reused step after step,
// so the steady state does not allocate. Thread-compatible: one thread fills
// it, then one thread finishes it.
struct HostWork {
  HostWork(host::CooOptions coo_options, const host::MinibatchOptions& minibatch_options)
      : builder(std::move(coo_options)),
        splitter(minibatch_options),
        sample_splitter(minibatch_options) {}

  bool train = true;
  int64_t index = -1;  // training step or eval chunk
  host::Batch batch;
  layout::PartitionedCoo coo;
  // The entries of hot rows (host/preprocess/hot_rows.h), taken out of `coo`.
  std::vector<host::HotEntry> hot;
  host::CooBuilder builder;
  host::MinibatchSplitter splitter;
  host::SampleSplitter sample_splitter;
  uint64_t boundaries = 0;  // this chip's boundary bits (BuildLocal)
  // Training: coo's entries per segment and table (layout::CountSegmentTables,
  // BuildLocal), for RunRecorder::AddPartitionCounts.
  std::vector<int64_t> partition_counts;
  absl::Status status;      // of the local half, prefixed "step N: "
  // Wall time of the local half (ReadLocal begin .. BuildLocal end).
  std::chrono::steady_clock::time_point begin, end;
};

class HostStage {
 public:
  // `config` (validated), `comm` and `data` must outlive the stage.
  // `hot_rows`: the replicated rows (runtime/hot_rows/hot_row_choice.h), whose
  // entries BuildLocal takes out of the COO (empty: none).
  HostStage(const config::RunConfig& config, Communicator& comm, host::DataSource& data,
            layout::PartitionLimits limits, host::HotRowSet hot_rows = {});

  // Collective: prepares training step `step`: fills `batch`, the step's
  // whole COO `coo` (before the split and any dropping) and the step's vocabulary-dimension `minibatches` (1 when the step fits
  // its limits); all buffers are reused. Errors on any rank
  // (bad data, an id out of range, a partition over its limits with dropping
  // off) are returned on every rank, prefixed with the failing rank and
  // "step N: ".
  // With hot rows, `hot` (not null) receives the step's hot entries.
  absl::Status PrepareTrain(int64_t step, host::Batch* batch, layout::PartitionedCoo* coo,
                            std::vector<layout::PartitionedCoo>* minibatches,
                            std::vector<host::HotEntry>* hot = nullptr);

  // Collective: as PrepareTrain for eval chunk `chunk`; not counted in stats.
  // `coo` may be null (the whole COO is then not copied out).
  absl::Status PrepareEval(int64_t chunk, host::Batch* batch, layout::PartitionedCoo* coo,
                           std::vector<layout::PartitionedCoo>* minibatches,
                           std::vector<host::HotEntry>* hot = nullptr);

  // A work item sized for this stage's options (allocates; make them at
  // start-up).
  std::unique_ptr<HostWork> NewWork() const;

  // Local half, part 1 (thread-safe; calls on the data source are
  // serialised): reads training step / eval chunk `index` into `work` and
  // starts its clock. Training steps must be read in increasing order.
  void ReadLocal(bool train, int64_t index, HostWork* work);
  // Local half, part 2 (thread-safe for distinct `work`s; no collectives):
  // when the read succeeded, builds the COO and plans this chip's split.
  // Errors land in work->status, prefixed with "step N: " / "eval chunk N: ".
  void BuildLocal(HostWork* work) const;
  // Collective half, on the collective thread in step order: agrees on
  // work.status over all ranks, agrees on the split, fills `minibatches`
  // (buffers reused) and, when `batch` is not null, copies work.batch into
  // it; counts training statistics. Errors as PrepareTrain. A step of one
  // minibatch is moved, not copied: afterwards work.coo keeps its counts
  // (ids_total, ids_after_dedup, table_partition_counts) but not its entries
  // and segment offsets, so read those before Finish. With hot rows the
  // work's hot entries are swapped into `*hot` (which must not be null).
  absl::Status Finish(HostWork& work, host::Batch* batch,
                      std::vector<layout::PartitionedCoo>* minibatches,
                      std::vector<host::HotEntry>* hot = nullptr);

  const layout::PartitionLimits& limits() const { return limits_; }
  // The splitter's options: per-stack limits and the stacking of each table.
  const host::MinibatchOptions& minibatch_options() const { return minibatch_options_; }

  // Collective (one all-reduce of the dropped counts): the summary's
  // minibatch and dropping statistics over the training steps so far.
  absl::Status Summarise(summary::PreprocessStats* out);

  // Minibatches of the first kListedSteps training steps (the summary's
  // list); the mean and maximum cover every step.
  static constexpr int64_t kListedSteps = 65536;
  const std::vector<int32_t>& minibatches_per_step() const { return minibatches_per_step_; }
  // Dropped ids per table (training steps only).
  const std::vector<int64_t>& dropped_per_table() const { return dropped_per_table_; }

 private:
  absl::Status Prepare(bool train, int64_t index, host::Batch* batch, layout::PartitionedCoo* coo,
                       std::vector<layout::PartitionedCoo>* minibatches,
                       std::vector<host::HotEntry>* hot);
  // Collective (one all-reduce max): splits the vocabulary-dimension
  // minibatches still over their limits on some chip along the sample
  // dimension, the agreed number of ranges each; returns the minibatches
  // it added.
  absl::StatusOr<int> SplitSamples(HostWork& work,
                                   std::vector<layout::PartitionedCoo>* minibatches);
  // Adds a finished training step to the statistics (and logs its drops).
  void CountTrainStep(const HostWork& work, const std::vector<layout::PartitionedCoo>& minibatches,
                      int sample_minibatches);

  Communicator& comm_;
  host::DataSource& data_;
  const int num_tables_;  // config.tables_size()
  std::mutex data_mu_;  // serialises data_ (ReadLocal from several threads)
  layout::PartitionLimits limits_;
  bool limited_;
  host::CooOptions coo_options_;
  host::IdShuffler shuffler_;  // id shuffling, before the COO builder
  host::HotRowSet hot_rows_;   // after it
  int64_t hot_ids_ = 0;        // hot entries of the training steps so far
  host::MinibatchOptions minibatch_options_;
  std::unique_ptr<HostWork> inline_work_;  // PrepareTrain / PrepareEval
  std::vector<int64_t> boundary_flags_;
  std::vector<int64_t> dropped_scratch_;
  std::vector<int64_t> dropped_per_table_;
  std::vector<int32_t> minibatches_per_step_;  // the first kListedSteps
  int64_t train_steps_ = 0;
  int64_t minibatches_sum_ = 0;
  int32_t max_minibatches_ = 0;
  std::vector<int32_t> sample_minibatches_per_step_;  // the first kListedSteps
  int64_t sample_split_steps_ = 0;
  int32_t max_sample_ranges_ = 1;
  std::vector<int64_t> sample_ranges_;               // per vocabulary minibatch
  std::vector<layout::PartitionedCoo> sample_parts_;  // SplitSamples' output buffers
  int64_t drop_logs_ = 0;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_STEP_HOST_STAGE_H_
