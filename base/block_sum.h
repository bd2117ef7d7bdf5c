// Order-independent sums of float vectors in int64 fixed point with one
// shared exponent per chunk of values: the world-size-independent dense
// gradients (runtime/step/tensorcore_stage.h). Each of `terms` vectors (the
// gradients of one sample block) is added into int64 fixed point whose unit
// is set per chunk from a bound on every term's magnitudes in that chunk, so
// the integer sums are exact, associative and commutative: the same terms
// summed on one rank, or split over any number of ranks and combined with an
// integer all-reduce, give the same bits, provided every rank uses the same
// exponents. 8 bytes a value (base/exact_sum.h's four limbs take 32). Pure
// functions; thread-compatible.
//
// Precision: a chunk's unit is 2^(E + H - 63), E the chunk's exponent (every
// term's |value| < 2^E) and H = BlockSumHeadroomBits(terms), so each term is
// truncated toward zero at 2^(H - 63) of the chunk's bound: exact to float
// precision for values within 2^(39 - H) of the bound 2^E. The sum of the
// terms' integers is below 2^63 in magnitude. A value that is not finite
// makes every output value NaN.
//
// Two ways to agree the exponents, both functions of the terms (and of data
// every rank holds identically) only:
//   - measured: BlockSumExponents over each local term into `exps` (filled
//     with kBlockSumNoExponent first), then an all-reduce MAX of `exps`: E is
//     the smallest bound of the chunk's largest term value;
//   - predicted (no collective): BlockSumNextExponents of the previous sum
//     (the same floats on every rank): E = max(Ec, Emax - kBlockSumFloorBits)
//     + kBlockSumMarginBits, Ec the bound exponent of the previous sum's
//     largest |value| in the chunk and Emax the largest Ec of the vector.
//     Values are then exact to float precision within
//     2^(39 - H - kBlockSumMarginBits) of 2^max(Ec, Emax - 16) (31 bits
//     with H = 0, 23 with 256 blocks), and no truncation exceeds
//     2^(Emax + kBlockSumMarginBits + H - 63) a term. A term value at or
//     above its chunk's bound (or not finite, or nonzero where the whole
//     previous sum was zero) makes AddBlockSum return false: the caller adds
//     the failures into the same all-reduce as the sums and, when any term in
//     the global batch failed, sums again with measured exponents. Whether to
//     redo is a function of the terms and the prediction, so it is the same
//     at every world size.
//
// Use, with every rank holding some of the terms:
//   1. the exponents (either way above);
//   2. AddBlockSum of each local term into `acc` (zeros first), then an
//      all-reduce SUM of `acc` (a predicted sum with a failure count beside
//      it; redo with measured exponents when the count is nonzero);
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

// Bits added to the previous sum's exponents to predict the next ones.
inline constexpr int kBlockSumMarginBits = 8;
// A chunk's predicted exponent is at least the largest chunk's less this many
// bits (before the margin): a chunk whose previous sum was zero or tiny (a
// unit of a layer that rarely fires) still gets a bound.
inline constexpr int kBlockSumFloorBits = 16;

// exps[c] = max(exps[c], E) with E the smallest integer such that every
// |values[i]| of chunk c is below 2^E (kBlockSumNoExponent for an all-zero
// chunk); the last slot becomes kBlockSumSpecial when a value is NaN or
// infinite. exps.size() == BlockSumExponentSlots(values.size()).
void BlockSumExponents(std::span<const float> values, std::span<int64_t> exps);

// The predicted exponents for the next sum from this one (`sum`, the same
// floats on every rank), as in the contract above (every chunk
// kBlockSumNoExponent when the whole sum is zero); the special slot flags a
// sum that is not finite (every term then fails). exps.size() == BlockSumExponentSlots(sum.size()).
void BlockSumNextExponents(std::span<const float> sum, std::span<int64_t> exps);

// Whether exps could come from BlockSumExponents or BlockSumNextExponents
// (each chunk's kBlockSumNoExponent or in [-125, 128 + kBlockSumMarginBits],
// the last slot 0 or kBlockSumSpecial): a check for exponents read back.
bool BlockSumExponentsValid(std::span<const int64_t> exps);

// acc[i] += values[i] in units of chunk c's unit (truncated toward zero).
// Returns whether every value lay below its chunk's bound 2^exps[c] (so the
// integers fit): false when one did not, was not finite, or exps flags a
// special value; acc is then unspecified (sum again with measured
// exponents). acc.size() == values.size(); headroom_bits in [0, 30].
[[nodiscard]] bool AddBlockSum(std::span<const float> values, std::span<const int64_t> exps,
                               int headroom_bits, std::span<int64_t> acc);

// out[i] = acc[i] x chunk c's unit, rounded to double then to float; every
// out[i] is NaN when exps flags a special value. A function of acc and exps
// only. out.size() == acc.size().
void BlockSumValues(std::span<const int64_t> acc, std::span<const int64_t> exps, int headroom_bits,
                    std::span<float> out);

}  // namespace lemrt::base

#endif  // LEMRT_BASE_BLOCK_SUM_H_
