#include "host/criteo_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "glog/logging.h"

namespace lemrt::host {
namespace {

constexpr size_t kReadBlockBytes = size_t{4} << 20;
constexpr int kMaxHexDigits = 8;

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

// A field for an error message: escaped and cut to a readable length.
std::string Quote(std::string_view field) {
  // Debian's absl::string_view is its own type, not std::string_view.
  constexpr size_t kMaxShown = 24;
  const size_t shown = std::min(field.size(), kMaxShown);
  std::string text = absl::CHexEscape(absl::string_view(field.data(), shown));
  if (shown < field.size()) text += "...";
  return text;
}

absl::Status BadField(int field_index, std::string_view field,
                      std::string_view expected) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "field %d '%s' is not %s", field_index + 1, Quote(field), expected));
}

}  // namespace

absl::Status ParseCriteoLine(std::string_view line, CriteoLine* out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  *out = CriteoLine();
  size_t pos = 0;
  for (int field_index = 0;; ++field_index) {
    if (field_index == CriteoLine::kNumFields) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the line has more than %d fields", CriteoLine::kNumFields));
    }
    const size_t tab = line.find('\t', pos);
    const size_t end = tab == std::string_view::npos ? line.size() : tab;
    const std::string_view field = line.substr(pos, end - pos);
    const char* first = field.data();
    const char* last = first + field.size();
    if (field_index == 0) {
      if (field != "0" && field != "1") {
        return BadField(field_index, field, "a label (0 or 1)");
      }
      out->label = field[0] == '1' ? 1.0f : 0.0f;
    } else if (field_index <= CriteoLine::kNumIntegers) {
      if (!field.empty()) {
        int64_t value = 0;
        const auto [ptr, ec] = std::from_chars(first, last, value);
        if (ec != std::errc() || ptr != last) {
          return BadField(field_index, field, "an integer");
        }
        out->dense[field_index - 1] = static_cast<float>(
            std::log1p(static_cast<double>(std::max<int64_t>(value, 0))));
      }
    } else if (!field.empty()) {
      const int column = field_index - 1 - CriteoLine::kNumIntegers;
      uint32_t value = 0;
      const auto [ptr, ec] = std::from_chars(first, last, value, 16);
      if (field.size() > kMaxHexDigits || ec != std::errc() || ptr != last) {
        return BadField(field_index, field, "a hex category");
      }
      out->category[column] = value;
      out->category_present |= uint32_t{1} << column;
    }
    if (tab == std::string_view::npos) return absl::OkStatus();
    pos = tab + 1;
  }
}

int64_t CriteoCategoryId(uint32_t value, int table_index, int64_t vocab_size) {
  const uint64_t salt = base::Mix64(static_cast<uint64_t>(table_index) + 1);
  return static_cast<int64_t>(base::Mix64(value ^ salt) %
                              static_cast<uint64_t>(vocab_size));
}

