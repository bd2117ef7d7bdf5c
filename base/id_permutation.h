// A seeded bijection of a table's row ids [0, size): the id shuffling that
// places row j on SparseCore Forward(j) % N instead of j % N, so hot and
// contiguous id ranges spread over the SparseCores. Immutable and cheap to
// copy (seven words).
//
// The bijection is a four-round Feistel network on b-bit values (b = the
// bits of size - 1, at least 2), each round keyed by Mix64(key, round):
//
//   x = [ hi : b - l bits | lo : l bits ]
//   round:  hi ^= Mix64(lo ^ round_key) mod 2^(b - l);  x = [ lo | hi ]
//
// (the halves swap, so l alternates between b / 2 and b - b / 2), extended
// from [0, 2^b) to [0, size) by cycle walking: a value that lands at or
// above size is permuted again until it falls below (2^b < 2 size, so under
// two rounds of four on average). Forward and Inverse are pure functions of
// (size, key, id): the same on every rank, thread and run, and stored in
// checkpoint manifests, so the network must never change.
#ifndef LEMRT_BASE_ID_PERMUTATION_H_
#define LEMRT_BASE_ID_PERMUTATION_H_

#include <algorithm>
#include <bit>
#include <cstdint>

#include "base/random.h"

namespace lemrt::base {

class IdPermutation {
 public:
  // The identity (no shuffling).
  IdPermutation() = default;
  // A bijection of [0, size) chosen by `key`; size >= 0. Sizes 0 and 1 give
  // the identity.
  IdPermutation(int64_t size, uint64_t key) : size_(size), key_(key) {
    if (size_ <= 1) {
      size_ = 0;
      return;
    }
    bits_ = std::max(2, static_cast<int>(std::bit_width(static_cast<uint64_t>(size_ - 1))));
    for (int r = 0; r < kRounds; ++r) round_keys_[r] = Mix64(key_ ^ (0x5851f42d4c957f2dULL * (r + 1)));
  }

  bool identity() const { return size_ == 0; }
  // The permuted range's size (0 for the identity) and the key.
  int64_t size() const { return size_; }
  uint64_t key() const { return key_; }

  // The placed id of `id`, in [0, size). `id` must be in [0, size) (any id
  // for the identity).
  int64_t Forward(int64_t id) const {
    if (identity()) return id;
    uint64_t x = static_cast<uint64_t>(id);
    do x = Rounds(x);
    while (x >= static_cast<uint64_t>(size_));
    return static_cast<int64_t>(x);
  }
  // The id whose placed id is `placed`: Inverse(Forward(j)) == j.
  int64_t Inverse(int64_t placed) const {
    if (identity()) return placed;
    uint64_t x = static_cast<uint64_t>(placed);
    do x = InverseRounds(x);
    while (x >= static_cast<uint64_t>(size_));
    return static_cast<int64_t>(x);
  }

 private:
  static constexpr int kRounds = 4;

  static uint64_t Mask(int bits) { return (uint64_t{1} << bits) - 1; }

  uint64_t Rounds(uint64_t x) const {
    int lo_bits = bits_ / 2;
    for (int r = 0; r < kRounds; ++r) {
      const int hi_bits = bits_ - lo_bits;
      const uint64_t lo = x & Mask(lo_bits);
      const uint64_t hi = (x >> lo_bits) ^ (Mix64(lo ^ round_keys_[r]) & Mask(hi_bits));
      x = (lo << hi_bits) | hi;
      lo_bits = hi_bits;
    }
    return x;
  }
  uint64_t InverseRounds(uint64_t x) const {
    // After round r the low part holds hi_bits(r) bits; walk the rounds back.
    int lo_bits_of[kRounds];
    int lo_bits = bits_ / 2;
    for (int r = 0; r < kRounds; ++r) {
      lo_bits_of[r] = lo_bits;
      lo_bits = bits_ - lo_bits;
    }
    for (int r = kRounds - 1; r >= 0; --r) {
      const int l = lo_bits_of[r];
      const int h = bits_ - l;
      const uint64_t lo = x >> h;
      const uint64_t hi = (x & Mask(h)) ^ (Mix64(lo ^ round_keys_[r]) & Mask(h));
      x = (hi << l) | lo;
    }
    return x;
  }

  int64_t size_ = 0;  // 0: the identity
  uint64_t key_ = 0;
  int bits_ = 0;
  uint64_t round_keys_[kRounds] = {};
};

}  // namespace lemrt::base

#endif  // LEMRT_BASE_ID_PERMUTATION_H_
