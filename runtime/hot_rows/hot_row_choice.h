// Chooses the hot rows of every table (TableConfig.hot_rows, hot_row_ids,
// sparse_core.hot_row_count_steps) the same on every rank, for
// runtime/hot_rows/hot_row_replicas.h and lemrt_limits --hot_rows.
//
// A table that lists hot_row_ids replicates those. A table with hot_rows = K
// and no list replicates its K most frequent ids over training batches 0 ..
// hot_row_count_steps - 1 (all ranks' samples): each rank counts its own
// batches, offers its 4K most frequent ids, and the union's ids are counted
// exactly over all ranks (two all-reduces); ties go to the smaller id. An id
// among the K hottest of all ranks together but among no rank's 4K hottest
// would be missed; fewer than K rows are chosen when fewer distinct ids were
// seen.
#ifndef LEMRT_RUNTIME_HOT_ROWS_HOT_ROW_CHOICE_H_
#define LEMRT_RUNTIME_HOT_ROWS_HOT_ROW_CHOICE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "host/input/data_source.h"
#include "host/preprocess/hot_rows.h"
#include "proto/config.pb.h"
#include "runtime/comm/communicator.h"

namespace lemrt::runtime {

// Whether some table of `config` replicates rows.
bool AnyHotRows(const config::RunConfig& config);

struct HotRowChoice {
  // Per table, the chosen original row ids (sorted), and the share of the
  // counted ids (duplicates included) they hold; 1 for listed rows (not
  // counted), 0 for tables without hot rows.
  std::vector<std::vector<int64_t>> rows;
  std::vector<double> share;
  // The rows as placed ids (id shuffling applied), for the COO and the replicas.
  host::HotRowSet placed;
};

// Collective (every rank, same config). `source` reads this rank's training
// batches and must be a source of its own (the trainer's reads its steps in
// increasing order); it may be null when no table counts. Errors (agreed on
// every rank): the source's, naming the step.
absl::StatusOr<HotRowChoice> ChooseHotRows(const config::RunConfig& config, Communicator& comm,
                                           host::DataSource* source);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_HOT_ROWS_HOT_ROW_CHOICE_H_
