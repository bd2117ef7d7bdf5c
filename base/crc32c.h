// CRC-32C (Castagnoli, the checksum of iSCSI, ext4 and TFRecord files) of a
// byte range, and TFRecord's masked form. Computed by Intel's ISA-L
// (libisal), which picks a hardware kernel at run time. Pure functions;
// thread-safe.
#ifndef LEMRT_BASE_CRC32C_H_
#define LEMRT_BASE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace lemrt::base {

// CRC-32C of `size` bytes at `data`, continuing a CRC `crc` of the bytes
// before them (0 for the first range): Crc32c(a + b) =
// Crc32c(b, Crc32c(a)). Crc32c("123456789") == 0xe3069283.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
inline uint32_t MaskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace lemrt::base

#endif  // LEMRT_BASE_CRC32C_H_