// Buffered reader of the lines that start in one rank's byte range.
class CriteoReader::ShardReader {
 public:
  // Errors: NotFound / PermissionDenied (from errno) or InvalidArgument for
  // a directory, naming `path`; DataLoss when a read fails.
  static absl::StatusOr<std::unique_ptr<ShardReader>> Open(
      const std::string& path, int rank, int world_size) {
    FilePtr file(std::fopen(path.c_str(), "rb"));
    if (file == nullptr) {
      return absl::ErrnoToStatus(errno,
                                 absl::StrCat("cannot open '", path, "'"));
    }
    struct stat st;
    if (fstat(fileno(file.get()), &st) != 0) {
      return absl::ErrnoToStatus(errno,
                                 absl::StrCat("cannot stat '", path, "'"));
    }
    if (S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "' is a directory, not a TSV file."));
    }
    auto reader =
        std::unique_ptr<ShardReader>(new ShardReader(path, std::move(file)));
    const ShardRange share = RankShare(st.st_size, rank, world_size);
    reader->range_begin_ = share.begin;
    reader->range_end_ = share.end;
    reader->shard_name_ = absl::StrFormat(
        "rank %d of %d's share of '%s' (bytes [%d, %d))", rank, world_size,
        path, reader->range_begin_, reader->range_end_);
    if (reader->range_begin_ > 0) {
      // A line belongs to the rank whose range holds its first byte, so the
      // shard starts after the first '\n' at or after range_begin_ - 1.
      LEMRT_RETURN_IF_ERROR(reader->SeekTo(reader->range_begin_ - 1));
      std::string_view partial;
      LEMRT_RETURN_IF_ERROR(reader->Next(&partial).status());
      reader->first_line_ = reader->data_offset_;
    }
    LEMRT_RETURN_IF_ERROR(reader->Rewind());
    return reader;
  }

  // Sets `*line` to the next line of the shard without its '\n' (valid until
  // the next call). Returns false past the shard's last line.
  absl::StatusOr<bool> Next(std::string_view* line) {
    if (data_offset_ >= range_end_) return false;
    size_t scanned = begin_;
    while (true) {
      const void* nl =
          std::memchr(buffer_.data() + scanned, '\n', end_ - scanned);
      if (nl != nullptr || (eof_ && begin_ < end_)) {
        const size_t stop = nl != nullptr
                                ? static_cast<const char*>(nl) - buffer_.data()
                                : end_;
        *line = std::string_view(buffer_.data() + begin_, stop - begin_);
        const size_t next = std::min(stop + 1, end_);
        data_offset_ += static_cast<int64_t>(next - begin_);
        begin_ = next;
        ++line_index_;
        return true;
      }
      if (eof_) return false;
      scanned = end_ - begin_;
      LEMRT_RETURN_IF_ERROR(Refill());
    }
  }

  absl::Status Rewind() { return SeekTo(first_line_); }

  // Index within the shard of the line Next returned last.
  int64_t line_index() const { return line_index_; }
  const std::string& shard_name() const { return shard_name_; }

  // "path:N" for the shard's line `index` (N 1-based within the file). Counts
  // the newlines before the shard on first use.
  std::string Where(int64_t index) {
    if (lines_before_shard_ < 0) lines_before_shard_ = CountLinesBeforeShard();
    if (lines_before_shard_ < 0) {
      return absl::StrFormat("%s (line %d of the %s)", path_, index + 1,
                             shard_name_);
    }
    return absl::StrCat(path_, ":", lines_before_shard_ + index + 1);
  }

 private:
  ShardReader(std::string path, FilePtr file)
      : path_(std::move(path)),
        file_(std::move(file)),
        buffer_(kReadBlockBytes) {}

  absl::Status SeekTo(int64_t offset) {
    if (fseeko(file_.get(), offset, SEEK_SET) != 0) {
      return absl::DataLossError(absl::StrCat("cannot seek in '", path_, "'."));
    }
    begin_ = end_ = 0;
    eof_ = false;
    data_offset_ = offset;
    line_index_ = -1;
    return absl::OkStatus();
  }

  // Moves the unread bytes to the front and reads one more block, growing the
  // buffer when a single line fills it.
  absl::Status Refill() {
    const size_t kept = end_ - begin_;
    std::memmove(buffer_.data(), buffer_.data() + begin_, kept);
    begin_ = 0;
    end_ = kept;
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    const size_t got = std::fread(buffer_.data() + end_, 1,
                                  buffer_.size() - end_, file_.get());
    end_ += got;
    if (got == 0) {
      if (std::ferror(file_.get())) {
        return absl::DataLossError(
            absl::StrCat("read error in '", path_, "'."));
      }
      eof_ = true;
    }
    return absl::OkStatus();
  }

  // Newlines in [0, first_line_), or -1 when the file cannot be re-read.
  int64_t CountLinesBeforeShard() {
    FilePtr file(std::fopen(path_.c_str(), "rb"));
    if (file == nullptr) return -1;
    std::vector<char> block(kReadBlockBytes);
    int64_t remaining = first_line_;
    int64_t lines = 0;
    while (remaining > 0) {
      const size_t want =
          static_cast<size_t>(std::min<int64_t>(remaining, block.size()));
      const size_t got = std::fread(block.data(), 1, want, file.get());
      if (got == 0) return -1;
      lines += std::count(block.data(), block.data() + got, '\n');
      remaining -= static_cast<int64_t>(got);
    }
    return lines;
  }

  const std::string path_;
  FilePtr file_;
  std::string shard_name_;
  int64_t range_begin_ = 0;  // Bytes; lines starting in [begin, end) are ours.
  int64_t range_end_ = 0;
  int64_t first_line_ = 0;  // Byte offset of the shard's first line.
  std::vector<char> buffer_;
  size_t begin_ = 0;  // Unread bytes are buffer_[begin_, end_).
  size_t end_ = 0;
  bool eof_ = false;
  int64_t data_offset_ = 0;  // File offset of buffer_[begin_].
  int64_t line_index_ = -1;
  int64_t lines_before_shard_ = -1;
};

