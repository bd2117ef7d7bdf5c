// lemrt's binary Criteo format: the parsed TSV lines as fixed-size records,
// so readers map the file and find sample i at a computed offset (no
// parsing, no line scanning). Written once by lemrt_convert
// (binary_writer.h); read by BinaryReader (binary_reader.h). Immutable.
//
//   header, 64 bytes:  char magic[8] = "LEMRTBN1" | uint32 version = 1 |
//                      uint32 record_bytes = 164 | int64 num_records |
//                      40 zero bytes
//   record i at offset 64 + 164 i, little-endian:
//     float label | float dense[13] (log(1 + max(x, 0)), missing = 0) |
//     uint32 category[26] (the hex value; 0 when missing) |
//     uint32 category_present (bit c: column c non-empty)
//
// A record holds exactly what ParseCriteoLine produces (a CriteoLine), so
// batches from the binary file equal those from the TSV it came from.
#ifndef LEMRT_HOST_BINARY_FORMAT_H_
#define LEMRT_HOST_BINARY_FORMAT_H_

#include <cstdint>
#include <cstring>
#include <string>

#include "host/criteo_reader.h"

namespace lemrt::host {

inline constexpr char kBinaryMagic[8] = {'L', 'E', 'M', 'R', 'T', 'B', 'N', '1'};
inline constexpr uint32_t kBinaryVersion = 1;
inline constexpr int64_t kBinaryHeaderBytes = 64;
inline constexpr int64_t kBinaryRecordBytes =
    4 * (1 + CriteoLine::kNumIntegers + CriteoLine::kNumCategories + 1);
static_assert(kBinaryRecordBytes == 164);

// The 64-byte header of a file of `num_records` records.
std::string EncodeBinaryHeader(int64_t num_records);

// Writes `line` as one record into `out` (kBinaryRecordBytes bytes).
void EncodeBinaryRecord(const CriteoLine& line, char* out);

// Reads one record (kBinaryRecordBytes bytes at `in`) into `line`.
void DecodeBinaryRecord(const char* in, CriteoLine* line);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_BINARY_FORMAT_H_
