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

// Layout (B = num_samples, D = num_dense, F = features, T = num_tasks):
//   dense   [B x D] row-major floats
//   labels  [B x T] row-major floats in [0, 1], one per task (T = 1 but
//   for multi-task models); NaN: the row has no label for that task (the
//   task is masked: no loss, no gradient, not scored)
//   feature f of sample i has ids ids[f][offsets[f][i] .. offsets[f][i+1])
//   (offsets[f] has B + 1 entries, offsets[f][0] == 0); ids are global rows of
//   the feature's table, in [0, vocab_size).
//   weights[f]: empty, or one weight per id of ids[f] (the COO values: the
//   combiner weighs each row by it; host/preprocess/coo.h).
//   teacher_prob [B]: the planted model's true probability (synthetic data
//   only; empty for file data).
//   mask [B]: 1 for a real sample, 0 for a row that holds none (padding
//   past the end of the data, a skipped malformed row): such rows weigh
//   nothing in the loss, are not scored, and have no ids in training
//   batches. Empty: every row real.
//   global_samples: the real samples of the global batch this batch is a
//   slice of, as scheduled (the training loss is their mean); 0: the
//   configured global batch.
struct Batch {
  int64_t num_samples = 0;
  int num_dense = 0;
  int num_tasks = 1;
  std::vector<float> dense;
  std::vector<float> labels;
  std::vector<std::vector<int64_t>> offsets;
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<float>> weights;
  std::vector<float> teacher_prob;
  std::vector<float> mask;
  int64_t global_samples = 0;

  // Sets the shape; keeps capacity. Clears ids, weights and the mask.
  void Resize(int64_t samples, int dense_features, int features, int tasks = 1) {
    num_samples = samples;
    num_dense = dense_features;
    num_tasks = tasks;
    dense.resize(samples * dense_features);
    labels.resize(samples * tasks);
    offsets.resize(features);
    ids.resize(features);
    weights.resize(features);
    for (int f = 0; f < features; ++f) {
      offsets[f].assign(samples + 1, 0);
      ids[f].clear();
      weights[f].clear();
    }
    mask.clear();
    global_samples = 0;
  }
  bool real(int64_t i) const { return mask.empty() || mask[i] != 0; }
  int num_features() const { return static_cast<int>(ids.size()); }
  std::span<const int64_t> SampleIds(int f, int64_t i) const {
    return std::span<const int64_t>(ids[f].data() + offsets[f][i],
                                    offsets[f][i + 1] - offsets[f][i]);
  }
  // The weights of SampleIds(f, i); empty when feature f has no weights.
  std::span<const float> SampleWeights(int f, int64_t i) const {
    if (weights[f].empty()) return {};
    return std::span<const float>(weights[f].data() + offsets[f][i],
                                  offsets[f][i + 1] - offsets[f][i]);
  }
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_BATCH_H_
