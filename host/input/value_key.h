// How a sparse input value becomes a 64-bit key and a key becomes a table
// row (docs/data.md "Schema"). Every reader (text, TFRecord, binary) and
// lemrt_vocab turn values into keys the same way, so one value maps to one
// row whatever file format it came from. Stateless functions; thread-safe.
#ifndef LEMRT_HOST_INPUT_VALUE_KEY_H_
#define LEMRT_HOST_INPUT_VALUE_KEY_H_

#include <cstdint>
#include <string_view>

#include "base/random.h"

namespace lemrt::host {

// How a value's text is read.
enum class ValueType {
  kString,  // any bytes: key = Fingerprint64(bytes)
  kInt64,   // a decimal integer: key = its two's-complement bits
  kHex,     // 1..max_hex_digits hex digits: key = the number
};

// A 64-bit fingerprint of `bytes`, the same on every machine and build:
// from h = 0x243f6a8885a308d3, h = Mix64(h ^ word) over the n / 8 whole
// little-endian 8-byte words and then the tail (the n % 8 last bytes,
// zero-padded; a zero word when there are none), and finally
// Mix64(h ^ n) (n = bytes.size()). Pinned in value_key_test.
uint64_t Fingerprint64(std::string_view bytes);

// Parses `text` as `type` into `*key`; false when it is not one (an empty
// text, a non-integer, more than `max_hex_digits` hex digits, an overflow).
bool ParseValueKey(std::string_view text, ValueType type, int max_hex_digits, uint64_t* key);

// The row of a hashed key in a table of `rows` rows at position `table` of
// the config: Mix64(key ^ Mix64(table + 1)) mod rows. Salting by table
// keeps two tables' collisions independent while features sharing a table
// map a value to one row.
inline int64_t HashedRow(uint64_t key, int table, int64_t rows) {
  const uint64_t salt = base::Mix64(static_cast<uint64_t>(table) + 1);
  return static_cast<int64_t>(base::Mix64(key ^ salt) % static_cast<uint64_t>(rows));
}

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_VALUE_KEY_H_
