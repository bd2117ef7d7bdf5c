// What host preprocessing holds each step to: the per-chip and per-table id
// limits, the partition limits (layout/limits.h) and table stacking
// (layout/stacking.h).
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/config_check.h"
#include "proto/config_loader.h"

namespace lemrt::config {

void CheckIdLimits(const RunConfig& c, ConfigErrors& errors) {
  const SparseCoreConfig& s = c.sparse_core();
  if (s.max_ids_per_chip_per_sample() <= 0) {
    errors.Fail({{"sparse_core"}, {"max_ids_per_chip_per_sample"}},
                absl::StrCat("must be > 0, got ", s.max_ids_per_chip_per_sample()));
  }
  for (const auto* map : {&s.max_ids_per_table(), &s.max_unique_ids_per_table()}) {
    const char* field =
        map == &s.max_ids_per_table() ? "max_ids_per_table" : "max_unique_ids_per_table";
    for (const auto& [name, limit] : *map) {
      if (FindTable(c, name) < 0) {
        errors.Fail({{"sparse_core"}, {field}}, absl::StrCat("unknown table '", name, "'"));
      } else if (limit <= 0) {
        errors.Fail({{"sparse_core"}, {field}},
                    absl::StrCat("table '", name, "': must be > 0, got ", limit));
      }
    }
  }
}

void CheckPartitionLimits(const RunConfig& c, ConfigErrors& errors) {
  const SparseCoreConfig& s = c.sparse_core();
  if (s.has_max_ids_per_partition() && s.max_ids_per_partition() <= 0) {
    errors.Fail({{"sparse_core"}, {"max_ids_per_partition"}},
                absl::StrCat("must be > 0, got ", s.max_ids_per_partition()));
  }
  if (s.has_max_unique_ids_per_partition() && s.max_unique_ids_per_partition() <= 0) {
    errors.Fail({{"sparse_core"}, {"max_unique_ids_per_partition"}},
                absl::StrCat("must be > 0, got ", s.max_unique_ids_per_partition()));
  }
  if (s.has_limits_file() && s.limits_file().empty()) {
    errors.Fail({{"sparse_core"}, {"limits_file"}},
                "is set but empty; name a LimitsFile text proto");
  }
}

void CheckTableStacking(const RunConfig& c, ConfigErrors& errors) {
  const SparseCoreConfig& s = c.sparse_core();
  if (s.table_stacking_rotation() < 0) {
    errors.Fail({{"sparse_core"}, {"table_stacking_rotation"}},
                absl::StrCat("must be >= 0 SparseCores, got ", s.table_stacking_rotation()));
  }
  if (s.table_stacks_size() > 0 && s.disable_table_stacking()) {
    errors.Fail({{"sparse_core"}, {"table_stacks", 0}},
                "explicit table_stacks and disable_table_stacking: true contradict each other; "
                "remove one");
  }
  std::set<std::string> stack_names;
  std::vector<int> stack_of(c.tables_size(), -1);
  for (int i = 0; i < s.table_stacks_size(); ++i) {
    const TableStackConfig& st = s.table_stacks(i);
    auto at = [&](const char* f) { return FieldPath{{"sparse_core"}, {"table_stacks", i}, {f}}; };
    if (st.tables_size() == 0) errors.Fail(at("tables"), "a stack needs at least one table");
    if (st.has_name() && !stack_names.insert(st.name()).second) {
      errors.Fail(at("name"), absl::StrCat("duplicate stack name '", st.name(), "'"));
    }
    for (const std::string& name : st.tables()) {
      const int t = FindTable(c, name);
      if (t < 0) {
        errors.Fail(at("tables"), absl::StrCat("unknown table '", name, "'"));
        continue;
      }
      if (stack_of[t] >= 0) {
        errors.Fail(at("tables"), absl::StrFormat("table '%s' is already in table_stacks[%d]",
                                                  name, stack_of[t]));
        continue;
      }
      stack_of[t] = i;
      const int first = FindTable(c, st.tables(0));
      const std::string why = first < 0 ? "" : TableStackingMismatch(c, first, t);
      if (!why.empty()) {
        errors.Fail(at("tables"), absl::StrFormat("tables '%s' and '%s' cannot share a stack: %s",
                                                  st.tables(0), name, why));
      }
    }
  }
}

}  // namespace lemrt::config
