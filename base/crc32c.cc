#include "base/crc32c.h"

#include <algorithm>
#include <climits>

#include <isa-l/crc.h>

namespace lemrt::base {

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  // ISA-L works on the inverted register and takes int lengths.
  uint32_t state = ~crc;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  while (size > 0) {
    const size_t n = std::min<size_t>(size, INT_MAX / 2);
    state = crc32_iscsi(p, static_cast<int>(n), state);
    p += n;
    size -= n;
  }
  return ~state;
}

}  // namespace lemrt::base
