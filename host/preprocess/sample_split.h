// Sample-dimension minibatching (reference section 14): a vocabulary-
// dimension minibatch (host/preprocess/minibatch.h) whose partitions are still over
// their limits (a row so hot that its bucket alone does not fit) is split
// along the sample dimension: each source SparseCore's samples are cut into
// consecutive ranges, and sub-minibatch i holds the entries of every source
// SparseCore's i-th range. Every partition of a sub-minibatch holds the ids
// of fewer samples, so a hot row's ids spread over the sub-minibatches.
//
//   Plan:   per source SparseCore s, walk its samples in order and start a
//           new range where adding a sample would push any of its limited
//           partitions (stack, s, destination) past a limit (ids after
//           per-sample dedup, or distinct rows) -> the ranges this chip
//           needs; the caller agrees on the most over all chips.
//   Split:  exactly `parts` sub-minibatches (a source with fewer ranges
//           leaves the later ones empty), segment layout and entry order
//           kept, every sub-minibatch in the input's row_group: a row may
//           appear in several of them, so the SparseCore stage sums its
//           gradients over the group before its one update of the step.
//
// A single sample over a limit stays over (the limit check then reports or
// drops it). Thread-compatible; scratch buffers are reused, so a step whose
// minibatches fit allocates nothing once warm.
#ifndef LEMRT_HOST_PREPROCESS_SAMPLE_SPLIT_H_
#define LEMRT_HOST_PREPROCESS_SAMPLE_SPLIT_H_

#include <cstdint>
#include <vector>

#include "host/preprocess/coo.h"
#include "host/preprocess/minibatch.h"

namespace lemrt::host {

class SampleSplitter {
 public:
  // `options`: the minibatch splitter's (limits per stack, stacking, S, N).
  explicit SampleSplitter(const MinibatchOptions& options);

  // The sample ranges this chip needs so that every limited partition of
  // `mb` fits (1 when it does; at most the samples of a source SparseCore).
  // `samples_per_sc` = the local batch / S. Keeps the ranges for Split.
  int Plan(const layout::PartitionedCoo& mb, int64_t samples_per_sc);

  // Splits `mb` (the one of the last Plan) into out[0 .. parts), parts >=
  // Plan's result, reusing their buffers. out[0] keeps mb.ids_total, the
  // others count 0 (ids_total counts the step's ids once); ids_after_dedup
  // is each part's entries.
  void Split(const layout::PartitionedCoo& mb, int parts, layout::PartitionedCoo* out) const;

 private:
  // (stack, stacked row) key of an entry's id, as MinibatchSplitter's.
  uint64_t StackedKey(int table, int64_t col) const;
  int StackOf(uint64_t key) const { return static_cast<int>(key >> 48); }

  MinibatchOptions options_;
  int S_;
  int N_;
  int64_t per_sc_ = 0;
  // range_start_[s]: the first sample of each of source s's ranges.
  std::vector<std::vector<int64_t>> range_start_;
  // Scratch of Plan: one source's entries of limited stacks, the counts of
  // the current range per (stack, destination), the keys it holds.
  struct Item {
    int64_t sample;     // row in the local batch
    uint64_t key;       // StackedKey
    int64_t partition;  // stack x N + destination SparseCore
  };
  std::vector<Item> items_, sorted_;  // as collected; by sample (stable)
  std::vector<int64_t> sample_offsets_;  // counting sort by sample
  std::vector<layout::PartitionCount> counts_;
  std::vector<int64_t> touched_;
  // The current range's keys: open addressing, key + 1 per slot (0 =
  // empty), at most half full; seen_slots_ lists the used slots for reset.
  std::vector<uint64_t> seen_;
  std::vector<int64_t> seen_slots_;
  // Inserts `key` into seen_; true when it was not there.
  bool See(uint64_t key);
  void ClearSeen();
  mutable std::vector<int32_t> part_of_sample_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_PREPROCESS_SAMPLE_SPLIT_H_