absl::StatusOr<std::unique_ptr<CriteoReader>> CriteoReader::Create(
    const config::RunConfig& config, int rank, int world_size) {
  CHECK_GT(world_size, 0);
  CHECK(rank >= 0 && rank < world_size) << rank << " of " << world_size;
  const config::CriteoSourceConfig& criteo = config.data().criteo();
  if (criteo.train_path().empty()) {
    return absl::InvalidArgumentError("data.criteo.train_path is empty.");
  }
  LEMRT_ASSIGN_OR_RETURN(std::vector<CriteoFeature> features,
                         ResolveCriteoFeatures(config, "lines"));
  auto reader = std::unique_ptr<CriteoReader>(
      new CriteoReader(config, world_size, std::move(features)));
  LEMRT_ASSIGN_OR_RETURN(
      reader->train_, ShardReader::Open(criteo.train_path(), rank, world_size));
  // Fail at startup, not at the first step, when the shard holds no sample.
  CriteoLine probe;
  LEMRT_ASSIGN_OR_RETURN(
      const bool found,
      reader->NextValidLine(*reader->train_, &reader->train_seen_lines_,
                            &probe));
  if (!found) {
    return absl::InvalidArgumentError(
        absl::StrCat(reader->train_->shard_name(), " has no valid line."));
  }
  LEMRT_RETURN_IF_ERROR(reader->train_->Rewind());
  if (!criteo.eval_path().empty()) {
    reader->num_eval_chunks_ = std::max<int64_t>(
        1, config.training().eval_samples() / config.training().global_batch());
    LEMRT_ASSIGN_OR_RETURN(
        std::unique_ptr<ShardReader> eval,
        ShardReader::Open(criteo.eval_path(), rank, world_size));
    LEMRT_RETURN_IF_ERROR(reader->LoadEval(*eval));
  }
  return reader;
}

CriteoReader::CriteoReader(const config::RunConfig& config, int world_size,
                           std::vector<CriteoFeature> features)
    : strict_(config.data().criteo().strict()),
      local_batch_(config.training().global_batch() / world_size),
      num_dense_(config.model().num_dense_features()),
      features_(std::move(features)) {}

CriteoReader::~CriteoReader() = default;

absl::StatusOr<bool> CriteoReader::NextValidLine(ShardReader& reader,
                                                 int64_t* seen_lines,
                                                 CriteoLine* out) {
  std::string_view text;
  while (true) {
    LEMRT_ASSIGN_OR_RETURN(const bool more, reader.Next(&text));
    if (!more) return false;
    const absl::Status parsed = ParseCriteoLine(text, out);
    const int64_t index = reader.line_index();
    const bool first_visit = index >= *seen_lines;
    *seen_lines = std::max(*seen_lines, index + 1);
    if (parsed.ok()) return true;
    if (strict_) {
      return absl::InvalidArgumentError(
          absl::StrCat(reader.Where(index), ": ", parsed.message(), "."));
    }
    if (!first_visit) continue;  // Counted and reported in an earlier epoch.
    ++skipped_lines_;
    if (skipped_lines_ <= 10 || skipped_lines_ % 1000 == 0) {
      LOG(WARNING) << reader.Where(index) << ": " << parsed.message()
                   << "; skipping the line (" << skipped_lines_
                   << " skipped so far on this rank).";
    }
  }
}

