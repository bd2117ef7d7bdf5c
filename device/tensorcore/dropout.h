// Inverted dropout with masks that are pure functions of their keys: unit u
// of layer `layer` of global sample g at training step s is kept iff
//
//   Mix64(HashKeys({seed, kDropoutTag, s, g, layer}) + kStep * (u + 1)) >> 32
//       >= p * 2^32                                   (base/random.h)
//
// and a kept unit is scaled by 1 / (1 - p), so the expected activation is
// unchanged and evaluation uses the plain model. The mask depends neither on
// the world size (g is the sample's index in the global batch) nor on the
// thread that computes it, nor on how a batch is split into rows.
#ifndef LEMRT_DEVICE_TENSORCORE_DROPOUT_H_
#define LEMRT_DEVICE_TENSORCORE_DROPOUT_H_

#include <cstdint>

namespace lemrt::device {

// Dropout probabilities of a model's bottom and top MLP, each in [0, 1);
// 0 = none.
struct DropoutRates {
  float bottom = 0.0f;
  float top = 0.0f;
};

// The key layer of the top MLP's first layer (the bottom MLP's is 0), so the
// two MLPs of a model draw different masks.
inline constexpr int kTopMlpDropoutLayer = 1 << 16;

// Which masks a forward pass uses: the run's seed, the training step, and the
// global sample index of the batch's row 0 (row r is sample first_sample + r,
// or first_sample + rows[r] when `rows` is set: a batch packed from some rows
// of a larger one keeps each row's mask).
struct DropoutKey {
  uint64_t seed = 0;
  int64_t step = 0;
  int64_t first_sample = 0;
  const int64_t* rows = nullptr;
};

// Whether `unit` of `layer` of row `row` is kept at drop probability p in
// [0, 1) (always true at p = 0).
bool DropoutKeeps(const DropoutKey& key, int layer, int64_t row, int unit, float p);

// y[r * width + u] = kept ? y * (1 / (1 - p)) : 0 for rows r < batch, units
// u < width. p in [0, 1); p = 0 leaves y unchanged.
void ApplyDropout(const DropoutKey& key, int layer, float p, int64_t batch, int width, float* y);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_DROPOUT_H_
