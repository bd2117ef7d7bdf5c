// lemrt's binary format, version 2 (docs/data.md "Binary files"): the rows
// of any source, parsed once by lemrt_convert (host/formats/binary_writer.h) into
// fixed-layout records in checksummed blocks, read back by memory-mapping
// (host/formats/binary_file.h, host/formats/binary_parser.h). Little-endian throughout.
//
//   header, 64 bytes:
//      0 char magic[8] = "LEMRTBN2"    8 uint32 version = 2
//     12 uint32 header_crc (CRC-32C of the 64 bytes with this field 0)
//     16 int64 num_records            24 int64 num_blocks
//     32 int64 columns_offset         40 int64 columns_bytes
//     48 int64 index_offset           56 uint32 records_per_block (R)
//     60 uint32 meta_crc (CRC-32C of the columns and the index)
//   blocks from byte 64: block k holds records [k R, min((k + 1) R, N)):
//     uint32 record_end[n] (end of each record, from the end of this array) |
//     the n records
//   columns: the stored columns as a text-format config.InputSchema (label
//     name, or for a multi-task config `labels` in task order; dense
//     inputs with their transform, already applied; sparse inputs with key,
//     type and weights_key when weighted)
//   index, per block: int64 offset | int64 bytes | uint32 crc32c | uint32 n
//
//   record: float label[L] (L = 1, or the stored `labels`; NaN: a missing
//           optional label) | float dense[D] | per sparse column:
//           uint32 n | uint64 key[n] (host/input/value_key.h) | float weight[n]
//           (weighted columns only)
//
// Keys are stored before any mapping, so tables may be resized, rehashed or
// given vocabularies without converting again. Immutable constants and
// stateless functions; thread-safe.
#ifndef LEMRT_HOST_FORMATS_BINARY_FORMAT_H_
#define LEMRT_HOST_FORMATS_BINARY_FORMAT_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"

namespace lemrt::host {

inline constexpr char kBinaryMagic[8] = {'L', 'E', 'M', 'R', 'T', 'B', 'N', '2'};
inline constexpr char kBinaryMagicV1[8] = {'L', 'E', 'M', 'R', 'T', 'B', 'N', '1'};
inline constexpr uint32_t kBinaryVersion = 2;
inline constexpr int64_t kBinaryHeaderBytes = 64;
inline constexpr int64_t kBinaryIndexEntryBytes = 24;
inline constexpr uint32_t kBinaryRecordsPerBlock = 1024;

struct BinaryHeader {
  int64_t num_records = 0;
  int64_t num_blocks = 0;
  int64_t columns_offset = 0;
  int64_t columns_bytes = 0;
  int64_t index_offset = 0;
  uint32_t records_per_block = kBinaryRecordsPerBlock;
  uint32_t meta_crc = 0;
};

struct BinaryBlock {
  int64_t offset = 0;
  int64_t bytes = 0;
  uint32_t crc = 0;
  uint32_t records = 0;
};

// The 64 header bytes (with their CRC).
std::string EncodeBinaryHeader(const BinaryHeader& header);
// Parses 64 bytes; InvalidArgument with a sentence for a wrong magic (a
// version 1 file is told to reconvert), version or header checksum.
absl::StatusOr<BinaryHeader> DecodeBinaryHeader(std::string_view bytes);

void EncodeBinaryBlock(const BinaryBlock& block, char* out);  // 24 bytes
BinaryBlock DecodeBinaryBlock(const char* in);

template <typename T>
inline void AppendPod(std::string* out, const T& value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_BINARY_FORMAT_H_
