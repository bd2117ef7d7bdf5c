// DotInteraction: the DLRM dot-product feature interaction. For each sample it
// takes n = F + 1 vectors of width d (z_0 from the bottom MLP, z_1..z_F from
// the embeddings) and emits z_0 followed by every pairwise dot product.
// Stateless apart from its shape, so immutable (and thus thread-safe) once
// constructed.
#ifndef LEMRT_DEVICE_TENSORCORE_INTERACTION_H_
#define LEMRT_DEVICE_TENSORCORE_INTERACTION_H_

#include <cstdint>

namespace lemrt::device {

// Each sample's n vectors may lie anywhere: vector i of sample b starts at
// base[i] + b * stride[i] (in floats), so the vectors are read where the
// bottom MLP and the embedding lookup left them (no copy into one buffer),
// and their gradients are written where the bottom MLP's backward and the
// embedding gradient expect them. base and stride hold n entries each and
// are caller-owned.
template <typename T>
struct InteractionVectors {
  T* const* base = nullptr;
  const int64_t* stride = nullptr;
  T* Row(int64_t b, int i) const { return base[i] + b * stride[i]; }
};

// Output layout, row-major [batch x output_width()], per sample:
//
//   | z_0 [d] | <z_0,z_1> <z_0,z_2> ... <z_0,z_F> <z_1,z_2> ... <z_{F-1},z_F> |
//
// i.e. d + n(n-1)/2 values: z_0, then dot(z_i, z_j) for all 0 <= i < j < n in
// row-major order of (i, j).
class DotInteraction {
 public:
  // Precondition (CHECKed): num_vectors >= 1, dim >= 1.
  DotInteraction(int num_vectors, int dim);

  int num_vectors() const { return num_vectors_; }
  int dim() const { return dim_; }
  int num_pairs() const { return num_vectors_ * (num_vectors_ - 1) / 2; }
  int input_width() const { return num_vectors_ * dim_; }
  int output_width() const { return dim_ + num_pairs(); }

  // For samples b in [begin, end): row b of out [.. x output_width] = the
  // interaction of sample b's vectors in `in`. out must not overlap them.
  void Forward(int64_t begin, int64_t end, InteractionVectors<const float> in,
               float* out) const;

  // For samples b in [begin, end): sample b's vectors in d_in = dLoss/d z,
  // given the forward input `in` and row b of d_out = dLoss/d out [.. x
  // output_width]. Overwrites those vectors of d_in, which must not overlap
  // the other buffers (nor each other).
  void Backward(int64_t begin, int64_t end, InteractionVectors<const float> in,
                const float* d_out, InteractionVectors<float> d_in) const;

 private:
  int num_vectors_;
  int dim_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_INTERACTION_H_
