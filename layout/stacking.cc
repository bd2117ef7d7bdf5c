#include "layout/stacking.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"
#include "proto/config_loader.h"

namespace lemrt::layout {
namespace {

// The reference's advice on stack sizes (section 10).
constexpr int kFewestTablesPerStack = 5;
constexpr int kMostTablesPerStack = 100;

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace

void StackingPlan::Place(int total_sparse_cores, int rotation,
                         const std::vector<int64_t>& vocab_sizes) {
  n_ = std::max(1, total_sparse_cores);
  rotation_ = rotation;
  tables_.assign(vocab_sizes.size(), StackedTable{});
  for (int s = 0; s < num_stacks(); ++s) {
    TableStack& stack = stacks_[s];
    stack.rows = 0;
    for (int k = 0; k < static_cast<int>(stack.tables.size()); ++k) {
      StackedTable& m = tables_[stack.tables[k]];
      m.stack = s;
      m.member = k;
      m.row_offset = stack.rows;
      m.padded_rows = RoundUp(vocab_sizes[stack.tables[k]], n_);
      m.sc_shift = static_cast<int>((int64_t{k} * rotation) % n_);
      stack.rows += m.padded_rows;
    }
  }
}

StackingPlan StackingPlan::FromGroups(const std::vector<std::vector<int>>& groups,
                                      const std::vector<int64_t>& vocab_sizes,
                                      int total_sparse_cores, int rotation) {
  StackingPlan plan;
  for (const std::vector<int>& g : groups) {
    CHECK(!g.empty());
    TableStack stack;
    stack.tables = g;
    stack.name = absl::StrJoin(g, "+");
    plan.stacks_.push_back(std::move(stack));
  }
  plan.Place(total_sparse_cores, rotation, vocab_sizes);
  return plan;
}

StackingPlan StackingPlan::FromConfig(const config::RunConfig& config) {
  const config::SparseCoreConfig& sc = config.sparse_core();
  const int T = config.tables_size();
  std::vector<int> stack_of(T, -1);
  StackingPlan plan;
  plan.enabled_ = !sc.disable_table_stacking();
  auto add_to = [&](int s, int t) {
    plan.stacks_[s].tables.push_back(t);
    stack_of[t] = s;
  };
  for (const config::TableStackConfig& explicit_stack : sc.table_stacks()) {
    plan.stacks_.emplace_back();
    plan.stacks_.back().name = explicit_stack.name();
    for (const std::string& name : explicit_stack.tables()) {
      add_to(plan.num_stacks() - 1, config::FindTable(config, name));
    }
  }
  const bool automatic = plan.enabled_ && sc.table_stacks_size() == 0;
  for (int t = 0; t < T; ++t) {
    if (stack_of[t] >= 0) continue;
    int join = -1;
    for (int s = 0; automatic && s < plan.num_stacks() && join < 0; ++s) {
      if (config::TableStackingMismatch(config, plan.stacks_[s].tables[0], t).empty()) join = s;
    }
    if (join < 0) {
      plan.stacks_.emplace_back();
      join = plan.num_stacks() - 1;
    }
    add_to(join, t);
  }
  // Stacks in the order of their first member (explicit ones included).
  std::stable_sort(plan.stacks_.begin(), plan.stacks_.end(),
                   [](const TableStack& a, const TableStack& b) {
                     return *std::min_element(a.tables.begin(), a.tables.end()) <
                            *std::min_element(b.tables.begin(), b.tables.end());
                   });
  std::vector<int64_t> vocab(T);
  for (int t = 0; t < T; ++t) vocab[t] = config.tables(t).vocab_size();
  for (TableStack& stack : plan.stacks_) {
    if (stack.name.empty()) {
      std::vector<std::string> names;
      for (int t : stack.tables) names.push_back(config.tables(t).name());
      stack.name = absl::StrJoin(names, "+");
    }
    stack.padded_dim = static_cast<int>(RoundUp(config.tables(stack.tables[0]).dim(), 8));
  }
  // Unset: SparseCores per chip, or 1 with world-size-independent sums: the
  // rotation orders the SparseCores whose partials pool a multi-hot sample,
  // so it must be a function of the total SparseCore count alone there.
  const int rotation = sc.has_table_stacking_rotation() ? sc.table_stacking_rotation()
                       : config.training().world_size_independent()
                           ? 1
                           : config.topology().sparse_cores_per_chip();
  plan.Place(static_cast<int>(config::TotalSparseCores(config)), rotation, vocab);
  for (int f = 0; f < config.features_size(); ++f) {
    const int t = config::FindTable(config, config.features(f).table());
    plan.stacks_[plan.tables_[t].stack].features.push_back(f);
  }
  plan.AdviseSizes(config);
  return plan;
}

void StackingPlan::AdviseSizes(const config::RunConfig& config) {
  if (!enabled_) return;
  std::vector<std::string> advice;
  std::vector<bool> named(stacks_.size(), false);
  for (size_t s = 0; s < stacks_.size(); ++s) {
    const int n = static_cast<int>(stacks_[s].tables.size());
    if (n > kMostTablesPerStack) {
      advice.push_back(absl::StrFormat(
          "stack '%s' holds %d tables, more than %d: split it into sparse_core.table_stacks "
          "entries of at most %d (huge stacks make huge tables)",
          stacks_[s].name, n, kMostTablesPerStack, kMostTablesPerStack));
    }
    if (n >= kFewestTablesPerStack || named[s]) continue;
    // Small stacks that could be one: explicit groups kept them apart.
    std::vector<std::string> together = {absl::StrCat("'", stacks_[s].name, "'")};
    int tables = n;
    for (size_t o = s + 1; o < stacks_.size(); ++o) {
      if (named[o] || stacks_[o].tables.size() >= static_cast<size_t>(kFewestTablesPerStack)) {
        continue;
      }
      if (config::TableStackingMismatch(config, stacks_[s].tables[0], stacks_[o].tables[0])
              .empty()) {
        together.push_back(absl::StrCat("'", stacks_[o].name, "'"));
        tables += static_cast<int>(stacks_[o].tables.size());
        named[o] = true;
      }
    }
    if (together.size() > 1) {
      advice.push_back(absl::StrFormat(
          "stacks %s (%d tables in all) could stack together: list their tables in one "
          "sparse_core.table_stacks entry (fewer than %d tables per stack hide little exchange "
          "latency)",
          absl::StrJoin(together, ", "), tables, kFewestTablesPerStack));
    }
  }
  if (!advice.empty()) size_advice_ = absl::StrCat("table stacking: ", absl::StrJoin(advice, "; "));
}

std::pair<int, int64_t> StackingPlan::Unstack(int stack, int64_t stacked_row) const {
  const TableStack& s = stacks_[stack];
  // Members are in row order: the last one starting at or before the row.
  int k = static_cast<int>(s.tables.size()) - 1;
  while (k > 0 && tables_[s.tables[k]].row_offset > stacked_row) --k;
  const StackedTable& m = tables_[s.tables[k]];
  const int64_t q = stacked_row - m.row_offset;
  const int64_t r = q % n_;
  const int64_t unrotated = (r - m.sc_shift % n_ + n_) % n_;
  return {s.tables[k], q - r + unrotated};
}

std::string StackingPlan::Describe(const std::vector<std::string>& table_names) const {
  std::string out =
      absl::StrFormat("table stacking %s: %d tables in %d stacks, rotation %d SparseCores (N = %d)",
                      enabled_ ? "on" : "off (sparse_core.disable_table_stacking)", num_tables(),
                      num_stacks(), rotation_, n_);
  for (const TableStack& s : stacks_) {
    std::vector<std::string> members;
    for (int t : s.tables) {
      members.push_back(
          absl::StrFormat("%s@%d>>%d", table_names[t], tables_[t].row_offset, tables_[t].sc_shift));
    }
    absl::StrAppendFormat(&out,
                          "\n  stack '%s': %d tables, %d rows, padded dim %d, %d features; "
                          "table@row_offset>>sc_shift: %s",
                          s.name, s.tables.size(), s.rows, s.padded_dim, s.features.size(),
                          absl::StrJoin(members, " "));
  }
  return out;
}

PartitionLimits StackLimits(const PartitionLimits& per_table, const StackingPlan& plan) {
  PartitionLimits out;
  for (const TableStack& s : plan.stacks()) {
    TableLimit limit{0, 0};
    for (int t : s.tables) {
      limit.max_ids = std::max(limit.max_ids, per_table.tables[t].max_ids);
      limit.max_unique_ids = std::max(limit.max_unique_ids, per_table.tables[t].max_unique_ids);
    }
    out.tables.push_back(limit);
    out.table_names.push_back(s.name);
  }
  return out;
}

void FillStackingStats(const StackingPlan& plan, const config::RunConfig& config,
                       summary::TableStackingStats* out) {
  out->set_enabled(plan.enabled());
  out->set_rotation(plan.rotation());
  out->clear_stacks();
  for (const TableStack& s : plan.stacks()) {
    summary::StackStats* stack = out->add_stacks();
    stack->set_name(s.name);
    stack->set_rows(static_cast<double>(s.rows));
    stack->set_padded_dim(s.padded_dim);
    for (int t : s.tables) {
      stack->add_tables(config.tables(t).name());
      stack->add_row_offsets(static_cast<double>(plan.table(t).row_offset));
      stack->add_sc_shifts(plan.table(t).sc_shift);
    }
  }
}

}  // namespace lemrt::layout
