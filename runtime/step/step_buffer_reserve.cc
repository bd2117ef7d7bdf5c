#include "runtime/step/step_buffer_reserve.h"

#include <algorithm>
#include <cstdint>

#include "base/huge_pages.h"
#include "device/sparsecore/debug_checks.h"
#include "host/preprocess/coo.h"

namespace lemrt::runtime {
namespace {

// Calls fn(&vector, bound) for every buffer of `out` and of its step states
// (Buffers: SparseStepBuffers, const or not).
template <typename Buffers, typename Fn>
void ForEachBuffer(const StepBufferBounds& b, Buffers* out, Fn&& fn) {
  const int64_t segs = b.segments_per_sparse_core * b.sparse_cores_per_chip;
  fn(&out->recv_entries, b.received_entries);
  fn(&out->owner_partials, b.partial_floats);
  fn(&out->grads_in, b.partial_floats);
  fn(&out->source_partials, b.partial_floats);
  fn(&out->grads_out, b.partial_floats);
  fn(&out->send_counts, segs);
  fn(&out->recv_counts, segs);
  fn(&out->recv_offsets, segs + 1);
  fn(&out->owner_offsets, segs + 1);
  fn(&out->source_offsets, segs + 1);
  for (auto& s : out->sc_states) {
    fn(&s.gathered, b.sc_unique_floats + 2 * device::kGuardFloats);
    fn(&s.grad_acc, b.sc_unique_floats + 2 * device::kGuardFloats);
    // The SparseCore sizes its per-unique-id arrays for every entry being
    // unique before it numbers them (device/sparsecore/partition_dedup.cc, SortedKeyNumbering).
    fn(&s.unique_keys, b.sc_ids);
    fn(&s.unique_offsets, b.sc_ids + 1);
    fn(&s.unique_rows, b.sc_ids);
    fn(&s.unique_single, b.sc_ids);
    fn(&s.unique_gain, b.sc_unique);
    fn(&s.unique_grad, b.sc_unique);
    fn(&s.entry_unique, b.sc_ids);
    fn(&s.entry_role, b.sc_ids);
    fn(&s.sort_scratch, b.sc_ids);
    fn(&s.sort_scratch2, b.sc_ids);
    fn(&s.segment_begin, b.segments_per_sparse_core + 1);
  }
}

}  // namespace

int64_t StepBufferBounds::bytes() const {
  SparseStepBuffers empty;
  empty.sc_states.resize(sparse_cores_per_chip);
  int64_t bytes = 0;
  ForEachBuffer(*this, &empty, [&](auto* v, int64_t n) {
    bytes += n * static_cast<int64_t>(sizeof(*v->data()));
  });
  return bytes;
}

StepBufferBounds StepBufferBoundsFromPlan(const config::RunConfig& config,
                                          const device::MemoryPlan& plan) {
  StepBufferBounds b;
  const int64_t S = plan.sparse_cores_per_chip;
  const int64_t N = int64_t{plan.num_chips} * S;
  const int64_t batch = config.training().global_batch();
  b.sparse_cores_per_chip = static_cast<int>(S);
  b.segments_per_sparse_core = int64_t{plan.num_chips} * S;
  int64_t ids_per_sample = 0;
  for (const device::StackPlan& s : plan.stacks) {
    const int64_t ids = N * s.limits.max_ids;
    const int64_t unique =
        std::min({N * s.limits.max_unique_ids, s.rows_per_sparse_core, ids});
    b.sc_ids += ids;
    b.sc_unique += unique;
    b.sc_unique_floats += unique * s.padded_dim;
    // A segment's (sample, feature) groups: at most its ids, and at most the
    // source SparseCore's samples x the stack's features; over the chip, at
    // most every id of the stack in the global batch.
    const int64_t groups = std::min(S * N * std::min(s.limits.max_ids, batch / N * s.num_features),
                                    batch * s.ids_per_sample);
    b.partial_floats += groups * s.padded_dim;
    ids_per_sample += s.ids_per_sample;
  }
  b.received_entries = std::min(S * b.sc_ids, batch * ids_per_sample);
  return b;
}

void ReserveStepBuffers(const StepBufferBounds& bounds, bool touch, SparseStepBuffers* buf) {
  buf->sc_states.resize(bounds.sparse_cores_per_chip);
  ForEachBuffer(bounds, buf, [touch](auto* v, int64_t n) {
    v->clear();
    base::ReserveOnHugePages(v, static_cast<size_t>(n));
    if (touch) {
      v->resize(n);  // value-initialised: every page written once
      v->clear();    // keeps the capacity
    }
  });
}

std::vector<const void*> StepBufferAddresses(const StepBufferBounds& bounds,
                                             const SparseStepBuffers& buf) {
  std::vector<const void*> out;
  ForEachBuffer(bounds, &buf, [&](const auto* v, int64_t) { out.push_back(v->data()); });
  return out;
}

}  // namespace lemrt::runtime
