// DotInteraction: the DLRM dot-product feature interaction. For each sample it
// takes n = F + 1 vectors of width d (z_0 from the bottom MLP, z_1..z_F from
// the embeddings) and emits z_0 followed by every pairwise dot product.
// Stateless apart from its shape, so immutable (and thus thread-safe) once
// constructed.
#ifndef LEMRT_DEVICE_TENSORCORE_INTERACTION_H_
#define LEMRT_DEVICE_TENSORCORE_INTERACTION_H_

#include <cstdint>

namespace lemrt::device {

// Input layout, row-major [batch x n x d] (sample-major):
//
//   sample b: | z_0 [d] | z_1 [d] | ... | z_F [d] |   at in + b * n * d
//
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

  // out [batch x output_width] = interaction of in [batch x input_width].
  // Buffers are caller-owned and must not overlap. batch >= 0.
  void Forward(int64_t batch, const float* in, float* out) const;

  // d_in [batch x input_width] = dLoss/d in, given the forward input `in` and
  // d_out = dLoss/d out [batch x output_width]. Overwrites d_in, which must
  // not overlap the other buffers.
  void Backward(int64_t batch, const float* in, const float* d_out,
                float* d_in) const;

 private:
  int num_vectors_;
  int dim_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_INTERACTION_H_
