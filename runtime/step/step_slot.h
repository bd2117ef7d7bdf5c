// The buffers of one training step in flight, handed from stage to stage
// (host -> SparseCore forward -> TensorCore -> SparseCore backward). The
// trainer keeps two (runtime/step/step_pipeline.h): step i+1's lookup fills one
// while the TensorCore reads the other. Thread-compatible: one stage at a
// time works on a slot.
#ifndef LEMRT_RUNTIME_STEP_STEP_SLOT_H_
#define LEMRT_RUNTIME_STEP_STEP_SLOT_H_

#include <cstdint>
#include <span>
#include <vector>

#include "host/batch.h"
#include "host/preprocess/coo.h"
#include "runtime/step/sparsecore_stage.h"

namespace lemrt::runtime {

struct StepSlot {
  int64_t step = -1;
  host::Batch batch;
  layout::PartitionedCoo coo;  // the step's whole COO (ids counts; eval chunks)
  // The step's vocabulary-dimension minibatches and their SparseCore buffers
  // (runtime/step/host_stage.h); one minibatch when the step fits its limits.
  std::vector<layout::PartitionedCoo> minibatches;
  // What the SparseCore stage runs: `minibatches`, or their serialized
  // table groups in `table_groups` (runtime/step/table_serialization.h; grows,
  // never shrinks, so a serialized step allocates nothing).
  std::vector<layout::PartitionedCoo> table_groups;
  std::span<const layout::PartitionedCoo> sc_coos;
  std::vector<SparseStepBuffers> minibatch_sparse;
  // The step's entries of replicated hot rows (runtime/hot_rows/hot_row_replicas.h).
  std::vector<host::HotEntry> hot;
  std::vector<float> activations;    // [local batch x activation width]
  std::vector<float> d_activations;  // same layout
  double loss_sum = 0;               // this chip's loss sum (TensorCore stage)
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_STEP_STEP_SLOT_H_
