// The hot-row rule (TableConfig.hot_rows, hot_row_ids; docs/preprocessing.md,
// "Hot-row replication"): which rows of a table are replicated on every
// chip. Listed ids win over the count: a table that lists hot_row_ids
// replicates exactly those, and hot_rows (when also set) must equal their
// number (proto/table_checks.cc); a table with only hot_rows = K > 0
// replicates its K most frequent rows, counted before the first step
// (runtime/hot_rows/hot_row_choice.h). Config validation reads the rule
// here; everything above proto/ (the memory plan, the choice, lemrt_limits)
// reads it through layout::RowPlacement::hot_rows (layout/row_placement.h),
// which calls these. Stateless; thread-safe.
#ifndef LEMRT_PROTO_HOT_ROW_RULE_H_
#define LEMRT_PROTO_HOT_ROW_RULE_H_

#include <cstdint>

#include "proto/config.pb.h"

namespace lemrt::config {

// Where a table's hot rows come from.
enum class HotRowSource {
  kNone,     // no hot rows (hot_rows <= 0 and no hot_row_ids)
  kListed,   // hot_row_ids, whatever hot_rows says
  kCounted,  // the hot_rows most frequent rows of the counted steps
};

inline HotRowSource HotRowSourceOf(const TableConfig& table) {
  if (table.hot_row_ids_size() > 0) return HotRowSource::kListed;
  if (table.hot_rows() > 0) return HotRowSource::kCounted;
  return HotRowSource::kNone;
}

// Rows the table replicates: the listed ids' number, else hot_rows (0 for
// none; as given, so a negative hot_rows stays visible to the checks).
inline int64_t HotRowCount(const TableConfig& table) {
  return table.hot_row_ids_size() > 0 ? table.hot_row_ids_size() : table.hot_rows();
}

}  // namespace lemrt::config

#endif  // LEMRT_PROTO_HOT_ROW_RULE_H_
