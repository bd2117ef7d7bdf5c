#include "runtime/hot_rows/hot_row_choice.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "host/preprocess/coo.h"
#include "layout/row_placement.h"

namespace lemrt::runtime {

bool AnyHotRows(const config::RunConfig& config) {
  return layout::RowPlacement::FromConfig(config).any_hot_rows();
}

namespace {

// Candidates each rank offers per hot row asked for.
constexpr int64_t kCandidatesPerRow = 4;

// This rank's ids of the counted tables over training batches
// 0 .. hot_row_count_steps - 1; errors (the source's, naming the step) are
// agreed on every rank.
absl::Status CountThisRank(const config::RunConfig& config, Communicator& comm,
                           host::DataSource* source, host::RowIdCounter* counter) {
  absl::Status st = source == nullptr
                        ? absl::InternalError("ChooseHotRows: a table counts but no source")
                        : absl::OkStatus();
  const int64_t steps =
      std::min<int64_t>(config.sparse_core().hot_row_count_steps(), config.training().steps());
  host::Batch batch;
  for (int64_t s = 0; s < steps && st.ok(); ++s) {
    st = source->TrainBatch(s, &batch);
    if (!st.ok()) {
      st = absl::Status(st.code(),
                        absl::StrFormat("choosing hot rows, step %d: %s", s, st.message()));
    } else {
      counter->Add(batch);
    }
  }
  return AgreeOnStatus(comm, st);
}

// Collective, round 1: every rank offers its kCandidatesPerRow x K most
// frequent ids of each counted table (K = wanted[t] > 0; id + 1 in its own
// slice of an all-reduced vector; 0 = none); returns each table's union,
// sorted.
absl::StatusOr<std::vector<std::vector<int64_t>>> OfferCandidates(
    const std::vector<int64_t>& wanted, const host::RowIdCounter& counter, Communicator& comm) {
  const int tables = static_cast<int>(wanted.size());
  std::vector<int64_t> offer_begin(tables + 1, 0);
  for (int t = 0; t < tables; ++t) {
    offer_begin[t + 1] = offer_begin[t] + kCandidatesPerRow * wanted[t];
  }
  const int64_t per_rank = offer_begin[tables];
  std::vector<int64_t> offers(per_rank * comm.size(), 0);
  for (int t = 0; t < tables; ++t) {
    if (wanted[t] == 0) continue;
    const auto top = counter.Top(t, offer_begin[t + 1] - offer_begin[t]);
    for (size_t i = 0; i < top.size(); ++i) {
      offers[comm.rank() * per_rank + offer_begin[t] + static_cast<int64_t>(i)] = top[i].first + 1;
    }
  }
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(offers)));
  std::vector<std::vector<int64_t>> candidates(tables);
  for (int t = 0; t < tables; ++t) {
    if (wanted[t] == 0) continue;
    for (int r = 0; r < comm.size(); ++r) {
      for (int64_t i = offer_begin[t]; i < offer_begin[t + 1]; ++i) {
        if (offers[r * per_rank + i] > 0) candidates[t].push_back(offers[r * per_rank + i] - 1);
      }
    }
    std::sort(candidates[t].begin(), candidates[t].end());
    candidates[t].erase(std::unique(candidates[t].begin(), candidates[t].end()),
                        candidates[t].end());
  }
  return candidates;
}

// Collective, round 2: the candidates' exact counts over all ranks, in
// table then candidate order, followed by each table's total count.
absl::StatusOr<std::vector<int64_t>> CountCandidates(
    const std::vector<std::vector<int64_t>>& candidates, const std::vector<int64_t>& wanted,
    const host::RowIdCounter& counter, Communicator& comm) {
  const int tables = static_cast<int>(candidates.size());
  std::vector<int64_t> counts;
  for (int t = 0; t < tables; ++t) {
    for (int64_t id : candidates[t]) counts.push_back(counter.Count(t, id));
  }
  for (int t = 0; t < tables; ++t) counts.push_back(wanted[t] > 0 ? counter.Total(t) : 0);
  LEMRT_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(counts)));
  return counts;
}

