// SparseCore's debug checks (reference section 12; device/sparsecore/debug_checks.h):
// the guard words around its staging buffers, the gather indices against its
// shards, and non-finite values in its per-group outputs. Forward and Backward
// (sparse_core.cc) call them when the config switches them on.
#include <string>

#include "absl/strings/str_format.h"
#include "device/sparsecore/debug_checks.h"
#include "device/sparsecore/sparse_core.h"
#include "layout/coo_format.h"

namespace lemrt::device {

using layout::SameGroup;

absl::Status SparseCore::VerifyGuardWords(const SparseCoreStepState& state,
                                          std::string_view stage) const {
  const std::string where = absl::StrFormat("%s on SparseCore %d", stage, global_sc_);
  if (!state.gathered.empty()) {
    absl::Status st = VerifyGuards(state.gathered, "gathered", where);
    if (!st.ok()) return st;
  }
  if (!state.grad_acc.empty()) return VerifyGuards(state.grad_acc, "grad_acc", where);
  return absl::OkStatus();
}

absl::Status SparseCore::CheckBounds(
    std::span<const std::span<const layout::CooEntry>> segments) const {
  for (size_t k = 0; k < segments.size(); ++k) {
    for (size_t i = 0; i < segments[k].size(); ++i) {
      const layout::CooEntry& e = segments[k][i];
      if (e.table < 0 || e.table >= num_tables()) {
        return absl::OutOfRangeError(absl::StrFormat(
            "bounds check: sc_forward on SparseCore %d, segment %d entry %d: table index %d is "
            "outside [0, %d)",
            global_sc_, k, i, e.table, num_tables()));
      }
      const TableShard& shard = *shards_[e.table];
      const int64_t local = e.col >= 0 ? shard.LocalRow(e.col) : -1;
      if (local < 0 || local >= shard.local_rows() || shard.GlobalRow(local) != e.col) {
        return absl::OutOfRangeError(absl::StrFormat(
            "bounds check: sc_forward on SparseCore %d, segment %d entry %d: gather index "
            "(column %d of table '%s') is not a row of this SparseCore's shard (%d local rows, "
            "the columns c with c %% N == %d)",
            global_sc_, k, i, e.col, table_names_[e.table], shard.local_rows(),
            shard.GlobalRow(0)));  // the shard's residue (rotated by table stacking)
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SparseCore::CheckFiniteGroups(
    std::span<const std::span<const layout::CooEntry>> segments,
    std::span<const float* const> values, const char* what, const char* stage, int64_t step) const {
  for (size_t k = 0; k < segments.size(); ++k) {
    const std::span<const layout::CooEntry> seg = segments[k];
    const float* v = values[k];
    for (size_t i = 0; i < seg.size();) {
      const int dim = dims_[seg[i].table];
      const int64_t bad = FirstNonFinite(std::span<const float>(v, dim));
      if (bad >= 0) {
        return absl::InternalError(absl::StrFormat(
            "NaN check: step %d, stage %s: %s of table '%s' (feature %d, sample %d, element %d) "
            "is %f on SparseCore %d",
            step, stage, what, table_names_[seg[i].table], seg[i].feature, seg[i].row, bad,
            v[bad], global_sc_));
      }
      size_t j = i;
      while (j < seg.size() && SameGroup(seg[i], seg[j])) ++j;
      v += dim;
      i = j;
    }
  }
  return absl::OkStatus();
}

}  // namespace lemrt::device
