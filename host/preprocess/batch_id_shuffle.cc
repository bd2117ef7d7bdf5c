#include "host/preprocess/batch_id_shuffle.h"

#include <utility>

#include "layout/row_placement.h"
#include "proto/config_loader.h"

namespace lemrt::host {

IdShuffler IdShuffler::FromConfig(const config::RunConfig& config) {
  const layout::RowPlacement placement = layout::RowPlacement::FromConfig(config);
  std::vector<base::IdPermutation> per_feature;
  std::vector<int64_t> vocab_sizes;
  for (const config::FeatureConfig& f : config.features()) {
    const int t = config::FindTable(config, f.table());
    per_feature.push_back(placement.permutation(t));
    vocab_sizes.push_back(placement.vocab_size(t));
  }
  return IdShuffler(std::move(per_feature), std::move(vocab_sizes),
                    !config.sparse_core().enable_id_bound_check());
}

IdShuffler::IdShuffler(std::vector<base::IdPermutation> per_feature,
                       std::vector<int64_t> vocab_sizes, bool wrap)
    : per_feature_(std::move(per_feature)), vocab_sizes_(std::move(vocab_sizes)), wrap_(wrap) {
  for (const base::IdPermutation& p : per_feature_) active_ |= !p.identity();
}

void IdShuffler::Apply(Batch* batch) const {
  if (!active_) return;
  for (int f = 0; f < batch->num_features() && f < static_cast<int>(per_feature_.size()); ++f) {
    const base::IdPermutation& p = per_feature_[f];
    if (p.identity()) continue;
    const int64_t vocab = vocab_sizes_[f];
    for (int64_t& id : batch->ids[f]) {
      if (id >= 0 && id < vocab) {
        id = p.Forward(id);
      } else if (wrap_) {
        int64_t wrapped = id % vocab;
        if (wrapped < 0) wrapped += vocab;
        id = p.Forward(wrapped);
      }
    }
  }
}

}  // namespace lemrt::host
