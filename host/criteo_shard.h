// What the Criteo TSV reader and the binary Criteo reader share: the rank's
// share of a file (a contiguous range of bytes or records), the features'
// category columns resolved against the config, and the copy of one parsed
// line into a batch. Stateless functions; thread-safe.
#ifndef LEMRT_HOST_CRITEO_SHARD_H_
#define LEMRT_HOST_CRITEO_SHARD_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "host/batch.h"
#include "proto/config.pb.h"

namespace lemrt::host {

struct CriteoLine;  // host/criteo_reader.h

// Rank `rank` of `world_size`'s share of `n` units (bytes or records):
// [begin, end) with begin = floor(rank n / W) computed without overflowing
// (n / W * r + n % W * r / W), so the shares of all ranks tile [0, n) and
// differ in size by at most one. Precondition: 0 <= rank < world_size, n >= 0.
struct ShardRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};
ShardRange RankShare(int64_t n, int rank, int world_size);

// One config feature as the Criteo readers see it.
struct CriteoFeature {
  int column = 0;     // Category column, 0..25.
  int table = 0;      // Index into config.tables().
  int64_t vocab = 0;  // Rows of that table.
};

// The config's features in order: feature f reads column input_column
// (default f) into its table. InvalidArgument naming the feature for a column
// outside 0..25 ("`unit`s have columns 0..25") or a table not in the config.
absl::StatusOr<std::vector<CriteoFeature>> ResolveCriteoFeatures(const config::RunConfig& config,
                                                                 std::string_view unit);

// Writes `line` as sample `row` of `batch` (already Resize'd to
// `num_dense` dense features and features.size() features; rows are filled
// in order): label, dense feature k < 13 = integer k and 0 past 13, and per
// feature the row of its table its category maps to (CriteoCategoryId), or
// no id when the category is missing.
void AppendCriteoSample(const CriteoLine& line, std::span<const CriteoFeature> features,
                        int num_dense, int64_t row, Batch* batch);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_CRITEO_SHARD_H_
