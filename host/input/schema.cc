#include "host/input/schema.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "proto/config_loader.h"
#include "proto/criteo_preset.h"

namespace lemrt::host {
namespace {

using config::InputSchema;
using config::SparseInput;

ValueType TypeOf(SparseInput::ValueType type) {
  switch (type) {
    case SparseInput::INT64:
      return ValueType::kInt64;
    case SparseInput::HEX:
      return ValueType::kHex;
    case SparseInput::STRING:
    default:
      return ValueType::kString;
  }
}

absl::Status ResolveCriteo(const config::RunConfig& config, Schema* s) {
  s->criteo = true;
  s->binary_label = true;
  s->labels = {LabelColumn{.key = "label", .column = 0}};
  s->max_text_columns = 1 + kCriteoIntegers + kCriteoCategories;
  for (int k = 0; k < config.model().num_dense_features(); ++k) {
    DenseColumn d;
    d.name = absl::StrCat("I", k + 1);
    d.absent = k >= kCriteoIntegers;
    d.column = d.absent ? -1 : k + 1;
    d.log1p = true;
    d.integer = true;
    s->dense.push_back(d);
  }
  for (int c = 0; c < kCriteoCategories; ++c) {
    SparseColumn col;
    col.key = absl::StrCat("C", c + 1);
    col.column = kCriteoFirstCategoryColumn + c;
    col.type = ValueType::kHex;
    col.max_hex_digits = 8;
    s->sparse.push_back(col);
  }
  for (int f = 0; f < config.features_size(); ++f) {
    const config::FeatureConfig& fc = config.features(f);
    FeatureInput in;
    in.sparse = fc.has_input_column() ? fc.input_column() : f;
    if (in.sparse < 0 || in.sparse >= kCriteoCategories) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s' reads Criteo category column %d; Criteo rows have columns 0..%d (set "
          "input_column).",
          fc.name(), in.sparse, kCriteoCategories - 1));
    }
    s->features.push_back(in);
  }
  return absl::OkStatus();
}

// The label of each task: data.schema.label for a single-task model, else
// the data.schema.labels entry named like each of model.tasks, in task
// order. `position(has, column, default)` places a text column.
template <typename Position>
absl::Status ResolveLabels(const config::RunConfig& config, const InputSchema& p,
                           const Position& position, Schema* s) {
  const auto label_column = [&](const config::LabelInput& in, int t) {
    return LabelColumn{.key = in.name(),
                       .column = position(in.has_column(), in.column(), t),
                       .optional = !in.required()};
  };
  if (config.model().tasks_size() == 0) {
    s->labels = {label_column(p.label(), 0)};
    return absl::OkStatus();
  }
  s->labels.clear();
  for (int t = 0; t < config.model().tasks_size(); ++t) {
    const std::string& name = config.model().tasks(t).name();
    const config::LabelInput* found = nullptr;
    for (const config::LabelInput& in : p.labels()) {
      if (in.name() == name) found = &in;
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("task '", name, "' has no data.schema.labels entry of that name."));
    }
    s->labels.push_back(label_column(*found, t));
  }
  return absl::OkStatus();
}

absl::Status ResolveColumns(const config::RunConfig& config, const InputSchema& p, Schema* s) {
  const bool by_name = config.data().has_text() && config.data().text().header();
  auto position = [&](bool has, int column, int default_position) {
    return has ? column : (by_name ? -1 : default_position);
  };
  LEMRT_RETURN_IF_ERROR(ResolveLabels(config, p, position, s));
  const int first = s->num_tasks();  // the default column of the first dense input
  for (int k = 0; k < p.dense_size(); ++k) {
    const config::DenseInput& in = p.dense(k);
    DenseColumn d;
    d.name = in.name();
    d.column = position(in.has_column(), in.column(), first + k);
    d.log1p = in.transform() == config::DenseInput::LOG1P;
    d.default_value = in.default_value();
    if (in.has_clip_min()) d.clip_min = in.clip_min();
    if (in.has_clip_max()) d.clip_max = in.clip_max();
    if (in.normalize() == config::DenseInput::STANDARDIZE) {
      d.shift = in.mean();
      d.scale = 1 / in.stddev();
    } else if (in.normalize() == config::DenseInput::MIN_MAX) {
      d.shift = in.minimum();
      d.scale = 1 / (in.maximum() - in.minimum());
    }
    d.normalized = in.normalize() != config::DenseInput::NORMALIZE_NONE;
    d.missing_indicator = in.missing_indicator();
    s->dense.push_back(d);
  }
  for (int i = 0; i < p.sparse_size(); ++i) {
    const SparseInput& in = p.sparse(i);
    SparseColumn col;
    col.key = in.has_key() ? in.key() : in.feature();
    col.column = position(in.has_column(), in.column(), first + p.dense_size() + i);
    col.type = TypeOf(in.type());
    col.separator = in.separator().empty() ? 0 : in.separator()[0];
    col.weights_key = in.weights_key();
    col.weights_column = in.has_weights_column() ? in.weights_column() : -1;
    s->sparse.push_back(col);
  }
  for (const config::FeatureConfig& fc : config.features()) {
    FeatureInput in;
    in.sparse = -1;
    for (int i = 0; i < p.sparse_size(); ++i) {
      if (p.sparse(i).feature() == fc.name()) in.sparse = i;
    }
    if (in.sparse < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature '", fc.name(), "' has no data.schema.sparse input."));
    }
    const SparseInput& spec = p.sparse(in.sparse);
    in.mapping = spec.mapping() == SparseInput::ID           ? Mapping::kId
                 : spec.mapping() == SparseInput::VOCABULARY ? Mapping::kVocabulary
                                                             : Mapping::kHash;
    s->features.push_back(in);
  }
  s->truncate_sequences = p.sequence_overflow() == InputSchema::OVERFLOW_TRUNCATE;
  return absl::OkStatus();
}

