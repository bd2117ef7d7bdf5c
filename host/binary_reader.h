// Reads lemrt's binary Criteo format (binary_format.h) into batches: the
// file is memory-mapped and each rank reads only its contiguous share of the
// records. Thread-compatible: one owner calls TrainBatch / EvalBatch.
//
// Sharding: of n records, rank r of W owns [r n / W, (r + 1) n / W). Step s
// takes the rank's local samples p = s LB .. s LB + LB - 1 (LB = global_batch
// / W): epoch e = p / shard_records, position q = p % shard_records. With
// shuffle_window w > 0 the shard is cut into windows of w records (the last
// may be shorter) and q is mapped through a permutation of its window drawn
// from (seed, rank, epoch, window): a deterministic order that changes every
// epoch, read with locality (a window at a time). w = 0 keeps file order, in
// which case the batches equal CriteoReader's on the source TSV for one rank.
// Eval: the rank's share of eval_path in file order, chunk c = samples
// [c LB, (c + 1) LB) modulo the share (as CriteoReader).
#ifndef LEMRT_HOST_BINARY_READER_H_
#define LEMRT_HOST_BINARY_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "host/batch.h"
#include "host/criteo_reader.h"
#include "host/criteo_shard.h"
#include "host/data_source.h"
#include "proto/config.pb.h"

namespace lemrt::host {

class BinaryReader : public DataSource {
 public:
  // Maps `config.data().binary()`'s files for rank `rank` of `world_size`.
  // `config` must outlive the reader. Errors: NotFound / PermissionDenied
  // naming an unreadable path; InvalidArgument naming a file that is not in
  // the format (magic, version, record size), is truncated, or gives this
  // rank no record; InvalidArgument for a category column outside 0..25.
  static absl::StatusOr<std::unique_ptr<BinaryReader>> Create(const config::RunConfig& config,
                                                              int rank, int world_size);
  ~BinaryReader() override;
  BinaryReader(const BinaryReader&) = delete;
  BinaryReader& operator=(const BinaryReader&) = delete;

  absl::Status TrainBatch(int64_t step, Batch* batch) override;
  // FailedPrecondition without eval_path.
  absl::Status EvalBatch(int64_t chunk, Batch* batch) override;
  int64_t num_eval_chunks() const override { return num_eval_chunks_; }
  bool has_teacher() const override { return false; }

  // Index within the rank's shard of local sample p (see the order above).
  int64_t ShardIndex(int64_t p) const;

 private:
  struct Mapping;  // One mapped file and this rank's record range in it.

  BinaryReader(const config::RunConfig& config, int rank, int world_size);
  void AppendRecord(const char* record, int64_t row, Batch* batch) const;

  const int rank_;
  const int64_t local_batch_;
  const int num_dense_;
  const int64_t shuffle_window_;
  const uint64_t seed_;
  std::vector<CriteoFeature> features_;
  std::unique_ptr<Mapping> train_;
  std::unique_ptr<Mapping> eval_;
  int64_t num_eval_chunks_ = 0;
  // The permutation of the window last used: (epoch, window) -> order.
  mutable int64_t perm_epoch_ = -1;
  mutable int64_t perm_window_ = -1;
  mutable std::vector<int64_t> perm_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_BINARY_READER_H_