absl::Status CriteoReader::NextTrainLine(CriteoLine* out) {
  LEMRT_ASSIGN_OR_RETURN(bool found,
                         NextValidLine(*train_, &train_seen_lines_, out));
  if (!found) {
    if (pass_position_ == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(train_->shard_name(), " has no valid line."));
    }
    epoch_lines_ = pass_position_;
    pass_position_ = 0;
    LEMRT_RETURN_IF_ERROR(train_->Rewind());
    LEMRT_ASSIGN_OR_RETURN(found,
                           NextValidLine(*train_, &train_seen_lines_, out));
    if (!found) {
      return absl::DataLossError(
          absl::StrCat(train_->shard_name(), " changed while being read."));
    }
  }
  ++pass_position_;
  ++train_position_;
  return absl::OkStatus();
}

absl::Status CriteoReader::SeekTrain(int64_t target) {
  if (target == train_position_) return absl::OkStatus();
  CriteoLine scratch;
  if (epoch_lines_ < 0 && target < train_position_) {
    LEMRT_RETURN_IF_ERROR(train_->Rewind());
    train_position_ = pass_position_ = 0;
  }
  // Until the epoch length is known, walk; then jump within one pass.
  while (epoch_lines_ < 0 && train_position_ < target) {
    LEMRT_RETURN_IF_ERROR(NextTrainLine(&scratch));
  }
  if (train_position_ == target) return absl::OkStatus();
  const int64_t in_pass = target % epoch_lines_;
  if (in_pass < pass_position_) {
    LEMRT_RETURN_IF_ERROR(train_->Rewind());
    pass_position_ = 0;
  }
  while (pass_position_ < in_pass) {
    LEMRT_RETURN_IF_ERROR(NextTrainLine(&scratch));
  }
  train_position_ = target;
  return absl::OkStatus();
}

absl::Status CriteoReader::TrainBatch(int64_t step, Batch* batch) {
  CHECK_GE(step, 0);
  LEMRT_RETURN_IF_ERROR(SeekTrain(step * local_batch_));
  batch->Resize(local_batch_, num_dense_, static_cast<int>(features_.size()));
  batch->teacher_prob.clear();
  CriteoLine line;
  for (int64_t i = 0; i < local_batch_; ++i) {
    LEMRT_RETURN_IF_ERROR(NextTrainLine(&line));
    AppendCriteoSample(line, features_, num_dense_, i, batch);
  }
  return absl::OkStatus();
}

absl::Status CriteoReader::LoadEval(ShardReader& reader) {
  const int64_t wanted = num_eval_chunks_ * local_batch_;
  CriteoLine line;
  while (static_cast<int64_t>(eval_lines_.size()) < wanted) {
    LEMRT_ASSIGN_OR_RETURN(const bool found,
                           NextValidLine(reader, &eval_seen_lines_, &line));
    if (!found) break;
    eval_lines_.push_back(line);
  }
  if (eval_lines_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(reader.shard_name(), " has no valid line."));
  }
  return absl::OkStatus();
}

absl::Status CriteoReader::EvalBatch(int64_t chunk, Batch* batch) {
  if (eval_lines_.empty()) {
    return absl::FailedPreconditionError(
        "EvalBatch was called but data.criteo.eval_path is not set.");
  }
  CHECK(chunk >= 0 && chunk < num_eval_chunks_) << chunk;
  batch->Resize(local_batch_, num_dense_, static_cast<int>(features_.size()));
  batch->teacher_prob.clear();
  const int64_t cached = static_cast<int64_t>(eval_lines_.size());
  for (int64_t i = 0; i < local_batch_; ++i) {
    AppendCriteoSample(eval_lines_[(chunk * local_batch_ + i) % cached], features_,
                       num_dense_, i, batch);
  }
  return absl::OkStatus();
}

}  // namespace lemrt::host
