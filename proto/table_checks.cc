// The embedding tables: names, sizes, combiners, optimizers and initializers,
// simulated quantization, the sizes that overflow the counters holding them;
// and the table queries the rest of lemrt uses (FindTable,
// TableStackingMismatch).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/row_key.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/config_check.h"
#include "proto/config_loader.h"
#include "proto/hot_row_rule.h"

namespace lemrt::config {

std::vector<std::string> TableWarnings(const RunConfig& c) {
  std::vector<std::string> warnings;
  for (int i = 0; i < c.tables_size(); ++i) {
    const TableConfig& t = c.tables(i);
    const OptimizerConfig::KindCase kind = t.optimizer().kind_case();
    const bool sgd = kind == OptimizerConfig::KIND_NOT_SET || kind == OptimizerConfig::kSgd;
    if (sgd && IsBf16(t.slot_dtype())) {
      warnings.push_back(absl::StrFormat(
          "tables[%d].slot_dtype: table '%s' has slot_dtype BF16 but its optimizer (SGD) keeps "
          "no slots, so the setting has no effect",
          i, t.name()));
    }
  }
  return warnings;
}

void CheckTables(const RunConfig& c, ConfigErrors& errors) {
  if (c.tables_size() == 0) errors.Fail({{"tables"}}, "at least one table is required");
  std::set<std::string> names;
  for (int i = 0; i < c.tables_size(); ++i) {
    const TableConfig& t = c.tables(i);
    auto at = [&](const char* f) { return FieldPath{{"tables", i}, {f}}; };
    if (t.name().empty()) errors.Fail({{"tables", i}}, "a table needs a name");
    if (!names.insert(t.name()).second) {
      errors.Fail(at("name"), absl::StrCat("duplicate table name '", t.name(), "'"));
    }
    if (t.vocab_size() <= 0) {
      errors.Fail(at("vocab_size"),
                  absl::StrCat("table '", t.name(), "': must be > 0, got ", t.vocab_size(),
                               t.has_vocab_size()
                                   ? ""
                                   : " (unset: give it, or feed the table through a "
                                     "readable data.schema.sparse.vocabulary_file)"));
    }
    if (t.dim() <= 0) {
      errors.Fail(at("dim"), absl::StrCat("table '", t.name(), "': must be > 0, got ", t.dim()));
    }
    if (t.combiner() == TableConfig::COMBINER_UNSPECIFIED) {
      errors.Fail(at("combiner"), absl::StrCat("table '", t.name(), "': set SUM, MEAN or SQRTN"));
    }
    if (t.has_optimizer()) CheckOptimizer(at("optimizer"), t.optimizer(), errors);
    if (t.initializer().has_uniform() && !FiniteNonNegative(t.initializer().uniform().scale())) {
      errors.Fail(at("initializer"), absl::StrCat("uniform.scale must be a finite number >= 0, got ",
                                                  t.initializer().uniform().scale()));
    }
    if (t.initializer().has_normal() && !FiniteNonNegative(t.initializer().normal().stddev())) {
      errors.Fail(at("initializer"), absl::StrCat("normal.stddev must be a finite number >= 0, got ",
                                                  t.initializer().normal().stddev()));
    }
  }
}

void CheckHotRows(const RunConfig& c, ConfigErrors& errors) {
  // Replicas per table: their gradients travel every step (all-gathered).
  constexpr int64_t kMaxHotRows = int64_t{1} << 20;
  if (c.sparse_core().hot_row_count_steps() < 1) {
    errors.Fail({{"sparse_core"}, {"hot_row_count_steps"}},
                absl::StrCat("must be >= 1, got ", c.sparse_core().hot_row_count_steps()));
  }
  for (int i = 0; i < c.tables_size(); ++i) {
    const TableConfig& t = c.tables(i);
    // A negative hot_rows is no source but an error to report.
    if (HotRowSourceOf(t) == HotRowSource::kNone && t.hot_rows() == 0) continue;
    auto at = [&](const char* f) { return FieldPath{{"tables", i}, {f}}; };
    const int64_t k = HotRowCount(t);
    if (t.hot_rows() < 0 || k > std::min(kMaxHotRows, std::max<int64_t>(t.vocab_size(), 0))) {
      errors.Fail(at("hot_rows"),
                  absl::StrFormat("table '%s': hot rows must be in [0, min(vocab_size %d, %d)], "
                                  "got %d",
                                  t.name(), t.vocab_size(), kMaxHotRows, k));
    }
    if (t.hot_row_ids_size() > 0 && t.hot_rows() != 0 && t.hot_rows() != t.hot_row_ids_size()) {
      errors.Fail(at("hot_rows"),
                  absl::StrFormat("table '%s': hot_rows %d but hot_row_ids lists %d rows; give "
                                  "one of them",
                                  t.name(), t.hot_rows(), t.hot_row_ids_size()));
    }
    std::set<int64_t> seen;
    for (int64_t id : t.hot_row_ids()) {
      if (id < 0 || id >= t.vocab_size()) {
        errors.Fail(at("hot_row_ids"),
                    absl::StrFormat("table '%s': hot row %d is outside [0, vocab_size %d)",
                                    t.name(), id, t.vocab_size()));
        break;
      }
      if (!seen.insert(id).second) {
        errors.Fail(at("hot_row_ids"),
                    absl::StrFormat("table '%s': hot row %d is listed twice", t.name(), id));
        break;
      }
    }
    if (t.has_quantization()) {
      errors.Fail(at("hot_rows"),
                  absl::StrCat("table '", t.name(),
                               "': hot-row replication does not support simulated quantization "
                               "(the replicas' lookups would read unquantized rows)"));
    }
  }
}

void CheckQuantization(const RunConfig& c, ConfigErrors& errors) {
  for (int i = 0; i < c.tables_size(); ++i) {
    if (!c.tables(i).has_quantization()) continue;
    const QuantizationConfig& q = c.tables(i).quantization();
    const std::string& name = c.tables(i).name();
    auto at = [&](const char* f) { return FieldPath{{"tables", i}, {"quantization"}, {f}}; };
    if (q.num_buckets() < 2) {
      errors.Fail(at("num_buckets"),
                  absl::StrCat("table '", name, "': must be >= 2, got ", q.num_buckets()));
    }
    if (!q.has_low() || !q.has_high()) {
      errors.Fail(at(q.has_low() ? "high" : "low"),
                  absl::StrCat("table '", name, "': quantization needs both low and high"));
    } else if (!std::isfinite(q.low()) || !std::isfinite(q.high()) || !(q.low() < q.high()) ||
               !std::isfinite(q.high() - q.low())) {
      errors.Fail(at("high"), absl::StrCat("table '", name, "': needs finite low < high, got low ",
                                           q.low(), " high ", q.high()));
    }
  }
}

// The counters, and why their limits hold:
//  - 32 bits count the COO entries of one step: a partition's ids
//    (layout::PartitionCount), the entry indices of a SparseCore's dedup
//    (device::KeyIndex, SparseCoreStepState::entry_unique). One SparseCore
//    receives at most every id of the step, global_batch x ids per sample,
//    and ids per sample <= the sum of the features' max_sequence_length
//    because ingest holds each sample's list of feature f to
//    max_sequence_length ids (host data sources). The check below keeps
//    that product within int32.
//  - A row key holds 2^48 rows and 2^16 tables (base/row_key.h).
//  - 64 bits count a table's bytes (vocab_size x dim x 4 bytes x up to 3
//    copies with optimizer slots).
void CheckCounterSizes(const RunConfig& c, ConfigErrors& errors) {
  constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
  int64_t ids_per_sample = 0;
  for (const FeatureConfig& f : c.features()) {
    ids_per_sample += std::max<int64_t>(f.max_sequence_length(), 0);
  }
  const int64_t batch = c.training().global_batch();
  if (batch > 0 && ids_per_sample > 0 && batch > kMaxInt32 / ids_per_sample) {
    errors.Fail({{"training"}, {"global_batch"}},
                absl::StrFormat("%d samples x %d ids per sample (the features' "
                                "max_sequence_length summed) is more than %d ids per step, which "
                                "overflows 32-bit counters; use a smaller batch",
                                batch, ids_per_sample, kMaxInt32));
  }
  if (c.tables_size() > base::kMaxKeyTables) {
    errors.Fail({{"tables"}}, absl::StrFormat("%d tables are more than the %d a row key holds "
                                              "(base/row_key.h)",
                                              c.tables_size(), base::kMaxKeyTables));
  }
  for (int i = 0; i < c.tables_size(); ++i) {
    const TableConfig& t = c.tables(i);
    if (t.vocab_size() > base::kMaxKeyRows) {
      errors.Fail({{"tables", i}, {"vocab_size"}},
                  absl::StrFormat("table '%s': %d rows are more than the 2^48 = %d rows a row "
                                  "key holds (table << 48 | row); split the table",
                                  t.name(), t.vocab_size(), base::kMaxKeyRows));
      continue;
    }
    const int64_t max_elements = std::numeric_limits<int64_t>::max() / (4 * 3);
    if (t.vocab_size() > 0 && t.dim() > 0 && t.vocab_size() > max_elements / t.dim()) {
      errors.Fail({{"tables", i}, {"vocab_size"}},
                  absl::StrFormat("table '%s': %d rows x dim %d overflows 64-bit byte counts",
                                  t.name(), t.vocab_size(), t.dim()));
    }
  }
}

int64_t GradientBlockSamples(const TrainingConfig& training) {
  if (!training.world_size_independent()) return 0;
  if (training.gradient_block_samples() > 0) return training.gradient_block_samples();
  const int64_t global = training.global_batch();
  return global / std::gcd(global, int64_t{4});
}

int FindTable(const RunConfig& config, std::string_view name) {
  for (int i = 0; i < config.tables_size(); ++i) {
    if (config.tables(i).name() == name) return i;
  }
  return -1;
}

std::string TableStackingMismatch(const RunConfig& config, int a, int b) {
  const TableConfig& ta = config.tables(a);
  const TableConfig& tb = config.tables(b);
  const auto padded = [](int dim) { return (dim + 7) / 8 * 8; };
  if (padded(ta.dim()) != padded(tb.dim())) {
    return absl::StrFormat("padded dims differ (%d vs %d floats)", padded(ta.dim()),
                           padded(tb.dim()));
  }
  if (IsBf16(ta.dtype()) != IsBf16(tb.dtype())) {
    return absl::StrFormat("dtypes differ (%s vs %s)", IsBf16(ta.dtype()) ? "BF16" : "FP32",
                           IsBf16(tb.dtype()) ? "BF16" : "FP32");
  }
  if (ta.combiner() != tb.combiner()) {
    return absl::StrFormat("combiners differ (%s vs %s)", TableConfig::Combiner_Name(ta.combiner()),
                           TableConfig::Combiner_Name(tb.combiner()));
  }
  // The effective optimizers: unset kind = SGD, unset rate = the training one.
  auto effective = [&](const TableConfig& t) {
    OptimizerConfig o = t.optimizer();
    if (!o.has_learning_rate()) o.set_learning_rate(config.training().embedding_learning_rate());
    if (o.kind_case() == OptimizerConfig::KIND_NOT_SET) o.mutable_sgd();
    return o;
  };
  // Equivalent() treats an unset message as an empty one, so compare the
  // kinds first.
  if (effective(ta).kind_case() != effective(tb).kind_case() ||
      !google::protobuf::util::MessageDifferencer::Equivalent(effective(ta), effective(tb))) {
    return absl::StrFormat("optimizer configs differ ({%s} vs {%s})",
                           effective(ta).ShortDebugString(), effective(tb).ShortDebugString());
  }
  return "";
}

}  // namespace lemrt::config
