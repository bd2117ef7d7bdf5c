// Which tables shuffle their ids and with which permutation (config fields
// sparse_core.shuffle_ids, sparse_core.id_shuffle_seed and
// TableConfig.shuffle_ids; base/id_permutation.h). The host permutes a
// table's ids with it before partitioning (host/preprocess/batch_id_shuffle.h), the
// SparseCores' shards map placed rows back to original rows with it
// (device/sparsecore/table_shard.h), and checkpoints record it per table.
// Stateless; thread-safe.
#ifndef LEMRT_PROTO_ID_SHUFFLE_H_
#define LEMRT_PROTO_ID_SHUFFLE_H_

#include "base/id_permutation.h"
#include "base/random.h"
#include "proto/config.pb.h"

namespace lemrt::config {

// Whether table `t` of `config` shuffles its ids: its own shuffle_ids when
// set, else sparse_core.shuffle_ids.
inline bool ShufflesIds(const RunConfig& config, int t) {
  const TableConfig& table = config.tables(t);
  return table.has_shuffle_ids() ? table.shuffle_ids() : config.sparse_core().shuffle_ids();
}

// Table `t`'s permutation: keyed by (sparse_core.id_shuffle_seed, t) over
// [0, vocab_size) when it shuffles, else the identity.
inline base::IdPermutation TableIdPermutation(const RunConfig& config, int t) {
  if (!ShufflesIds(config, t)) return base::IdPermutation();
  return base::IdPermutation(
      config.tables(t).vocab_size(),
      base::HashKeys({config.sparse_core().id_shuffle_seed(), static_cast<uint64_t>(t)}));
}

}  // namespace lemrt::config

#endif  // LEMRT_PROTO_ID_SHUFFLE_H_