// The K = wanted[t] hottest candidates of each counted table (ties to the
// smaller id) into choice->rows, sorted, and the share of the table's ids
// they hold.
void TakeHottest(const std::vector<int64_t>& wanted,
                 const std::vector<std::vector<int64_t>>& candidates,
                 const std::vector<int64_t>& counts, HotRowChoice* choice) {
  const int tables = static_cast<int>(wanted.size());
  int64_t at = 0;
  const int64_t totals_at = static_cast<int64_t>(counts.size()) - tables;
  for (int t = 0; t < tables; ++t) {
    std::vector<std::pair<int64_t, int64_t>> ranked;
    for (int64_t id : candidates[t]) ranked.push_back({id, counts[at++]});
    if (wanted[t] == 0) continue;
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    int64_t held = 0;
    for (const auto& [id, n] : ranked) {
      if (static_cast<int64_t>(choice->rows[t].size()) == wanted[t]) break;
      choice->rows[t].push_back(id);
      held += n;
    }
    std::sort(choice->rows[t].begin(), choice->rows[t].end());
    const int64_t total = counts[totals_at + t];
    choice->share[t] = total > 0 ? static_cast<double>(held) / static_cast<double>(total) : 0.0;
  }
}

// Chooses wanted[t] rows of each table with wanted[t] > 0 over all ranks:
// three collective rounds (CountThisRank's agreement, OfferCandidates,
// CountCandidates), then TakeHottest.
absl::Status ChooseCountedRows(const config::RunConfig& config, const std::vector<int64_t>& wanted,
                               Communicator& comm, host::DataSource* source, HotRowChoice* choice) {
  const int tables = config.tables_size();
  const host::CooOptions coo = host::MakeCooOptions(config);
  std::vector<int> feature_tables;
  for (const host::FeatureSpec& f : coo.features) feature_tables.push_back(f.table);
  std::vector<int64_t> vocab(tables);
  std::vector<char> counted(tables);
  for (int t = 0; t < tables; ++t) {
    vocab[t] = config.tables(t).vocab_size();
    counted[t] = wanted[t] > 0 ? 1 : 0;
  }
  host::RowIdCounter counter(feature_tables, vocab, counted, !coo.id_bound_check);
  LEMRT_RETURN_IF_ERROR(CountThisRank(config, comm, source, &counter));
  LEMRT_ASSIGN_OR_RETURN(const auto candidates, OfferCandidates(wanted, counter, comm));
  LEMRT_ASSIGN_OR_RETURN(const auto counts, CountCandidates(candidates, wanted, counter, comm));
  TakeHottest(wanted, candidates, counts, choice);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HotRowChoice> ChooseHotRows(const config::RunConfig& config, Communicator& comm,
                                           host::DataSource* source) {
  const int tables = config.tables_size();
  HotRowChoice choice;
  choice.rows.resize(tables);
  choice.share.assign(tables, 0.0);
  // Which rows and how many: the row placement's hot rows (listed ids win
  // over the count, proto/hot_row_rule.h).
  const layout::RowPlacement placement = layout::RowPlacement::FromConfig(config);
  std::vector<int64_t> wanted(tables, 0);
  bool any_counted = false;
  for (int t = 0; t < tables; ++t) {
    const layout::HotRows& hot = placement.hot_rows(t);
    if (hot.source == config::HotRowSource::kListed) {
      choice.rows[t] = hot.listed;
      std::sort(choice.rows[t].begin(), choice.rows[t].end());
      choice.share[t] = 1.0;
    } else if (hot.source == config::HotRowSource::kCounted) {
      wanted[t] = hot.count;
      any_counted = true;
    }
  }
  if (any_counted) {
    LEMRT_RETURN_IF_ERROR(ChooseCountedRows(config, wanted, comm, source, &choice));
  }
  std::vector<std::vector<int64_t>> placed(tables);
  for (int t = 0; t < tables; ++t) {
    for (int64_t id : choice.rows[t]) placed[t].push_back(placement.PlacedRow(t, id));
  }
  choice.placed = host::HotRowSet(std::move(placed));
  return choice;
}

}  // namespace lemrt::runtime
