// Exact sums of floats and doubles in fixed point, so that a sum does not
// depend on the order or grouping of its terms: the same terms summed on one
// rank, or split over any number of ranks and combined with an integer
// all-reduce, give the same bits. Used where a reduction's grouping would
// otherwise follow the world size (the dense gradients and the loss,
// runtime/step/tensorcore_stage.h). Pure functions; thread-compatible.
//
// One sum is kExactLimbs signed 64-bit limbs; limb i counts units of
// 2^(32 i - 96), so the limbs span [2^-96, 2^32). A term puts at most 32 bits
// into each limb it touches, so up to 2^30 terms sum without overflow, and
// the limbs of a sum are plain integer sums of the terms' limbs: exact,
// associative and commutative. A term's bits below 2^-96 are dropped (its
// magnitude is truncated: deterministic, and below float precision for any
// term above 2^-72). A term that is not finite or has |v| >= 2^32 is
// "special": it adds nothing, is counted, and makes the sum NaN.
//
// Vector layout (ExactSlots(n) int64 values): sum i's limbs at
// [i * kExactLimbs, (i + 1) * kExactLimbs), then one count of special terms
// for the whole vector.
#ifndef LEMRT_BASE_EXACT_SUM_H_
#define LEMRT_BASE_EXACT_SUM_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace lemrt::base {

inline constexpr int kExactLimbs = 4;
inline constexpr int kExactLimbBits = 32;
inline constexpr int kExactUnitExponent = -96;

// int64 values that hold n exact sums and their special count.
inline size_t ExactSlots(size_t n) { return n * kExactLimbs + 1; }

// Adds v to the sum in limbs[0, kExactLimbs). Returns false (adding
// nothing) when v is special.
bool AddExact(double v, int64_t* limbs);
bool AddExact(float v, int64_t* limbs);

// Carries the limbs upward in place (every limb but the top then in
// [0, 2^32)); the sum's value is unchanged. A caller adding more than 2^30
// terms normalises at least every 2^30 terms so that no limb overflows.
void NormalizeExact(int64_t* limbs);

// The value of a sum: its limbs normalised (a representation unique to the
// exact sum), then rounded to a double in a fixed order. A function of the
// exact sum only.
double ExactValue(const int64_t* limbs);

// acc (ExactSlots(values.size()) values) += values, term by term.
void AddExact(std::span<const float> values, std::span<int64_t> acc);

// out[i] = sum i of acc rounded to float (ExactValue, then to float); every
// out[i] is NaN when acc counts a special term. acc.size() ==
// ExactSlots(out.size()).
void ExactValues(std::span<const int64_t> acc, std::span<float> out);

// The same for one double sum held in ExactSlots(1) values.
double ExactScalar(std::span<const int64_t> acc);

}  // namespace lemrt::base

#endif  // LEMRT_BASE_EXACT_SUM_H_
