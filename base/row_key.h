// The 64-bit key that names one embedding row: a table (or stacked table)
// and one of its rows, packed so that keys order by table, then row. The
// SparseCore's id dedup sorts and numbers these keys
// (device/sparsecore/sparse_core.cc, key_sort.h), the host's partition
// statistics sort them (host/preprocess/minibatch.cc, radix_sort.h), and the unique ids
// of a step are kept as keys (SparseCoreStepState::unique_keys).
//
//    63             48 47                                          0
//   +-----------------+---------------------------------------------+
//   | table (16 bits) | row (48 bits): the table's global row        |
//   +-----------------+---------------------------------------------+
//
// So a key holds tables [0, 2^16) and rows [0, 2^48). Config validation
// rejects a table with more than kMaxKeyRows rows and more than kMaxKeyTables
// tables (proto/table_checks.cc); the memory plan rejects a stacked table
// over kMaxKeyRows rows (device/plan/memory_plan.h). Stateless; thread-safe.
#ifndef LEMRT_BASE_ROW_KEY_H_
#define LEMRT_BASE_ROW_KEY_H_

#include <cstdint>

namespace lemrt::base {

inline constexpr int kKeyRowBits = 48;
inline constexpr int64_t kMaxKeyRows = int64_t{1} << kKeyRowBits;           // rows per table
inline constexpr int64_t kMaxKeyTables = int64_t{1} << (64 - kKeyRowBits);  // tables
inline constexpr uint64_t kKeyRowMask = (uint64_t{1} << kKeyRowBits) - 1;

// Precondition: 0 <= table < kMaxKeyTables, 0 <= row < kMaxKeyRows.
constexpr uint64_t RowKey(int table, int64_t row) {
  return (static_cast<uint64_t>(table) << kKeyRowBits) | static_cast<uint64_t>(row);
}
constexpr int RowKeyTable(uint64_t key) { return static_cast<int>(key >> kKeyRowBits); }
constexpr int64_t RowKeyRow(uint64_t key) { return static_cast<int64_t>(key & kKeyRowMask); }

}  // namespace lemrt::base

#endif  // LEMRT_BASE_ROW_KEY_H_
