#include "host/formats/binary_format.h"

#include "absl/strings/str_format.h"
#include "base/crc32c.h"

namespace lemrt::host {

std::string EncodeBinaryHeader(const BinaryHeader& h) {
  std::string out(kBinaryMagic, 8);
  AppendPod(&out, kBinaryVersion);
  AppendPod(&out, uint32_t{0});  // header_crc, filled below
  AppendPod(&out, h.num_records);
  AppendPod(&out, h.num_blocks);
  AppendPod(&out, h.columns_offset);
  AppendPod(&out, h.columns_bytes);
  AppendPod(&out, h.index_offset);
  AppendPod(&out, h.records_per_block);
  AppendPod(&out, h.meta_crc);
  const uint32_t crc = base::Crc32c(out.data(), out.size());
  std::memcpy(out.data() + 12, &crc, 4);
  return out;
}

absl::StatusOr<BinaryHeader> DecodeBinaryHeader(std::string_view bytes) {
  if (bytes.size() < static_cast<size_t>(kBinaryHeaderBytes)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "it has %d bytes, less than the %d-byte header", bytes.size(), kBinaryHeaderBytes));
  }
  if (std::memcmp(bytes.data(), kBinaryMagicV1, 8) == 0) {
    return absl::InvalidArgumentError(
        "it is a version 1 lemrt binary file, which carries no checksums and is no longer "
        "read; convert its source again with lemrt_convert");
  }
  if (std::memcmp(bytes.data(), kBinaryMagic, 8) != 0) {
    return absl::InvalidArgumentError("it does not start with the magic LEMRTBN2");
  }
  auto read = [&](int offset, auto* value) { std::memcpy(value, bytes.data() + offset, sizeof(*value)); };
  uint32_t version = 0, stored_crc = 0;
  read(8, &version);
  read(12, &stored_crc);
  if (version != kBinaryVersion) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "it is version %d; this build reads version %d (convert the source again)", version,
        kBinaryVersion));
  }
  std::string copy(bytes.substr(0, kBinaryHeaderBytes));
  std::memset(copy.data() + 12, 0, 4);
  const uint32_t crc = base::Crc32c(copy.data(), copy.size());
  if (crc != stored_crc) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "its header fails its CRC-32C checksum (stored %08x, computed %08x): the file is "
        "corrupt",
        stored_crc, crc));
  }
  BinaryHeader h;
  read(16, &h.num_records);
  read(24, &h.num_blocks);
  read(32, &h.columns_offset);
  read(40, &h.columns_bytes);
  read(48, &h.index_offset);
  read(56, &h.records_per_block);
  read(60, &h.meta_crc);
  return h;
}

void EncodeBinaryBlock(const BinaryBlock& b, char* out) {
  std::memcpy(out, &b.offset, 8);
  std::memcpy(out + 8, &b.bytes, 8);
  std::memcpy(out + 16, &b.crc, 4);
  std::memcpy(out + 20, &b.records, 4);
}

BinaryBlock DecodeBinaryBlock(const char* in) {
  BinaryBlock b;
  std::memcpy(&b.offset, in, 8);
  std::memcpy(&b.bytes, in + 8, 8);
  std::memcpy(&b.crc, in + 16, 4);
  std::memcpy(&b.records, in + 20, 4);
  return b;
}

}  // namespace lemrt::host
