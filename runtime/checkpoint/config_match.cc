#include "runtime/checkpoint/config_match.h"

#include "host/input/source_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "device/optimizers/optimizer.h"
#include "google/protobuf/text_format.h"
#include "proto/config_diff.h"

namespace lemrt::checkpoint {
namespace {

absl::Status Mismatch(const std::string& dir, std::string what) {
  return absl::FailedPreconditionError(
      absl::StrCat("checkpoint '", dir, "' does not match the config: ", what, "."));
}

// The saved run config, parsed leniently (fields this build does not know
// are skipped); nullopt-like false when there is none or it does not parse.
bool SavedConfig(const Manifest& m, config::RunConfig* out) {
  if (!m.has_config_text()) return false;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowUnknownField(true);
  return parser.ParseFromString(m.config_text(), out);
}

// What identifies the training data: the source message without the fields
// that only name evaluation data (eval_path, ...).
config::DataConfig DataIdentity(const config::DataConfig& data) {
  config::DataConfig d = data;
  d.clear_max_table_rows();  // reflected in vocab_size, checked as a shape
  // Whichever source of the oneof is set.
  const google::protobuf::Reflection* reflection = d.GetReflection();
  const google::protobuf::FieldDescriptor* set = reflection->GetOneofFieldDescriptor(
      d, config::DataConfig::descriptor()->FindOneofByName("source"));
  google::protobuf::Message* source = set == nullptr ? nullptr : reflection->MutableMessage(&d, set);
  if (source != nullptr) {
    const google::protobuf::Descriptor* desc = source->GetDescriptor();
    for (int i = 0; i < desc->field_count(); ++i) {
      if (desc->field(i)->name().rfind("eval", 0) == 0) {
        source->GetReflection()->ClearField(source, desc->field(i));
      }
    }
  }
  return d;
}

}  // namespace

std::string DataSourceName(const config::RunConfig& config) {
  return std::string(host::FormatOf(config.data()).name);
}

absl::Status CheckManifestMatchesConfig(const Manifest& manifest, const std::string& dir,
                                        const config::RunConfig& config,
                                        int64_t num_dense_params) {
  if (manifest.tables_size() != config.tables_size()) {
    return Mismatch(dir, absl::StrFormat("it has %d tables, the config %d",
                                         manifest.tables_size(), config.tables_size()));
  }
  for (int t = 0; t < config.tables_size(); ++t) {
    const TableEntry& a = manifest.tables(t);
    const config::TableConfig& b = config.tables(t);
    if (a.name() != b.name()) {
      return Mismatch(dir, absl::StrFormat("table %d is '%s' in the checkpoint, '%s' in the config",
                                           t, a.name(), b.name()));
    }
    auto field = [&](const char* name, auto x, auto y) {
      return Mismatch(dir, absl::StrCat("table '", a.name(), "' has ", name, " ", x,
                                        " in the checkpoint, ", y, " in the config"));
    };
    const auto opt = device::CreateTableOptimizer(config, t);
    if (a.vocab_size() != b.vocab_size()) return field("vocab_size", a.vocab_size(), b.vocab_size());
    if (a.dim() != b.dim()) return field("dim", a.dim(), b.dim());
    if (a.optimizer() != opt->name()) return field("optimizer", a.optimizer(), opt->name());
    if (a.slots_per_param() != opt->slots_per_param()) {
      return field("slots_per_param", a.slots_per_param(), opt->slots_per_param());
    }
    if (a.row_slots() != opt->row_slots()) return field("row_slots", a.row_slots(), opt->row_slots());
  }
  const auto dense_opt = device::CreateDenseOptimizer(config);
  if (manifest.dense().optimizer() != dense_opt->name()) {
    return Mismatch(dir, absl::StrCat("the dense optimizer is ", manifest.dense().optimizer(),
                                      " in the checkpoint, ", dense_opt->name(), " in the config"));
  }
  if (manifest.dense().num_params() != num_dense_params) {
    return Mismatch(dir, absl::StrFormat("it has %d dense parameters, the model %d",
                                         manifest.dense().num_params(), num_dense_params));
  }
  if (manifest.global_batch() != config.training().global_batch()) {
    return Mismatch(dir, absl::StrCat("training.global_batch is ", manifest.global_batch(),
                                      " in the checkpoint, ", config.training().global_batch(),
                                      " in the config (the data position is counted in "
                                      "steps of the global batch)"));
  }
  return absl::OkStatus();
}

std::vector<std::string> ConfigChangesSince(const Manifest& manifest,
                                            const config::RunConfig& config) {
  std::vector<std::string> changes;
  if (manifest.has_seed() && manifest.seed() != config.training().seed()) {
    changes.push_back(
        absl::StrCat("training.seed ", manifest.seed(), " -> ", config.training().seed()));
  }
  if (manifest.data().has_source() && manifest.data().source() != DataSourceName(config)) {
    changes.push_back(absl::StrCat("data source ", manifest.data().source(), " -> ",
                                   DataSourceName(config)));
  }
  config::RunConfig saved;
  if (!SavedConfig(manifest, &saved)) return changes;
  for (const config::TableConfig& old_table : saved.tables()) {
    for (const config::TableConfig& table : config.tables()) {
      if (table.name() == old_table.name() && table.combiner() != old_table.combiner()) {
        changes.push_back(absl::StrCat("table '", table.name(), "' combiner ",
                                       config::TableConfig::Combiner_Name(old_table.combiner()),
                                       " -> ",
                                       config::TableConfig::Combiner_Name(table.combiner())));
      }
    }
  }
  const config::DataConfig old_data = DataIdentity(saved.data());
  const config::DataConfig new_data = DataIdentity(config.data());
  if (DataSourceName(saved) == DataSourceName(config)) {
    // The fields that changed, not both sections (~1,000 characters).
    for (std::string& change : config::FieldDifferences(old_data, new_data, "data")) {
      changes.push_back(std::move(change));
    }
  }
  return changes;
}

absl::Status CheckResumeConfig(const Manifest& manifest, const std::string& dir,
                               const config::RunConfig& config) {
  const std::vector<std::string> changes = ConfigChangesSince(manifest, config);
  if (changes.empty() || config.checkpoint().allow_config_change()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "checkpoint '", dir, "' was saved by a run with another config (",
      absl::StrJoin(changes, "; "),
      "), so resuming would not continue that run; restore the old values, or pass "
      "--allow_config_change (checkpoint { allow_config_change: true }) to resume anyway."));
}

absl::Status CheckScoringSchema(const Manifest& manifest, const std::string& dir,
                                const config::RunConfig& config) {
  config::RunConfig saved;
  if (!SavedConfig(manifest, &saved)) return absl::OkStatus();
  // What turns a row into features: the schema and the features' tables.
  auto inputs = [](const config::RunConfig& c) {
    config::RunConfig out;
    *out.mutable_data()->mutable_schema() = c.data().schema();
    out.mutable_data()->mutable_schema()->mutable_label()->clear_required();
    for (auto& label : *out.mutable_data()->mutable_schema()->mutable_labels()) {
      label.clear_required();
    }
    *out.mutable_features() = c.features();
    return out;
  };
  const std::vector<std::string> changes = config::FieldDifferences(inputs(saved), inputs(config));
  if (changes.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "checkpoint '", dir, "' was trained with another input schema (",
      absl::StrJoin(changes, "; "),
      "; the checkpoint's value first), so scoring would read the rows as other features than "
      "training did; give the config the checkpoint was trained with."));
}

}  // namespace lemrt::checkpoint
