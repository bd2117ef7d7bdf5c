// Fixed-width float vectors for the TensorCore's own loops (the dot
// interaction, bias and ReLU epilogues, column sums): GCC vector extensions,
// so one source compiles to AVX-512, AVX2 or any other target's registers.
// Lanes<L> holds L floats (8 or 16); kWideLanes is 16 where the build targets
// AVX-512 and 8 otherwise. Loads and stores are unaligned. Values only; no
// state.
#ifndef LEMRT_DEVICE_TENSORCORE_LANES_H_
#define LEMRT_DEVICE_TENSORCORE_LANES_H_

#include <cstring>

// The vectors pass only between the inlined, file-local functions of the
// files that include this header, so GCC's warning that returning or passing
// them without AVX changes the ABI is moot there.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace lemrt::device::lanes {

template <int L>
struct LaneVector;
template <>
struct LaneVector<8> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct LaneVector<16> {
  typedef float type __attribute__((vector_size(64)));
};
template <int L>
using Lanes = typename LaneVector<L>::type;

#if defined(__AVX512F__)
inline constexpr int kWideLanes = 16;
#else
inline constexpr int kWideLanes = 8;
#endif

template <int L>
inline Lanes<L> Load(const float* p) {
  Lanes<L> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <int L>
inline void Store(float* p, const Lanes<L>& v) {
  std::memcpy(p, &v, sizeof(v));
}

}  // namespace lemrt::device::lanes

#endif  // LEMRT_DEVICE_TENSORCORE_LANES_H_
