// Order-independent sums of float vectors in int64 fixed point with one
// shared exponent per chunk of values: the world-size-independent dense
// gradients (runtime/step/tensorcore_stage.h). Each of `terms` vectors (the
// gradients of one sample block) is added into int64 fixed point whose unit
// is set per chunk from the largest magnitude in that chunk over all terms,
// so the integer sums are exact, associative and commutative: the same terms
// summed on one rank, or split over any number of ranks and combined with an
// integer all-reduce, give the same bits. 8 bytes a value (base/exact_sum.h's
// four limbs take 32). Pure functions; thread-compatible.
//
// Precision: a chunk's unit is 2^(E + H - 63), E the chunk's exponent
// (every |value| < 2^E) and H = BlockSumHeadroomBits(terms), so each term is
// truncated toward zero at 2^(H - 63) of the chunk's bound: exact to float
// precision for values within 2^(39 - H) of the chunk's largest. The sum of
// the terms' integers is below 2^63 in magnitude. A value that is not finite
// makes every output value NaN.
//
// Use, with every rank holding some of the terms:
//   1. BlockSumExponents over each local term into `exps` (filled with
//      kBlockSumNoExponent first), then an all-reduce MAX of `exps`;
//   2. AddBlockSum of each local term into `acc` (zeros first), then an
//      all-reduce SUM of `acc`;
//   3. BlockSumValues(acc, exps) gives every rank the same floats.
#ifndef LEMRT_BASE_BLOCK_SUM_H_
#define LEMRT_BASE_BLOCK_SUM_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace lemrt::base {

inline constexpr size_t kBlockSumChunk = 64;  // values per shared exponent
// The exponent of a chunk whose values are all zero (below every other).
inline constexpr int64_t kBlockSumNoExponent = -1000;
// An exponent slot's value once a value was not finite (above every other).
inline constexpr int64_t kBlockSumSpecial = 1000;

// int64 exponent slots for n values: one per chunk of kBlockSumChunk values,
// then one that is kBlockSumSpecial once a value was not finite.
inline size_t BlockSumExponentSlots(size_t n) {
  return (n + kBlockSumChunk - 1) / kBlockSumChunk + 1;
}

// Bits of headroom that let `terms` >= 1 values below a chunk's bound sum
// without overflow: ceil(log2(terms)). Must be the same wherever the sums
// are compared (a function of the global batch and the block only).
int BlockSumHeadroomBits(int64_t terms);

// exps[c] = max(exps[c], E) with E the smallest integer such that every
// |values[i]| of chunk c is below 2^E (kBlockSumNoExponent for an all-zero
// chunk); the last slot becomes kBlockSumSpecial when a value is NaN or
// infinite. exps.size() == BlockSumExponentSlots(values.size()).
void BlockSumExponents(std::span<const float> values, std::span<int64_t> exps);

// acc[i] += values[i] in units of chunk c's unit (truncated toward zero);
// exps: the all-reduced exponents. Adds nothing when exps flags a special
// value. acc.size() == values.size(); headroom_bits in [0, 30].
void AddBlockSum(std::span<const float> values, std::span<const int64_t> exps, int headroom_bits,
                 std::span<int64_t> acc);

// out[i] = acc[i] x chunk c's unit, rounded to double then to float; every
// out[i] is NaN when exps flags a special value. A function of acc and exps
// only. out.size() == acc.size().
void BlockSumValues(std::span<const int64_t> acc, std::span<const int64_t> exps, int headroom_bits,
                    std::span<float> out);

}  // namespace lemrt::base

#endif  // LEMRT_BASE_BLOCK_SUM_H_
