// The on-disk layout of a lemrt checkpoint and the file primitives that write
// and read it. A checkpoint is one directory:
//
//   DIR/step-00001200/manifest.pbtxt          (proto/checkpoint.proto; last)
//   DIR/step-00001200/table-003-sc-00012.bin  (table 3, rows g = 12 mod N)
//   DIR/step-00001200/dense.bin               (dense params + slots)
//
// Table file g of table t (N = SparseCores at save time) holds the table's
// global rows g, g + N, g + 2N, ... as fixed-size little-endian records:
//
//   +------------------+--------------------+-------------------------------+
//   | int64 global row | float weights[dim] | float slots[spp x dim + rs]   |
//   +------------------+--------------------+-------------------------------+
//   record bytes = 8 + wb x dim + sb x (spp x dim + rs)
//   (spp = optimizer slots per parameter, slot-major; rs = slots per row,
//   e.g. row-wise Adagrad's accumulator, TableEntry.row_slots; formats 1
//   and 2 have no rs; wb, sb = 4 for fp32 values, 2 for bf16 ones:
//   TableEntry.dtype / slot_dtype, format 4)
//
// so row j is record j / N of file j % N: a rank restoring on another world
// size maps the files and touches only the records of the rows it owns. With
// id shuffling (TableEntry.id_shuffle_key, base/id_permutation.h) the files
// are ordered by placed row P(j) instead, and each record's row is the
// original j: original row j is record P(j) / N of file P(j) % N. Each
// file's checksum is the sum (mod 2^64) of its records' hashes, so ranks that
// read disjoint parts can add their partial sums and verify the whole.
// A save writes every file into DIR/incomplete-step-00001200, the manifest
// (manifest.h) last, and publishes the whole directory by one rename
// (step_dirs.h), so a step-N directory is always complete.
// Functions here are thread-compatible and touch only the paths they name.
#ifndef LEMRT_RUNTIME_CHECKPOINT_CHECKPOINT_FORMAT_H_
#define LEMRT_RUNTIME_CHECKPOINT_CHECKPOINT_FORMAT_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/id_permutation.h"
#include "layout/row_placement.h"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/manifest.h"

namespace lemrt::checkpoint {

// 2: the manifest carries manifest_checksum and config_text; 3: tables may
// have per-row slots (row_slots); 4: tables may store bf16 weights or slots
// (dtype, slot_dtype). 1 to 3 are still read.
inline constexpr int kFormatVersion = 4;
inline constexpr char kDenseFileName[] = "dense.bin";

// "step-00001200" (at least 8 digits).
std::string StepDirName(int64_t step);
// "table-003-sc-00012.bin".
std::string TableFileName(int table_index, int global_sc);

// The id shuffling a table was saved with (the identity without
// id_shuffle_key): placed row = Forward(original row).
inline base::IdPermutation SavedPermutation(const TableEntry& table) {
  if (!table.has_id_shuffle_key()) return base::IdPermutation();
  return base::IdPermutation(table.vocab_size(), table.id_shuffle_key());
}

// Slot floats of one record of table `t`, and the record's bytes.
inline int64_t SlotFloatsPerRecord(const TableEntry& t) {
  return int64_t{t.dim()} * t.slots_per_param() + t.row_slots();
}
// Bytes of one stored weight and of one stored slot value of table `t`.
inline int WeightBytes(const TableEntry& t) { return t.dtype() == "bf16" ? 2 : 4; }
inline int SlotBytes(const TableEntry& t) { return t.slot_dtype() == "bf16" ? 2 : 4; }
inline int64_t RecordBytes(const TableEntry& t) {
  return 8 + WeightBytes(t) * int64_t{t.dim()} + SlotBytes(t) * SlotFloatsPerRecord(t);
}

// Decodes the weights (dim values) and, when `slots` is not null, the slots
// (SlotFloatsPerRecord values) of the record at `record` to fp32 (bf16
// widened exactly).
void DecodeRecord(const TableEntry& t, const char* record, float* weights, float* slots);
// Encodes fp32 `weights` and `slots` into the record at `record` (after its
// row field), as `t` stores them (bf16: rounded to nearest-even, which keeps
// values that are bf16 already).
void EncodeRecord(const TableEntry& t, const float* weights, const float* slots, char* record);

// Records of table file g: the placed rows p < vocab_size with
// p % total_sc == g (the shard rows of residue g, layout/row_placement.h).
inline int64_t RecordsInFile(int64_t vocab_size, int global_sc, int total_sc) {
  return layout::RowsOfResidue(vocab_size, global_sc, total_sc);
}

// Hash of one record's (or the dense file's) bytes; order-independent sums of
// it are the file checksums.
uint64_t RecordHash(std::span<const char> bytes);

// Bounds ReadManifest (manifest.h) enforces on a table, so that no size
// overflows.
inline constexpr int kMaxDim = 1 << 20;         // Floats per row.
inline constexpr int kMaxSlotsPerParam = 16;
inline constexpr int kMaxRowSlots = 16;

// A read-only memory map of a whole file. Empty files map to an empty span.
class MappedFile {
 public:
  // Maps `path` and checks its size is `expected_bytes`: NotFound "is
  // missing", DataLoss "is truncated" / "is longer than" naming the path.
  static absl::StatusOr<MappedFile> Open(const std::string& path, int64_t expected_bytes);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const char> bytes() const { return {data_, static_cast<size_t>(size_)}; }

 private:
  MappedFile(const char* data, int64_t size) : data_(data), size_(size) {}
  const char* data_ = nullptr;
  int64_t size_ = 0;
};

// `dir`/`name`.
std::string Join(const std::string& dir, const std::string& name);

// DataLoss naming `path` when `sum` (the RecordHash of its bytes or records)
// is not the manifest's `expected`.
absl::Status CheckChecksum(const std::string& path, uint64_t sum, uint64_t expected);

// Maps file `f` of checkpoint `dir` and verifies its size and checksum.
absl::StatusOr<MappedFile> OpenVerified(const std::string& dir, const FileEntry& f);

// Reads every record of every file of table `table_name` from checkpoint
// `dir` with `manifest` (single process), verifying the checksums and row
// ids, into `weights` [vocab_size x dim] and, when not null, `slots`
// [vocab_size x SlotFloatsPerRecord]. NotFound for an unknown table name (listing the
// names); DataLoss naming the file for a bad file.
absl::Status ReadWholeTable(const std::string& dir, const Manifest& manifest,
                            const std::string& table_name, std::vector<float>* weights,
                            std::vector<float>* slots);

// Verifies every file of checkpoint `dir` (single process): sizes, row ids,
// checksums, and the model checksum of the rows and dense parameters
// against the manifest's model_checksum (the check restore ends with), then
// that every stored float (weights, optimizer slots, dense parameters and
// slots) is finite. DataLoss / NotFound errors name the file;
// FailedPrecondition names the first non-finite value (a diverged model).
absl::Status VerifyCheckpoint(const std::string& dir, const Manifest& manifest);

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_CHECKPOINT_FORMAT_H_
