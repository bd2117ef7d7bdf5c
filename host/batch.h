// One chip's share of a global batch, as the data sources produce it and the
// host preprocessing consumes it. Thread-compatible plain data; sized once
// (Resize) and refilled every step, so the steady state allocates nothing
// beyond growth of the id arrays.
#ifndef LEMRT_HOST_BATCH_H_
#define LEMRT_HOST_BATCH_H_

#include <cstdint>
#include <span>
#include <vector>

namespace lemrt::host {

// Layout (B = num_samples, D = num_dense, F = features):
//   dense   [B x D] row-major floats
//   labels  [B] floats in {0, 1}
//   feature f of sample i has ids ids[f][offsets[f][i] .. offsets[f][i+1])
//   (offsets[f] has B + 1 entries, offsets[f][0] == 0); ids are global rows of
//   the feature's table, in [0, vocab_size).
//   teacher_prob [B]: the planted model's true probability (synthetic data
//   only; empty for file data).
struct Batch {
  int64_t num_samples = 0;
  int num_dense = 0;
  std::vector<float> dense;
  std::vector<float> labels;
  std::vector<std::vector<int64_t>> offsets;
  std::vector<std::vector<int64_t>> ids;
  std::vector<float> teacher_prob;

  // Sets the shape; keeps capacity. Clears ids.
  void Resize(int64_t samples, int dense_features, int features) {
    num_samples = samples;
    num_dense = dense_features;
    dense.resize(samples * dense_features);
    labels.resize(samples);
    offsets.resize(features);
    ids.resize(features);
    for (int f = 0; f < features; ++f) {
      offsets[f].assign(samples + 1, 0);
      ids[f].clear();
    }
  }
  int num_features() const { return static_cast<int>(ids.size()); }
  std::span<const int64_t> SampleIds(int f, int64_t i) const {
    return std::span<const int64_t>(ids[f].data() + offsets[f][i],
                                    offsets[f][i + 1] - offsets[f][i]);
  }
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_BATCH_H_
