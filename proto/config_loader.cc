#include "proto/config_loader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/row_key.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/text_file.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/config_check.h"

namespace lemrt::config {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::TextFormat;

class ParseErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit ParseErrorCollector(std::string_view source) : source_(source) {}
  void AddError(int line, int column, const std::string& message) override {
    if (first_.empty()) {
      first_ = absl::StrFormat("%s:%d:%d: %s", source_, line + 1, column + 1, message);
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string source_;
  std::string first_;
};

absl::Status ParseText(std::string_view text, std::string_view source, bool merge,
                       TextFormat::ParseInfoTree* tree, RunConfig* out) {
  TextFormat::Parser parser;
  ParseErrorCollector errors(source);
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(tree);
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  const bool ok = merge ? parser.Merge(&input, out) : parser.Parse(&input, out);
  if (!ok) {
    return absl::InvalidArgumentError(
        errors.first().empty() ? absl::StrCat(std::string(source), ": cannot parse config") : errors.first());
  }
  return absl::OkStatus();
}

// Where a parse tree places a field path: the line and column of the
// deepest field of `path` it holds, and how many fields of `path` deep that
// is (0: none).
struct Location {
  int line = 0;
  int column = 0;
  size_t depth = 0;
};

// Location of `path` (indices into the merged config) in `tree`, the parse
// tree of one text. `before` is what was parsed before that text (null for
// the first): its entries of a repeated field come first in the merged
// config, so the text's own entry k is merged entry k + their count.
Location Locate(const TextFormat::ParseInfoTree* tree, const FieldPath& path,
                const google::protobuf::Message* before) {
  const Descriptor* desc = RunConfig::descriptor();
  Location found;
  for (size_t i = 0; i < path.size() && tree != nullptr && desc != nullptr; ++i) {
    const FieldDescriptor* fd = desc->FindFieldByName(path[i].field);
    if (fd == nullptr) break;
    int index = -1;
    if (fd->is_repeated()) {
      const int earlier = before == nullptr ? 0 : before->GetReflection()->FieldSize(*before, fd);
      index = std::max(path[i].index, 0) - earlier;
      if (index < 0) break;  // an entry of the earlier text
    }
    auto loc = tree->GetLocation(fd, index);
    if (loc.line < 0) break;
    found = {loc.line + 1, loc.column + 1, i + 1};
    if (fd->type() != FieldDescriptor::TYPE_MESSAGE) break;
    if (before != nullptr) {
      // Below a singular message the earlier text's fields still come
      // first; below a repeated entry of this text there are none.
      before = fd->is_repeated() ? nullptr : &before->GetReflection()->GetMessage(*before, fd);
    }
    tree = tree->GetTreeForNested(fd, index);
    desc = fd->message_type();
  }
  return found;
}

class Validator {
 public:
  Validator(const RunConfig& c, int world_size) : c_(c), world_size_(world_size) {}

  std::optional<ConfigError> Run() {
    CheckTopology();
    CheckTables();
    CheckFeatures(c_, errors_);
    CheckModel();
    CheckTraining(c_, errors_);
    CheckSparseCore();
    CheckEmulatedChip();
    CheckQuantization();
    CheckPartitionLimits();
    CheckTableStacking();
    CheckHostWorkers();
    CheckStepBufferReserve();
    CheckData(c_, errors_);
    CheckObservability();
    CheckCheckpoint();
    CheckWatchdog();
    CheckCounterSizes();
    if (errors_.empty()) return std::nullopt;
    return errors_.first();
  }

 private:
  void Fail(FieldPath path, std::string message) { errors_.Fail(std::move(path), std::move(message)); }

  void CheckTopology() {
    const TopologyConfig& t = c_.topology();
    if (t.num_chips() != world_size_) {
      Fail({{"topology"}, {"num_chips"}},
           absl::StrFormat("is %d but the MPI world size is %d (leave num_chips unset to "
                           "use the world size)",
                           t.num_chips(), world_size_));
    }
    auto positive = [&](const char* name, int64_t v) {
      if (v <= 0) Fail({{"topology"}, {name}}, absl::StrCat("must be > 0, got ", v));
    };
    positive("sparse_cores_per_chip", t.sparse_cores_per_chip());
    positive("tiles_per_sparse_core", t.tiles_per_sparse_core());
    positive("simd_width", t.simd_width());
    positive("hbm_bytes", t.hbm_bytes());
    positive("spmem_bytes_per_tile", t.spmem_bytes_per_tile());
  }

  // The emulated chip's knobs (device/, README "The emulated chip").
  void CheckEmulatedChip() {
    const SparseCoreConfig& s = c_.sparse_core();
    if (s.xla_sc_num_serialized_tables_to_optimize_hbm() < 0) {
      Fail({{"sparse_core"}, {"xla_sc_num_serialized_tables_to_optimize_hbm"}},
           absl::StrCat("must be >= 0, got ", s.xla_sc_num_serialized_tables_to_optimize_hbm()));
    }
    if (s.tile_threads() < 1) {
      Fail({{"sparse_core"}, {"tile_threads"}},
           absl::StrCat("must be >= 1, got ", s.tile_threads()));
    }
  }

  // Host worker threads and their prefetch queue (runtime/host_prefetcher.h).
  void CheckHostWorkers() {
    const SparseCoreConfig& s = c_.sparse_core();
    if (s.maximum_parallel_iterations() < 0 || s.maximum_parallel_iterations() > 64) {
      Fail({{"sparse_core"}, {"maximum_parallel_iterations"}},
           absl::StrCat("must be in [0, 64] steps, got ", s.maximum_parallel_iterations()));
    }
    if (s.host_worker_threads() < 0 || s.host_worker_threads() > 256) {
      Fail({{"sparse_core"}, {"host_worker_threads"}},
           absl::StrCat("must be in [0, 256] (0 = cores per rank), got ",
                        s.host_worker_threads()));
    }
    const int32_t gemm_threads = c_.tensor_core().gemm_threads();
    if (gemm_threads < 0 || gemm_threads > 256) {
      Fail({{"tensor_core"}, {"gemm_threads"}},
           absl::StrCat("must be in [0, 256] (0 = from the cores this rank owns), got ",
                        gemm_threads));
    }
  }

  // Start-up reservation of the step buffers (runtime/step_buffer_reserve.h).
  void CheckStepBufferReserve() {
    const int32_t mib = c_.sparse_core().step_buffer_reserve_mib();
    if (mib < 0) {
      Fail({{"sparse_core"}, {"step_buffer_reserve_mib"}},
           absl::StrCat("must be >= 0 MiB (0 = off), got ", mib));
    }
  }

  // Simulated quantization per table (reference section 13).
  void CheckQuantization() {
    for (int i = 0; i < c_.tables_size(); ++i) {
      if (!c_.tables(i).has_quantization()) continue;
      const QuantizationConfig& q = c_.tables(i).quantization();
      const std::string& name = c_.tables(i).name();
      auto at = [&](const char* f) { return FieldPath{{"tables", i}, {"quantization"}, {f}}; };
      if (q.num_buckets() < 2) {
        Fail(at("num_buckets"), absl::StrCat("table '", name, "': must be >= 2, got ",
                                             q.num_buckets()));
      }
      if (!q.has_low() || !q.has_high()) {
        Fail(at(q.has_low() ? "high" : "low"),
             absl::StrCat("table '", name, "': quantization needs both low and high"));
      } else if (!std::isfinite(q.low()) || !std::isfinite(q.high()) || !(q.low() < q.high())) {
        Fail(at("high"), absl::StrCat("table '", name, "': needs finite low < high, got low ",
                                      q.low(), " high ", q.high()));
      }
    }
  }

  void CheckTables() {
    if (c_.tables_size() == 0) Fail({{"tables"}}, "at least one table is required");
    std::set<std::string> names;
    for (int i = 0; i < c_.tables_size(); ++i) {
      const TableConfig& t = c_.tables(i);
      auto at = [&](const char* f) { return FieldPath{{"tables", i}, {f}}; };
      if (t.name().empty()) Fail({{"tables", i}}, "a table needs a name");
      if (!names.insert(t.name()).second) {
        Fail(at("name"), absl::StrCat("duplicate table name '", t.name(), "'"));
      }
      if (t.vocab_size() <= 0) {
        Fail(at("vocab_size"),
             absl::StrCat("table '", t.name(), "': must be > 0, got ", t.vocab_size(),
                          t.has_vocab_size() ? ""
                                             : " (unset: give it, or feed the table through a "
                                               "readable data.schema.sparse.vocabulary_file)"));
      }
      if (t.dim() <= 0) {
        Fail(at("dim"), absl::StrCat("table '", t.name(), "': must be > 0, got ", t.dim()));
      }
      if (t.combiner() == TableConfig::COMBINER_UNSPECIFIED) {
        Fail(at("combiner"), absl::StrCat("table '", t.name(), "': set SUM, MEAN or SQRTN"));
      }
      if (t.has_optimizer()) CheckOptimizer(at("optimizer"), t.optimizer(), errors_);
      if (t.initializer().has_uniform() && !(t.initializer().uniform().scale() >= 0)) {
        Fail(at("initializer"), "uniform.scale must be >= 0");
      }
      if (t.initializer().has_normal() && !(t.initializer().normal().stddev() >= 0)) {
        Fail(at("initializer"), "normal.stddev must be >= 0");
      }
    }
  }

  // Sizes whose products overflow the counters that hold them.
  //  - 32 bits count the COO entries of one step: a partition's ids
  //    (host::PartitionCount), the entry indices of a SparseCore's dedup
  //    (device::KeyIndex, SparseCoreStepState::entry_unique). One SparseCore
  //    receives at most every id of the step, global_batch x ids per sample,
  //    and ids per sample <= the sum of the features' max_sequence_length
  //    because ingest holds each sample's list of feature f to
  //    max_sequence_length ids (host data sources). The check below keeps
  //    that product within int32.
  //  - A row key holds 2^48 rows and 2^16 tables (base/row_key.h).
  //  - 64 bits count a table's bytes (vocab_size x dim x 4 bytes x up to 3
  //    copies with optimizer slots).
  void CheckCounterSizes() {
    constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
    int64_t ids_per_sample = 0;
    for (const FeatureConfig& f : c_.features()) {
      ids_per_sample += std::max<int64_t>(f.max_sequence_length(), 0);
    }
    const int64_t batch = c_.training().global_batch();
    if (batch > 0 && ids_per_sample > 0 && batch > kMaxInt32 / ids_per_sample) {
      Fail({{"training"}, {"global_batch"}},
           absl::StrFormat("%d samples x %d ids per sample (the features' max_sequence_length "
                           "summed) is more than %d ids per step, which overflows 32-bit "
                           "counters; use a smaller batch",
                           batch, ids_per_sample, kMaxInt32));
    }
    if (c_.tables_size() > base::kMaxKeyTables) {
      Fail({{"tables"}}, absl::StrFormat("%d tables are more than the %d a row key holds "
                                         "(base/row_key.h)",
                                         c_.tables_size(), base::kMaxKeyTables));
    }
    for (int i = 0; i < c_.tables_size(); ++i) {
      const TableConfig& t = c_.tables(i);
      if (t.vocab_size() > base::kMaxKeyRows) {
        Fail({{"tables", i}, {"vocab_size"}},
             absl::StrFormat("table '%s': %d rows are more than the 2^48 = %d rows a row key "
                             "holds (table << 48 | row); split the table",
                             t.name(), t.vocab_size(), base::kMaxKeyRows));
        continue;
      }
      const int64_t max_elements = std::numeric_limits<int64_t>::max() / (4 * 3);
      if (t.vocab_size() > 0 && t.dim() > 0 && t.vocab_size() > max_elements / t.dim()) {
        Fail({{"tables", i}, {"vocab_size"}},
             absl::StrFormat("table '%s': %d rows x dim %d overflows 64-bit byte counts",
                             t.name(), t.vocab_size(), t.dim()));
      }
    }
  }

  void CheckModel() {
    const DlrmConfig& m = c_.model();
    if (m.num_dense_features() <= 0) {
      Fail({{"model"}, {"num_dense_features"}},
           absl::StrCat("must be > 0, got ", m.num_dense_features()));
    }
    if (m.bottom_mlp_size() == 0) Fail({{"model"}, {"bottom_mlp"}}, "needs at least one layer");
    for (int i = 0; i < m.bottom_mlp_size(); ++i) {
      if (m.bottom_mlp(i) <= 0) {
        Fail({{"model"}, {"bottom_mlp", i}}, absl::StrCat("must be > 0, got ", m.bottom_mlp(i)));
      }
    }
    if (m.top_mlp_size() == 0 || m.top_mlp(m.top_mlp_size() - 1) != 1) {
      Fail({{"model"}, {"top_mlp"}}, "must end in a layer of width 1 (the logit)");
    }
    for (int i = 0; i < m.top_mlp_size(); ++i) {
      if (m.top_mlp(i) <= 0) {
        Fail({{"model"}, {"top_mlp", i}}, absl::StrCat("must be > 0, got ", m.top_mlp(i)));
      }
    }
    if (m.has_dcn_v2()) {
      if (m.dcn_v2().num_layers() < 1) {
        Fail({{"model"}, {"dcn_v2"}, {"num_layers"}},
             absl::StrCat("must be >= 1, got ", m.dcn_v2().num_layers()));
      }
      if (m.dcn_v2().low_rank() < 0) {
        Fail({{"model"}, {"dcn_v2"}, {"low_rank"}},
             absl::StrCat("must be >= 0 (0 = full rank), got ", m.dcn_v2().low_rank()));
      }
    }
    for (const auto& [name, p] : {std::pair<const char*, float>{"bottom_mlp_dropout",
                                                                m.bottom_mlp_dropout()},
                                  {"top_mlp_dropout", m.top_mlp_dropout()}}) {
      if (!(p >= 0.0f && p < 1.0f)) {
        Fail({{"model"}, {name}}, absl::StrCat("must be in [0, 1), got ", p));
      }
    }
  }

  void CheckSparseCore() {
    const SparseCoreConfig& s = c_.sparse_core();
    if (s.max_ids_per_chip_per_sample() <= 0) {
      Fail({{"sparse_core"}, {"max_ids_per_chip_per_sample"}},
           absl::StrCat("must be > 0, got ", s.max_ids_per_chip_per_sample()));
    }
    for (const auto* map : {&s.max_ids_per_table(), &s.max_unique_ids_per_table()}) {
      const char* field =
          map == &s.max_ids_per_table() ? "max_ids_per_table" : "max_unique_ids_per_table";
      for (const auto& [name, limit] : *map) {
        if (FindTable(c_, name) < 0) {
          Fail({{"sparse_core"}, {field}}, absl::StrCat("unknown table '", name, "'"));
        } else if (limit <= 0) {
          Fail({{"sparse_core"}, {field}},
               absl::StrCat("table '", name, "': must be > 0, got ", limit));
        }
      }
    }
  }

  // Table stacking (host/stacking.h): the rotation and the explicit stacks.
  void CheckTableStacking() {
    const SparseCoreConfig& s = c_.sparse_core();
    if (s.table_stacking_rotation() < 0) {
      Fail({{"sparse_core"}, {"table_stacking_rotation"}},
           absl::StrCat("must be >= 0 SparseCores, got ", s.table_stacking_rotation()));
    }
    if (s.table_stacks_size() > 0 && s.disable_table_stacking()) {
      Fail({{"sparse_core"}, {"table_stacks", 0}},
           "explicit table_stacks and disable_table_stacking: true contradict each other; "
           "remove one");
    }
    std::set<std::string> stack_names;
    std::vector<int> stack_of(c_.tables_size(), -1);
    for (int i = 0; i < s.table_stacks_size(); ++i) {
      const TableStackConfig& st = s.table_stacks(i);
      auto at = [&](const char* f) { return FieldPath{{"sparse_core"}, {"table_stacks", i}, {f}}; };
      if (st.tables_size() == 0) Fail(at("tables"), "a stack needs at least one table");
      if (st.has_name() && !stack_names.insert(st.name()).second) {
        Fail(at("name"), absl::StrCat("duplicate stack name '", st.name(), "'"));
      }
      for (const std::string& name : st.tables()) {
        const int t = FindTable(c_, name);
        if (t < 0) {
          Fail(at("tables"), absl::StrCat("unknown table '", name, "'"));
          continue;
        }
        if (stack_of[t] >= 0) {
          Fail(at("tables"), absl::StrFormat("table '%s' is already in table_stacks[%d]", name,
                                             stack_of[t]));
          continue;
        }
        stack_of[t] = i;
        const int first = FindTable(c_, st.tables(0));
        const std::string why = first < 0 ? "" : TableStackingMismatch(c_, first, t);
        if (!why.empty()) {
          Fail(at("tables"), absl::StrFormat("tables '%s' and '%s' cannot share a stack: %s",
                                             st.tables(0), name, why));
        }
      }
    }
  }

  // Partition limits (host/limits.h); the limits file is read and checked
  // when the trainer resolves the limits.
  void CheckPartitionLimits() {
    const SparseCoreConfig& s = c_.sparse_core();
    if (s.has_max_ids_per_partition() && s.max_ids_per_partition() <= 0) {
      Fail({{"sparse_core"}, {"max_ids_per_partition"}},
           absl::StrCat("must be > 0, got ", s.max_ids_per_partition()));
    }
    if (s.has_max_unique_ids_per_partition() && s.max_unique_ids_per_partition() <= 0) {
      Fail({{"sparse_core"}, {"max_unique_ids_per_partition"}},
           absl::StrCat("must be > 0, got ", s.max_unique_ids_per_partition()));
    }
    if (s.has_limits_file() && s.limits_file().empty()) {
      Fail({{"sparse_core"}, {"limits_file"}}, "is set but empty; name a LimitsFile text proto");
    }
  }

  // Trace bounds only mean something with a trace; a path must name a file.
  void CheckObservability() {
    if (!c_.has_observability()) return;
    const ObservabilityConfig& o = c_.observability();
    if (o.has_trace_json() && o.trace_json().empty()) {
      Fail({{"observability"}, {"trace_json"}}, "is empty; name a file or leave it unset");
    }
    if (o.has_metrics_csv() && o.metrics_csv().empty()) {
      Fail({{"observability"}, {"metrics_csv"}}, "is empty; name a file or leave it unset");
    }
    if ((o.has_trace_first_step() || o.has_trace_last_step()) && !o.has_trace_json()) {
      Fail({{"observability"}, {"trace_first_step"}},
           "trace steps are set but trace_json is not (nothing would be traced)");
    }
    if (o.trace_first_step() < 1) {
      Fail({{"observability"}, {"trace_first_step"}},
           absl::StrCat("must be >= 1 (steps count from 1), got ", o.trace_first_step()));
    } else if (o.trace_last_step() < o.trace_first_step()) {
      Fail({{"observability"}, {"trace_last_step"}},
           absl::StrFormat("is %d, before trace_first_step %d", o.trace_last_step(),
                           o.trace_first_step()));
    }
  }

  // The watchdog's timeout is a number of seconds; 0 turns it off.
  void CheckWatchdog() {
    if (c_.watchdog().collective_timeout_s() < 0 ||
        !std::isfinite(c_.watchdog().collective_timeout_s())) {
      Fail({{"watchdog"}, {"collective_timeout_s"}},
           absl::StrCat("must be a finite number of seconds >= 0 (0 turns the watchdog off), got ",
                        c_.watchdog().collective_timeout_s()));
    }
  }

  // Checkpoint paths must name something; saving periodically needs a place.
  void CheckCheckpoint() {
    if (!c_.has_checkpoint()) return;
    const CheckpointConfig& k = c_.checkpoint();
    if (k.keep_best() && (!k.has_dir() || c_.training().eval_every() == 0)) {
      Fail({{"checkpoint"}, {"keep_best"}},
           "needs checkpoint.dir and training.eval_every > 0 (it keeps the checkpoint of the best "
           "evaluation)");
    }
    if (k.has_dir() && k.dir().empty()) {
      Fail({{"checkpoint"}, {"dir"}}, "is empty; name a directory or leave it unset");
    }
    if (k.has_restore_from() && k.restore_from().empty()) {
      Fail({{"checkpoint"}, {"restore_from"}}, "is empty; name a directory or leave it unset");
    }
    if (k.every_steps() < 0) {
      Fail({{"checkpoint"}, {"every_steps"}}, absl::StrCat("must be >= 0, got ", k.every_steps()));
    } else if (k.every_steps() > 0 && !k.has_dir()) {
      Fail({{"checkpoint"}, {"every_steps"}}, "is set but checkpoint.dir is not (nowhere to save)");
    }
    if (k.keep_last() < 0) {
      Fail({{"checkpoint"}, {"keep_last"}},
           absl::StrCat("must be >= 0 (0 keeps every checkpoint), got ", k.keep_last()));
    }
  }

  const RunConfig& c_;
  int world_size_;
  ConfigErrors errors_;
};

}  // namespace

std::string PathString(const FieldPath& path) {
  std::string out;
  for (const PathStep& s : path) {
    if (!out.empty()) out += ".";
    out += s.field;
    if (s.index >= 0) absl::StrAppend(&out, "[", s.index, "]");
  }
  return out;
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

absl::StatusOr<RunConfig> ParseConfig(std::string_view text, std::string_view source_name,
                                      std::string_view override_text, int world_size) {
  RunConfig config;
  TextFormat::ParseInfoTree file_tree;
  TextFormat::ParseInfoTree override_tree;
  absl::Status st = ParseText(text, source_name, /*merge=*/false, &file_tree, &config);
  if (!st.ok()) return st;
  const RunConfig from_file = config;
  if (!override_text.empty()) {
    st = ParseText(override_text, "--override", /*merge=*/true, &override_tree, &config);
    if (!st.ok()) return st;
  }
  ApplyTopologyPreset(world_size, config.mutable_topology());
  ApplyDataDefaults(&config);
  if (config.data().max_table_rows() > 0) {
    for (TableConfig& table : *config.mutable_tables()) {
      table.set_vocab_size(std::min(table.vocab_size(), config.data().max_table_rows()));
    }
  }
  std::optional<ConfigError> error = Validator(config, world_size).Run();
  if (!error.has_value()) return config;

  // The text that holds more of the offending field's path set it (the
  // override, when both hold all of it: it was merged last).
  std::string where(source_name);
  const Location in_override = Locate(&override_tree, error->path, &from_file);
  const Location in_file = Locate(&file_tree, error->path, nullptr);
  if (in_override.depth > 0 && in_override.depth >= in_file.depth) {
    where = absl::StrFormat("--override:%d:%d", in_override.line, in_override.column);
  } else if (in_file.depth > 0) {
    where = absl::StrFormat("%s:%d:%d", source_name, in_file.line, in_file.column);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": ", PathString(error->path), ": ", error->message));
}

absl::StatusOr<RunConfig> LoadConfig(const std::string& path, std::string_view override_text,
                                     int world_size) {
  absl::StatusOr<std::string> text = base::ReadTextFile(path, kMaxConfigBytes, "config file");
  if (!text.ok()) return text.status();
  return ParseConfig(*text, path, override_text, world_size);
}

}  // namespace lemrt::config
