// Partition limits of the SparseCores (reference section 7): per table, the
// most ids (after per-sample dedup) and the most distinct ids that one source
// SparseCore may send to one destination SparseCore in one step. Resolved once
// from the config (and its limits file) into an immutable PartitionLimits.
// Thread-safe (immutable after construction).
#ifndef LEMRT_LAYOUT_LIMITS_H_
#define LEMRT_LAYOUT_LIMITS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"

namespace lemrt::layout {

// Limits of one table's partitions. kUnlimited when nothing sets them.
struct TableLimit {
  static constexpr int32_t kUnlimited = std::numeric_limits<int32_t>::max();
  int32_t max_ids = kUnlimited;         // ids, duplicates across samples included
  int32_t max_unique_ids = kUnlimited;  // distinct rows
  bool limited() const { return max_ids != kUnlimited || max_unique_ids != kUnlimited; }
};

struct PartitionLimits {
  std::vector<TableLimit> tables;  // by table index in the config
  std::vector<std::string> table_names;
  bool any_limited() const;
};

// Resolves every table's limits. Precedence per table and per kind: the
// limits file's entry > sparse_core.max_ids_per_table / max_unique_ids_per_table
// divided by the total number of SparseCores N (rounded up: a table-wide
// budget spread over its N partitions) > sparse_core.max_ids_per_partition /
// max_unique_ids_per_partition > unlimited. Errors: NotFound (unreadable
// limits file), InvalidArgument (unparsable file naming file:line, an entry
// naming an unknown table, a limit <= 0).
absl::StatusOr<PartitionLimits> ResolveLimits(const config::RunConfig& config);

// Parses a LimitsFile in text format; `source` names it in errors.
absl::StatusOr<config::LimitsFile> ParseLimitsFile(const std::string& text,
                                                   const std::string& source);

// Writes `limits` as a text-format LimitsFile to `path` (Internal on failure).
absl::Status WriteLimitsFile(const config::LimitsFile& limits, const std::string& path);

}  // namespace lemrt::layout

#endif  // LEMRT_LAYOUT_LIMITS_H_
