// Start-up sizing of the SparseCore stage's per-step buffers (the warm-up).
// Each buffer of SparseStepBuffers and of its SparseCores' step
// states grows to exactly what a step needs; every step that needs more than
// any before reallocates it, and the new allocation's pages are faulted in
// again (on a VM, first-touch faults cost about 1 s per 500 MB). Reserving
// each buffer's bound once at start-up makes every later resize stay inside
// its capacity, so a buffer's pages are faulted in at most once; touching the
// reservation also moves that first fault to start-up, so that step 1 runs
// at the steady speed. Buffers of 2 MiB and more are advised onto
// transparent huge pages (faulted 2 MiB at a time).
//
// The bounds come from the memory plan's per-stack partition limits (the
// configured ones, or the conservative bound: every id of a source
// SparseCore's samples to one destination, unique ids at most the rows one
// SparseCore owns), N = total SparseCores, S = SparseCores per chip, B =
// global batch:
//   per SparseCore: ids      = sum over stacks of N x max_ids (also the
//                              size of the arrays the SparseCore numbers
//                              unique ids in)
//                   unique   = sum over stacks of min(N x max_unique_ids,
//                              rows per SparseCore, N x max_ids)
//                   floats   = sum over stacks of unique x padded_dim
//   per chip:       received entries = min(S x ids, B x ids per sample)
//                   partial floats   = sum over stacks of padded_dim x
//                                      min(S x N x min(max_ids, B / N x
//                                      features), B x ids per sample) (the
//                                      segments' (sample, feature) groups)
// Thread-compatible.
#ifndef LEMRT_RUNTIME_STEP_STEP_BUFFER_RESERVE_H_
#define LEMRT_RUNTIME_STEP_STEP_BUFFER_RESERVE_H_

#include <cstdint>
#include <vector>

#include "device/plan/memory_plan.h"
#include "proto/config.pb.h"
#include "runtime/step/sparsecore_stage.h"

namespace lemrt::runtime {

struct StepBufferBounds {
  int sparse_cores_per_chip = 0;
  int64_t segments_per_sparse_core = 0;  // world size x S
  int64_t received_entries = 0;          // per chip
  int64_t partial_floats = 0;            // per chip, each side of the exchange
  int64_t sc_ids = 0;                    // per SparseCore
  int64_t sc_unique = 0;                 // per SparseCore
  int64_t sc_unique_floats = 0;          // per SparseCore

  // Bytes one SparseStepBuffers reserves with these bounds.
  int64_t bytes() const;
};

StepBufferBounds StepBufferBoundsFromPlan(const config::RunConfig& config,
                                          const device::MemoryPlan& plan);

// Reserves every buffer of `buf` (and of its S SparseCore step states) to
// `bounds`; with `touch`, also writes each reserved byte once so that its
// pages are faulted in now. Leaves every buffer empty. Results of later
// steps do not change (only capacities do).
void ReserveStepBuffers(const StepBufferBounds& bounds, bool touch, SparseStepBuffers* buf);

// Where each buffer that ReserveStepBuffers reserves starts (tests: a step
// that outgrew one moved it).
std::vector<const void*> StepBufferAddresses(const StepBufferBounds& bounds,
                                             const SparseStepBuffers& buf);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_STEP_STEP_BUFFER_RESERVE_H_
