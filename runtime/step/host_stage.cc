#include "runtime/step/host_stage.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "layout/row_placement.h"
#include "proto/config_loader.h"

namespace lemrt::runtime {
namespace {

host::MinibatchOptions MakeMinibatchOptions(const config::RunConfig& config, int chip,
                                            layout::PartitionLimits limits) {
  const layout::RowPlacement placement = layout::RowPlacement::FromConfig(config);
  host::MinibatchOptions o;
  o.chip = chip;
  o.local_sparse_cores = placement.sparse_cores_per_chip();
  o.total_sparse_cores = placement.total_sparse_cores();
  o.minibatching = !config.sparse_core().disable_minibatching();
  o.allow_id_dropping = config.sparse_core().allow_id_dropping();
  o.boundaries_per_source = config.training().world_size_independent();
  // Partitions, limits and minibatches are per stacked table (layout/stacking.h).
  o.stacking = placement.stacking().tables();
  o.limits = layout::StackLimits(limits, placement.stacking());
  return o;
}

// Logs of dropped ids: the first few steps, then every 100th.
constexpr int64_t kDropLogsInFull = 5;

}  // namespace

HostStage::HostStage(const config::RunConfig& config, Communicator& comm, host::DataSource& data,
                     layout::PartitionLimits limits, host::HotRowSet hot_rows)
    : comm_(comm),
      data_(data),
      num_tables_(config.tables_size()),
      limits_(limits),
      limited_(limits.any_limited()),
      coo_options_(host::MakeCooOptions(config)),
      shuffler_(host::IdShuffler::FromConfig(config)),
      hot_rows_(std::move(hot_rows)),
      minibatch_options_(MakeMinibatchOptions(config, comm.rank(), std::move(limits))),
      dropped_per_table_(config.tables_size(), 0) {
  // The split's partition counts come from the builder's pass over the ids
  // (which would count the hot rows' ids, taken out after it).
  coo_options_.count_partitions = limited_ && hot_rows_.empty();
  inline_work_ = NewWork();
  // One entry per training step up to kListedSteps: reserved, so the step
  // loop never allocates (tests/steady_state_alloc_mpi_test.cc); 256 KiB at
  // most, whatever training.steps.
  minibatches_per_step_.reserve(
      static_cast<size_t>(std::clamp<int64_t>(config.training().steps(), 0, kListedSteps)));
  sample_minibatches_per_step_.reserve(minibatches_per_step_.capacity());
  boundary_flags_.resize(host::MinibatchSplitter::kBuckets);
  dropped_scratch_.resize(dropped_per_table_.size());
}

std::unique_ptr<HostWork> HostStage::NewWork() const {
  return std::make_unique<HostWork>(coo_options_, minibatch_options_);
}

void HostStage::ReadLocal(bool train, int64_t index, HostWork* work) {
  work->begin = std::chrono::steady_clock::now();
  work->train = train;
  work->index = index;
  work->boundaries = 0;
  std::lock_guard<std::mutex> lock(data_mu_);
  work->status = train ? data_.TrainBatch(index, &work->batch) : data_.EvalBatch(index, &work->batch);
}

void HostStage::BuildLocal(HostWork* work) const {
  absl::Status& st = work->status;
  if (st.ok()) shuffler_.Apply(&work->batch);
  if (st.ok()) st = work->builder.Build(work->batch, &work->coo);
  if (st.ok()) host::ExtractHotEntries(hot_rows_, &work->coo, &work->hot);
  if (st.ok() && limited_) work->boundaries = work->splitter.PlanLocal(work->coo);
  if (st.ok() && work->train) {
    layout::CountSegmentTables(work->coo, num_tables_, &work->partition_counts);
  }
  if (!st.ok()) {
    st = absl::Status(st.code(), absl::StrFormat("%s %d: %s", work->train ? "step" : "eval chunk",
                                                 work->index, st.message()));
  }
  work->end = std::chrono::steady_clock::now();
}

absl::Status HostStage::PrepareTrain(int64_t step, host::Batch* batch, layout::PartitionedCoo* coo,
                                     std::vector<layout::PartitionedCoo>* minibatches,
                                     std::vector<host::HotEntry>* hot) {
  return Prepare(/*train=*/true, step, batch, coo, minibatches, hot);
}

absl::Status HostStage::Prepare(bool train, int64_t index, host::Batch* batch,
                                layout::PartitionedCoo* coo,
                                std::vector<layout::PartitionedCoo>* minibatches,
                                std::vector<host::HotEntry>* hot) {
  ReadLocal(train, index, inline_work_.get());
  BuildLocal(inline_work_.get());
  // Before Finish, which moves the entries into the minibatches.
  if (coo != nullptr) *coo = inline_work_->coo;
  return Finish(*inline_work_, batch, minibatches, hot);
}

void HostStage::CountTrainStep(const HostWork& work,
                               const std::vector<layout::PartitionedCoo>& minibatches,
                               int sample_minibatches) {
  const auto count = static_cast<int32_t>(minibatches.size());
  if (train_steps_ < kListedSteps) {
    minibatches_per_step_.push_back(count);
    sample_minibatches_per_step_.push_back(sample_minibatches);
  }
  ++train_steps_;
  minibatches_sum_ += count;
  max_minibatches_ = std::max(max_minibatches_, count);
  if (sample_minibatches > 0) {
    ++sample_split_steps_;
    for (int64_t ranges : sample_ranges_) {
      max_sample_ranges_ = std::max(max_sample_ranges_, static_cast<int32_t>(ranges));
    }
  }
  int64_t dropped = 0;
  for (size_t t = 0; t < dropped_scratch_.size(); ++t) {
    dropped_per_table_[t] += dropped_scratch_[t];
    dropped += dropped_scratch_[t];
  }
  if (dropped > 0 && (drop_logs_ < kDropLogsInFull || drop_logs_ % 100 == 0)) {
    LOG(WARNING) << absl::StrFormat(
        "step %d: rank %d dropped %d ids over the partition limits (allow_id_dropping; "
        "this warning is rate-limited)",
        work.index, comm_.rank(), dropped);
  }
  if (dropped > 0) ++drop_logs_;
}

absl::Status HostStage::Summarise(summary::PreprocessStats* out) {
  std::vector<int64_t> dropped = dropped_per_table_;
  dropped.push_back(hot_ids_);
  absl::Status st = comm_.AllReduceSum(std::span<int64_t>(dropped));
  if (!st.ok()) return st;
  out->set_hot_rows(hot_rows_.slots());
  out->set_hot_ids(static_cast<double>(dropped.back()));
  dropped.pop_back();
  out->clear_minibatches_per_step();
  for (int32_t m : minibatches_per_step_) out->add_minibatches_per_step(m);
  out->set_max_minibatches(max_minibatches_);
  out->set_mean_minibatches(
      train_steps_ == 0 ? 0 : static_cast<double>(minibatches_sum_) / train_steps_);
  double total = 0;
  for (size_t t = 0; t < dropped.size(); ++t) {
    (*out->mutable_ids_dropped_per_table())[limits_.table_names[t]] = static_cast<double>(dropped[t]);
    total += static_cast<double>(dropped[t]);
  }
  out->set_ids_dropped(total);
  out->clear_sample_minibatches_per_step();
  for (int32_t m : sample_minibatches_per_step_) out->add_sample_minibatches_per_step(m);
  out->set_sample_split_steps(sample_split_steps_);
  out->set_max_sample_ranges(max_sample_ranges_);
  return absl::OkStatus();
}

absl::StatusOr<int> HostStage::SplitSamples(HostWork& work,
                                            std::vector<layout::PartitionedCoo>* minibatches) {
  const int vocabulary_minibatches = static_cast<int>(minibatches->size());
  const int64_t per_sc = work.batch.num_samples / minibatch_options_.local_sparse_cores;
  sample_ranges_.assign(vocabulary_minibatches, 1);
  if (work.splitter.over()) {
    for (int m = 0; m < vocabulary_minibatches; ++m) {
      sample_ranges_[m] = work.sample_splitter.Plan((*minibatches)[m], per_sc);
    }
  }
  // The most ranges any chip needs: every chip runs the same minibatches.
  LEMRT_RETURN_IF_ERROR(comm_.AllReduceMax(std::span<int64_t>(sample_ranges_)));
  int64_t total = 0;
  for (int64_t r : sample_ranges_) total += r;
  if (total == vocabulary_minibatches) return 0;
  if (static_cast<int64_t>(sample_parts_.size()) < total) sample_parts_.resize(total);
  int64_t at = 0;
  for (int m = 0; m < vocabulary_minibatches; ++m) {
    layout::PartitionedCoo& mb = (*minibatches)[m];
    const int ranges = static_cast<int>(sample_ranges_[m]);
    if (ranges == 1) {
      std::swap(sample_parts_[at++], mb);
      continue;
    }
    work.sample_splitter.Plan(mb, per_sc);
    work.sample_splitter.Split(mb, ranges, sample_parts_.data() + at);
    at += ranges;
  }
  // Swapped, so the buffers of both lists are kept for later steps.
  if (static_cast<int64_t>(minibatches->size()) < total) minibatches->resize(total);
  for (int64_t i = 0; i < total; ++i) std::swap((*minibatches)[i], sample_parts_[i]);
  return static_cast<int>(total - vocabulary_minibatches);
}

absl::Status HostStage::PrepareEval(int64_t chunk, host::Batch* batch, layout::PartitionedCoo* coo,
                                    std::vector<layout::PartitionedCoo>* minibatches,
                                    std::vector<host::HotEntry>* hot) {
  return Prepare(/*train=*/false, chunk, batch, coo, minibatches, hot);
}

absl::Status HostStage::Finish(HostWork& work, host::Batch* batch,
                               std::vector<layout::PartitionedCoo>* minibatches,
                               std::vector<host::HotEntry>* hot) {
  const char* what = work.train ? "step" : "eval chunk";
  CHECK(hot != nullptr || hot_rows_.empty()) << "HostStage::Finish: hot rows need a list for their entries";
  if (work.train && work.status.ok()) hot_ids_ += static_cast<int64_t>(work.hot.size());
  if (hot != nullptr) std::swap(*hot, work.hot);
  absl::Status st = AgreeOnStatus(comm_, work.status);
  if (!st.ok()) return st;
  uint64_t boundaries = work.boundaries;
  if (limited_) {
    // OR of every chip's boundaries: a finer split still fits everywhere.
    for (int b = 0; b < host::MinibatchSplitter::kBuckets; ++b) {
      boundary_flags_[b] = (boundaries >> b) & 1;
    }
    st = comm_.AllReduceMax(std::span<int64_t>(boundary_flags_));
    if (!st.ok()) return st;
    boundaries = 0;
    for (int b = 0; b < host::MinibatchSplitter::kBuckets; ++b) {
      if (boundary_flags_[b] != 0) boundaries |= uint64_t{1} << b;
    }
  }
  std::fill(dropped_scratch_.begin(), dropped_scratch_.end(), 0);
  int sample_minibatches = 0;
  if (!limited_) {
    // No limits: the whole step is one minibatch (its buffers swapped in).
    work.splitter.SplitVocabulary(&work.coo, /*boundaries=*/0, minibatches);
  } else {
    work.splitter.SplitVocabulary(&work.coo, boundaries, minibatches);
    // Sample-dimension minibatching comes with minibatching.
    const bool sample_split = minibatch_options_.minibatching;
    if (sample_split) {
      absl::StatusOr<int> added = SplitSamples(work, minibatches);
      if (!added.ok()) return added.status();
      sample_minibatches = *added;
    }
    st = work.splitter.Enforce(minibatches, &dropped_scratch_, sample_split);
    if (!st.ok()) {
      st = absl::Status(st.code(), absl::StrFormat("%s %d: %s", what, work.index, st.message()));
    }
    st = AgreeOnStatus(comm_, st);
    if (!st.ok()) return st;
  }
  if (batch != nullptr && batch != &work.batch) *batch = work.batch;
  if (work.train) CountTrainStep(work, *minibatches, sample_minibatches);
  return absl::OkStatus();
}

}  // namespace lemrt::runtime
