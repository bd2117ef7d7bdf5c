#include "host/input/value_key.h"

#include <bit>
#include <charconv>
#include <cstring>

namespace lemrt::host {

uint64_t Fingerprint64(std::string_view bytes) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    // Little-endian words on every machine, as the tail below.
    if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
    h = base::Mix64(h ^ word);
  }
  uint64_t tail = 0;
  for (size_t k = 0; i + k < bytes.size(); ++k) {
    tail |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i + k])) << (8 * k);
  }
  h = base::Mix64(h ^ tail);
  return base::Mix64(h ^ static_cast<uint64_t>(bytes.size()));
}

bool ParseValueKey(std::string_view text, ValueType type, int max_hex_digits, uint64_t* key) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = first + text.size();
  switch (type) {
    case ValueType::kString:
      *key = Fingerprint64(text);
      return true;
    case ValueType::kInt64: {
      int64_t value = 0;
      const auto [ptr, ec] = std::from_chars(first, last, value);
      if (ec != std::errc() || ptr != last) return false;
      *key = static_cast<uint64_t>(value);
      return true;
    }
    case ValueType::kHex: {
      uint64_t value = 0;
      if (static_cast<int>(text.size()) > max_hex_digits) return false;
      const auto [ptr, ec] = std::from_chars(first, last, value, 16);
      if (ec != std::errc() || ptr != last) return false;
      *key = value;
      return true;
    }
  }
  return false;
}

}  // namespace lemrt::host
