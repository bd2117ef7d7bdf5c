#include "host/binary_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "host/binary_format.h"

namespace lemrt::host {

struct BinaryReader::Mapping {
  std::string path;
  const char* data = nullptr;  // The whole file.
  int64_t bytes = 0;
  int64_t begin = 0;  // This rank's records: [begin, end).
  int64_t end = 0;

  ~Mapping() {
    if (data != nullptr) munmap(const_cast<char*>(data), bytes);
  }
  int64_t size() const { return end - begin; }
  const char* record(int64_t shard_index) const {
    return data + kBinaryHeaderBytes + (begin + shard_index) * kBinaryRecordBytes;
  }

  static absl::StatusOr<std::unique_ptr<Mapping>> Open(const std::string& path, int rank,
                                                       int world_size) {
    auto m = std::make_unique<Mapping>();
    m->path = path;
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open '", path, "'"));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a regular file."));
    }
    m->bytes = st.st_size;
    auto bad = [&](std::string what) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "' is not a lemrt binary Criteo file: ", what,
                       " (convert TSV files with lemrt_convert)."));
    };
    if (m->bytes < kBinaryHeaderBytes) {
      close(fd);
      return bad(absl::StrFormat("it has %d bytes, less than the %d-byte header", m->bytes,
                                 kBinaryHeaderBytes));
    }
    void* data = mmap(nullptr, m->bytes, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (data == MAP_FAILED) return absl::ErrnoToStatus(errno, absl::StrCat("cannot mmap '", path, "'"));
    m->data = static_cast<const char*>(data);
    uint32_t version, record_bytes;
    int64_t records;
    std::memcpy(&version, m->data + 8, 4);
    std::memcpy(&record_bytes, m->data + 12, 4);
    std::memcpy(&records, m->data + 16, 8);
    if (std::memcmp(m->data, kBinaryMagic, 8) != 0) return bad("wrong magic");
    if (version != kBinaryVersion || record_bytes != kBinaryRecordBytes) {
      return bad(absl::StrFormat("version %d with %d-byte records; this build reads version %d "
                                 "with %d-byte records",
                                 version, record_bytes, kBinaryVersion, kBinaryRecordBytes));
    }
    // Compared in records, not bytes: a corrupt count times the record size
    // can overflow (found by tests/fuzz/binary_reader_fuzzer).
    const int64_t body_bytes = m->bytes - kBinaryHeaderBytes;
    if (records < 0 || records != body_bytes / kBinaryRecordBytes ||
        body_bytes % kBinaryRecordBytes != 0) {
      return bad(absl::StrFormat("the header says %d records but the file has %d bytes, room "
                                 "for %d records (truncated?)",
                                 records, m->bytes, body_bytes / kBinaryRecordBytes));
    }
    const ShardRange share = RankShare(records, rank, world_size);
    m->begin = share.begin;
    m->end = share.end;
    if (m->size() == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "'%s' has %d records, none for rank %d of %d.", path, records, rank, world_size));
    }
    // Sequential access within a window; let the kernel read ahead.
    madvise(const_cast<char*>(m->data), m->bytes, MADV_WILLNEED);
    return m;
  }
};

BinaryReader::BinaryReader(const config::RunConfig& config, int rank, int world_size)
    : rank_(rank),
      local_batch_(config.training().global_batch() / world_size),
      num_dense_(config.model().num_dense_features()),
      shuffle_window_(config.data().binary().shuffle_window()),
      seed_(config.training().seed()) {}

BinaryReader::~BinaryReader() = default;

absl::StatusOr<std::unique_ptr<BinaryReader>> BinaryReader::Create(
    const config::RunConfig& config, int rank, int world_size) {
  const config::BinarySourceConfig& bin = config.data().binary();
  if (bin.train_path().empty()) return absl::InvalidArgumentError("data.binary.train_path is empty.");
  auto reader = std::unique_ptr<BinaryReader>(new BinaryReader(config, rank, world_size));
  LEMRT_ASSIGN_OR_RETURN(reader->features_, ResolveCriteoFeatures(config, "records"));
  LEMRT_ASSIGN_OR_RETURN(reader->train_, Mapping::Open(bin.train_path(), rank, world_size));
  if (!bin.eval_path().empty()) {
    reader->num_eval_chunks_ = std::max<int64_t>(
        1, config.training().eval_samples() / config.training().global_batch());
    LEMRT_ASSIGN_OR_RETURN(reader->eval_, Mapping::Open(bin.eval_path(), rank, world_size));
  }
  return reader;
}

int64_t BinaryReader::ShardIndex(int64_t p) const {
  const int64_t n = train_->size();
  const int64_t epoch = p / n;
  const int64_t q = p % n;
  if (shuffle_window_ <= 0) return q;
  const int64_t window = q / shuffle_window_;
  const int64_t first = window * shuffle_window_;
  if (epoch != perm_epoch_ || window != perm_window_) {
    const int64_t len = std::min(shuffle_window_, n - first);
    perm_.resize(len);
    std::iota(perm_.begin(), perm_.end(), int64_t{0});
    base::CounterRng rng(base::HashKeys({seed_, 0xB1A5ULL, static_cast<uint64_t>(rank_),
                                         static_cast<uint64_t>(epoch),
                                         static_cast<uint64_t>(window)}));
    for (int64_t i = len - 1; i > 0; --i) {
      std::swap(perm_[i], perm_[rng.NextBelow(i + 1)]);
    }
    perm_epoch_ = epoch;
    perm_window_ = window;
  }
  return first + perm_[q - first];
}

void BinaryReader::AppendRecord(const char* record, int64_t row, Batch* batch) const {
  CriteoLine line;
  DecodeBinaryRecord(record, &line);
  AppendCriteoSample(line, features_, num_dense_, row, batch);
}

absl::Status BinaryReader::TrainBatch(int64_t step, Batch* batch) {
  CHECK_GE(step, 0);
  batch->Resize(local_batch_, num_dense_, static_cast<int>(features_.size()));
  batch->teacher_prob.clear();
  for (int64_t i = 0; i < local_batch_; ++i) {
    AppendRecord(train_->record(ShardIndex(step * local_batch_ + i)), i, batch);
  }
  return absl::OkStatus();
}

absl::Status BinaryReader::EvalBatch(int64_t chunk, Batch* batch) {
  if (eval_ == nullptr) {
    return absl::FailedPreconditionError(
        "EvalBatch was called but data.binary.eval_path is not set.");
  }
  CHECK(chunk >= 0 && chunk < num_eval_chunks_) << chunk;
  batch->Resize(local_batch_, num_dense_, static_cast<int>(features_.size()));
  batch->teacher_prob.clear();
  for (int64_t i = 0; i < local_batch_; ++i) {
    AppendRecord(eval_->record((chunk * local_batch_ + i) % eval_->size()), i, batch);
  }
  return absl::OkStatus();
}

}  // namespace lemrt::host
