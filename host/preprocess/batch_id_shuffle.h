// Id shuffling on the host (reference section 10): rewrites a batch's ids of
// every shuffled table (proto/id_shuffle.h) to their placed ids P(j) before
// the COO builder partitions them, so that the mod sharding (host/preprocess/coo.h,
// layout/stacking.h) sends id j to SparseCore (P(j) + sc_shift) % N. Everything
// downstream of the host (partitions, limits, minibatches, the exchange, the
// shards' rows) works on placed ids; the shards map them back to original
// rows for initialisation, checkpoints and the model checksum. Immutable;
// thread-safe.
#ifndef LEMRT_HOST_PREPROCESS_BATCH_ID_SHUFFLE_H_
#define LEMRT_HOST_PREPROCESS_BATCH_ID_SHUFFLE_H_

#include <vector>

#include "base/id_permutation.h"
#include "host/batch.h"
#include "proto/config.pb.h"

namespace lemrt::host {

class IdShuffler {
 public:
  // The permutations of a validated config's tables
  // (layout::RowPlacement::permutation), per feature.
  static IdShuffler FromConfig(const config::RunConfig& config);
  // Explicit permutations per feature (tests): `wrap` as
  // sparse_core.enable_id_bound_check == false.
  IdShuffler(std::vector<base::IdPermutation> per_feature, std::vector<int64_t> vocab_sizes,
             bool wrap);

  // True when some feature's table shuffles (Apply changes something).
  bool active() const { return active_; }

  // Replaces every id j in [0, vocab_size) of a shuffled feature of `batch`
  // by P(j). An id outside the vocabulary is wrapped into it first when
  // `wrap`, else left for the COO builder's bound check to report (with the
  // id the data holds). Ids of unshuffled features are untouched.
  void Apply(Batch* batch) const;

 private:
  std::vector<base::IdPermutation> per_feature_;
  std::vector<int64_t> vocab_sizes_;
  bool wrap_ = false;
  bool active_ = false;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_PREPROCESS_BATCH_ID_SHUFFLE_H_
