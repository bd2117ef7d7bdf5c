#include "layout/row_placement.h"

#include <algorithm>
#include <utility>

#include "glog/logging.h"
#include "proto/config_loader.h"
#include "proto/id_shuffle.h"

namespace lemrt::layout {

RowPlacement RowPlacement::FromConfig(const config::RunConfig& config) {
  std::vector<int64_t> vocab_sizes;
  std::vector<base::IdPermutation> permutations;
  std::vector<HotRows> hot_rows;
  for (int t = 0; t < config.tables_size(); ++t) {
    const config::TableConfig& table = config.tables(t);
    vocab_sizes.push_back(table.vocab_size());
    permutations.push_back(config::TableIdPermutation(config, t));
    HotRows hot;
    hot.source = config::HotRowSourceOf(table);
    hot.count = hot.source == config::HotRowSource::kNone ? 0 : config::HotRowCount(table);
    if (hot.source == config::HotRowSource::kListed) {
      hot.listed.assign(table.hot_row_ids().begin(), table.hot_row_ids().end());
    }
    hot_rows.push_back(std::move(hot));
  }
  return RowPlacement(StackingPlan::FromConfig(config),
                      std::max(1, config.topology().sparse_cores_per_chip()),
                      std::move(vocab_sizes), std::move(permutations), std::move(hot_rows));
}

RowPlacement::RowPlacement(StackingPlan stacking, int sparse_cores_per_chip,
                           std::vector<int64_t> vocab_sizes,
                           std::vector<base::IdPermutation> permutations,
                           std::vector<HotRows> hot_rows)
    : stacking_(std::move(stacking)),
      n_(stacking_.total_sparse_cores()),
      s_(sparse_cores_per_chip),
      vocab_sizes_(std::move(vocab_sizes)),
      permutations_(std::move(permutations)),
      hot_rows_(std::move(hot_rows)) {
  const size_t tables = vocab_sizes_.size();
  CHECK_EQ(stacking_.num_tables(), static_cast<int>(tables));
  CHECK_GE(s_, 1);
  if (permutations_.empty()) permutations_.resize(tables);
  if (hot_rows_.empty()) hot_rows_.resize(tables);
  CHECK_EQ(permutations_.size(), tables);
  CHECK_EQ(hot_rows_.size(), tables);
}

RowHome RowPlacement::Home(int t, int64_t id) const {
  RowHome home;
  home.placed_row = PlacedRow(t, id);
  home.global_sc = OwnerSc(t, home.placed_row);
  home.chip = home.global_sc / s_;
  home.local_sc = home.global_sc % s_;
  home.local_row = LocalRow(home.placed_row);
  return home;
}

bool RowPlacement::any_hot_rows() const {
  return std::any_of(hot_rows_.begin(), hot_rows_.end(),
                     [](const HotRows& h) { return h.source != config::HotRowSource::kNone; });
}

}  // namespace lemrt::layout
