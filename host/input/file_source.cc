#include "host/input/file_source.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "host/input/dense_stats.h"
#include "glog/logging.h"

namespace lemrt::host {
namespace {

constexpr int64_t kProbeRecords = 256;

}  // namespace

FileSource::FileSource(const config::RunConfig& config, int rank, int world_size,
                       std::shared_ptr<const Schema> schema, SplitReader train, SplitReader eval,
                       bool strict)
    : rank_(rank),
      local_batch_(config.training().global_batch() / world_size),
      global_batch_(config.training().global_batch()),
      strict_(strict),
      filler_(std::move(schema)),
      train_(std::move(train)),
      eval_(std::move(eval)),
      schedule_(train_.records->num_records(), config.training().global_batch(),
                config.training().drop_last_partial_batch()),
      order_(train_.records->num_records(),
             config.data().has_shuffle_window() || !config.data().has_binary()
                 ? config.data().shuffle_window()
                 : config.data().binary().shuffle_window(),
             config.training().seed()) {}

absl::StatusOr<std::unique_ptr<FileSource>> FileSource::Create(
    const config::RunConfig& config, int rank, int world_size, std::shared_ptr<const Schema> schema,
    SplitReader train, SplitReader eval, bool strict) {
  CHECK(train.records != nullptr);
  CHECK(rank >= 0 && rank < world_size) << rank << " of " << world_size;
  auto source = std::unique_ptr<FileSource>(new FileSource(
      config, rank, world_size, std::move(schema), std::move(train), std::move(eval), strict));
  LEMRT_RETURN_IF_ERROR(source->CheckHasValidRow(source->train_));
  if (source->eval_.records != nullptr) {
    LEMRT_RETURN_IF_ERROR(source->CheckHasValidRow(source->eval_));
    const int64_t rows = source->eval_.records->num_records();
    const config::TrainingConfig& t = config.training();
    source->eval_rows_ = t.has_eval_samples() ? std::min(rows, t.eval_samples()) : rows;
    if (t.has_eval_samples() && t.eval_samples() > rows && rank == 0) {
      LOG(WARNING) << absl::StrFormat(
          "training.eval_samples %d is more than the %d rows of the eval files %s; each row "
          "is scored once",
          t.eval_samples(), rows, source->eval_.records->Describe());
    }
    source->num_eval_chunks_ = (source->eval_rows_ + source->global_batch_ - 1) /
                               source->global_batch_;
  }
  return source;
}

absl::Status FileSource::CheckHasValidRow(SplitReader& split) {
  const int64_t n = split.records->num_records();
  if (n == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(split.records->Describe(), " has no rows (an empty file?)."));
  }
  Batch probe;
  std::string first_problem;  // "where: why" of the first malformed record
  for (int64_t first = 0; first < n; first += kProbeRecords) {
    scratch_.Clear();
    const int64_t count = std::min(kProbeRecords, n - first);
    LEMRT_RETURN_IF_ERROR(split.records->Read(first, count, &scratch_));
    for (int64_t i = 0; i < count; ++i) {
      filler_.Start(1, &probe);
      absl::Status st = split.records->truncated(first + i)
                            ? absl::InvalidArgumentError("the last line has no newline")
                            : split.parser->Parse(scratch_[i], &sample_);
      if (st.ok()) st = filler_.Append(sample_, 0, &probe, /*count=*/false);
      if (st.ok()) return absl::OkStatus();
      if (strict_) {
        return absl::InvalidArgumentError(
            absl::StrCat(split.records->Where(first + i), ": ", st.message(), "."));
      }
      if (first_problem.empty()) {
        first_problem = absl::StrCat(split.records->Where(first + i), ": ", st.message());
      }
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(split.records->Describe(),
                                                 " has no valid line; the first one fails with ",
                                                 first_problem, "."));
}

absl::Status FileSource::Fill(SplitReader& split, int64_t row, std::string_view record,
                              bool first_visit, int64_t i, Batch* batch) {
  absl::Status st =
      split.records->truncated(row)
          ? absl::InvalidArgumentError(
                "the last line has no newline (is the file truncated? add the newline if the "
                "line is complete)")
          : split.parser->Parse(record, &sample_);
  // The feature counters (OOV rates) describe the training data.
  if (st.ok()) st = filler_.Append(sample_, i, batch, first_visit && &split == &train_);
  if (st.ok()) return absl::OkStatus();
  if (strict_) {
    return absl::InvalidArgumentError(
        absl::StrCat(split.records->Where(row), ": ", st.message(), "."));
  }
  filler_.AppendEmpty(i, batch);
  if (!first_visit) return absl::OkStatus();
  ++skipped_lines_;
  if (skipped_lines_ <= 10 || skipped_lines_ % 1000 == 0) {
    LOG(WARNING) << split.records->Where(row) << ": " << st.message() << "; skipping the line ("
                 << skipped_lines_ << " skipped so far on this rank).";
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string_view> FileSource::WindowRecord(int64_t row) {
  const int64_t window = order_.WindowOf(row);
  for (Window& w : windows_) {
    if (w.index == window) return w.records[row - window * order_.window()];
  }
  Window& w = windows_[next_window_slot_];
  next_window_slot_ = 1 - next_window_slot_;
  w.index = -1;
  w.records.Clear();
  const int64_t first = window * order_.window();
  const int64_t count = std::min(order_.window(), train_.records->num_records() - first);
  LEMRT_RETURN_IF_ERROR(train_.records->Read(first, count, &w.records));
  w.index = window;
  return w.records[row - first];
}

absl::Status FileSource::TrainBatch(int64_t step, Batch* batch) {
  const EpochSchedule::Step s = schedule_.At(step);
  filler_.Start(local_batch_, batch);
  batch->global_samples = s.count;
  const int64_t lo = s.first + rank_ * local_batch_;
  const int64_t n = std::clamp<int64_t>(s.first + s.count - lo, 0, local_batch_);
  const bool first_visit = s.epoch == 0;
  if (order_.window() == 0) {
    scratch_.Clear();
    if (n > 0) LEMRT_RETURN_IF_ERROR(train_.records->Read(lo, n, &scratch_));
    for (int64_t i = 0; i < n; ++i) {
      LEMRT_RETURN_IF_ERROR(Fill(train_, lo + i, scratch_[i], first_visit, i, batch));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = order_.Row(s.epoch, lo + i);
      LEMRT_ASSIGN_OR_RETURN(const std::string_view record, WindowRecord(row));
      LEMRT_RETURN_IF_ERROR(Fill(train_, row, record, first_visit, i, batch));
    }
  }
  for (int64_t i = n; i < local_batch_; ++i) filler_.AppendEmpty(i, batch);
  if (rank_ == 0 && !scale_checked_) {
    scale_checked_ = true;
    if (const std::string w = DenseScaleWarning(filler_.schema(), *batch); !w.empty()) {
      LOG(WARNING) << w;
    }
  }
  return absl::OkStatus();
}

absl::Status FileSource::EvalBatch(int64_t chunk, Batch* batch) {
  if (eval_.records == nullptr) {
    return absl::FailedPreconditionError("EvalBatch was called but no eval files are set.");
  }
  CHECK(chunk >= 0 && chunk < num_eval_chunks_) << chunk;
  filler_.Start(local_batch_, batch);
  batch->global_samples = std::min(global_batch_, eval_rows_ - chunk * global_batch_);
  const int64_t lo = chunk * global_batch_ + rank_ * local_batch_;
  const int64_t n = std::clamp<int64_t>(eval_rows_ - lo, 0, local_batch_);
  const bool first_visit = !eval_counted_;
  scratch_.Clear();
  if (n > 0) LEMRT_RETURN_IF_ERROR(eval_.records->Read(lo, n, &scratch_));
  for (int64_t i = 0; i < n; ++i) {
    LEMRT_RETURN_IF_ERROR(Fill(eval_, lo + i, scratch_[i], first_visit, i, batch));
  }
  for (int64_t i = n; i < local_batch_; ++i) filler_.AppendEmpty(i, batch);
  if (chunk + 1 == num_eval_chunks_) eval_counted_ = true;
  return absl::OkStatus();
}

}  // namespace lemrt::host