// A composed CRITEO preset's columns read as the preset reads them: labels
// 0 or 1, integers in columns 1..13, categories of at most 8 hex digits, at
// most 40 fields a line.
void MarkCriteoColumns(Schema* s) {
  s->criteo = true;
  s->binary_label = true;
  s->max_text_columns = config::kCriteoColumns;
  for (DenseColumn& d : s->dense) d.integer = d.column >= 1 && d.column < config::kCriteoFirstCategory;
  for (SparseColumn& col : s->sparse) {
    if (col.type == ValueType::kHex && col.column >= config::kCriteoFirstCategory) {
      col.max_hex_digits = 8;
    }
  }
}

// Tables, lengths and vocabularies of the features (`p`: the column schema
// of a composed preset, or the config's).
absl::Status ResolveFeatures(const config::RunConfig& config, const InputSchema& p, Schema* s) {
  for (int f = 0; f < config.features_size(); ++f) {
    const config::FeatureConfig& fc = config.features(f);
    FeatureInput& in = s->features[f];
    in.name = fc.name();
    in.table = config::FindTable(config, fc.table());
    if (in.table < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s' names table '%s', which is not in the config.", fc.name(), fc.table()));
    }
    in.rows = config.tables(in.table).vocab_size();
    in.table_name = config.tables(in.table).name();
    in.max_length = fc.max_sequence_length();
    if (in.mapping != Mapping::kVocabulary) continue;
    const SparseInput& spec = p.sparse(in.sparse);
    const SparseColumn& col = s->sparse[in.sparse];
    LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<Vocabulary> vocabulary,
                           Vocabulary::Load(spec.vocabulary_file(), col.type, col.max_hex_digits));
    in.num_oov_buckets = spec.num_oov_buckets();
    const int64_t needed = in.num_oov_buckets + vocabulary->size();
    if (in.rows < needed) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "table '%s' has %d rows but feature '%s' needs %d: %d vocabulary entries in '%s' + "
          "%d OOV buckets (raise vocab_size)",
          in.table_name, in.rows, fc.name(), needed, vocabulary->size(),
          spec.vocabulary_file(), in.num_oov_buckets));
    }
    in.vocabulary = vocabulary.get();
    s->vocabularies.push_back(std::move(vocabulary));
  }
  return absl::OkStatus();
}

}  // namespace

std::string LabelName(const Schema& schema, int t) {
  return schema.num_tasks() == 1 ? std::string("the label")
                                 : absl::StrCat("label '", schema.labels[t].key, "'");
}

float DenseColumn::ModelValue(float parsed) const {
  return static_cast<float>((Clip(parsed) - shift) * scale);
}

absl::StatusOr<std::shared_ptr<const Schema>> ResolveSchema(const config::RunConfig& config) {
  auto schema = std::make_shared<Schema>();
  const config::DataConfig& data = config.data();
  const InputSchema& p = data.schema();
  const InputSchema columns =
      config::ComposesCriteoPreset(config) ? config::ExpandCriteoPreset(config) : p;
  if (config::ComposesCriteoPreset(config)) {
    LEMRT_RETURN_IF_ERROR(ResolveColumns(config, columns, schema.get()));
    MarkCriteoColumns(schema.get());
  } else if (config::UsesCriteoPreset(config)) {
    LEMRT_RETURN_IF_ERROR(ResolveCriteo(config, schema.get()));
  } else {
    LEMRT_RETURN_IF_ERROR(ResolveColumns(config, p, schema.get()));
  }
  LEMRT_RETURN_IF_ERROR(ResolveFeatures(config, columns, schema.get()));
  if (schema->criteo) schema->labels[0].optional = !p.label().required();
  schema->check_id_range = config.sparse_core().enable_id_bound_check();
  schema->model_dense = static_cast<int>(schema->dense.size());
  for (const DenseColumn& d : schema->dense) schema->model_dense += d.missing_indicator ? 1 : 0;
  return std::shared_ptr<const Schema>(std::move(schema));
}

}  // namespace lemrt::host
