// Counter-based random numbers: every value is a pure function of its keys
// (seed, table, row, sample, ...), so results never depend on the world size,
// the thread that computes them, or the order of computation. Immutable.
#ifndef LEMRT_BASE_RANDOM_H_
#define LEMRT_BASE_RANDOM_H_

#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace lemrt::base {

// SplitMix64 finaliser: a bijective 64-bit mix with good avalanche.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Hash of an ordered list of keys.
inline uint64_t HashKeys(std::initializer_list<uint64_t> keys) {
  uint64_t h = 0x6a09e667f3bcc909ULL;
  for (uint64_t k : keys) h = Mix64(h ^ Mix64(k));
  return h;
}

// HashKeys of the keys behind `prefix` (HashKeys of the leading keys) and
// then `key`: HashKeys({a, b, key}) == HashOn(HashKeys({a, b}), key), so
// leading keys shared by many hashes are hashed once.
inline uint64_t HashOn(uint64_t prefix, uint64_t key) { return Mix64(prefix ^ Mix64(key)); }

// A stream of random values derived from one key: value i = Mix64(key + i).
// Thread-compatible; cheap to create (one per row / sample).
class CounterRng {
 public:
  // Value i (1-based) of the stream is Mix64(key + kStep x i).
  static constexpr uint64_t kStep = 0x632be59bd9b4e019ULL;

  explicit CounterRng(uint64_t key) : key_(key) {}

  uint64_t NextU64() { return Mix64(key_ + kStep * ++counter_); }
  // Moves past the next n values (as n NextU64 calls would).
  void Skip(uint64_t n) { counter_ += n; }
  // Uniform in [0, 1) with 53 bits.
  double NextDouble() { return UnitDouble(NextU64()); }
  // Uniform integer in [0, n); n > 0.
  uint64_t NextBelow(uint64_t n) { return Below(NextU64(), n); }
  // What NextDouble and NextBelow make of a value of the stream, for callers
  // that draw a value before they know which it will be.
  static double UnitDouble(uint64_t value) { return (value >> 11) * 0x1.0p-53; }
  static uint64_t Below(uint64_t value, uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(value) * n) >> 64);
  }
  // Standard normal (Box-Muller, one value per call).
  double NextNormal() {
    const double u1 = NextDouble();
    return NormalFrom(u1, NextDouble());
  }
  // The normal NextNormal makes of its two uniforms, for callers that draw
  // them first.
  static double NormalFrom(double u1, double u2) {
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace lemrt::base

#endif  // LEMRT_BASE_RANDOM_H_
