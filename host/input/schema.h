// The input schema resolved against the config (docs/data.md "Schema"):
// where the label, each dense input and each sparse input sit in a row, how
// their values are read, and how each config feature maps its values to the
// rows of its table. Every file reader fills a ParsedSample by this schema,
// and BatchFiller (host/input/batch_filler.h) turns it into batch rows. Immutable
// after ResolveSchema; thread-safe.
#ifndef LEMRT_HOST_INPUT_SCHEMA_H_
#define LEMRT_HOST_INPUT_SCHEMA_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "host/input/value_key.h"
#include "host/input/vocabulary.h"
#include "proto/config.pb.h"

namespace lemrt::host {

struct DenseColumn {
  std::string name;
  // 0-based text column, or -1: found by name in the header (text with a
  // header), or absent from the data (always default_value; the CRITEO
  // preset's dense inputs past 13).
  int column = -1;
  bool absent = false;
  bool log1p = false;  // log(1 + max(x, 0)) after parsing
  float default_value = 0;
  bool integer = false;  // only integers are valid (CRITEO)
  // After log1p: clipped to [clip_min, clip_max], then normalized to
  // (x - shift) * scale (STANDARDIZE: mean, 1 / stddev; MIN_MAX: minimum,
  // 1 / (maximum - minimum); none: 0, 1).
  float clip_min = -std::numeric_limits<float>::infinity();
  float clip_max = std::numeric_limits<float>::infinity();
  double shift = 0;
  double scale = 1;
  bool normalized = false;  // STANDARDIZE or MIN_MAX
  // One more model input: 1 where the field is missing, else 0.
  bool missing_indicator = false;

  // The model input of a parsed value (default_value and log1p already
  // applied by the reader): clipped, then normalized.
  float ModelValue(float parsed) const;
  float Clip(float parsed) const {
    return parsed < clip_min ? clip_min : parsed > clip_max ? clip_max : parsed;
  }
};

struct SparseColumn {
  std::string key;   // header column name / TFRecord key
  int column = -1;   // 0-based text column, or -1: by name in the header
  ValueType type = ValueType::kString;
  int max_hex_digits = 16;
  char separator = 0;  // text: between the values of one field; 0 = one value
  std::string weights_key;  // empty: no weights
  int weights_column = -1;
  bool weighted() const { return !weights_key.empty() || weights_column >= 0; }
};

enum class Mapping { kHash, kId, kVocabulary };

// One config feature (same index as config.features()).
struct FeatureInput {
  std::string name;
  int sparse = 0;  // index into Schema::sparse
  Mapping mapping = Mapping::kHash;
  int table = 0;     // index into config.tables()
  int64_t rows = 0;  // the table's vocab_size
  int max_length = 1;  // max_sequence_length
  const Vocabulary* vocabulary = nullptr;  // kVocabulary
  int num_oov_buckets = 0;                 // kVocabulary: rows [0, n) take the unknown values
  std::string table_name;
};

// One label (one task's: config model.tasks; a single-task model has one).
struct LabelColumn {
  std::string key = "label";  // header column name / TFRecord key
  int column = -1;            // text; -1: by name in the header
  // A row without this label is valid, the label NaN (scoring with
  // lemrt_predict; a multi-task label with required: false; the task is
  // then masked for that row).
  bool optional = false;
};

struct Schema {
  // One per task, in model.tasks order (>= 1 entries).
  std::vector<LabelColumn> labels = {LabelColumn{}};
  // Only "0" and "1" are labels (CRITEO); otherwise any number in [0, 1].
  bool binary_label = false;
  int num_tasks() const { return static_cast<int>(labels.size()); }
  // One per dense input of the data; the model reads their ModelValue()s
  // followed by one 0/1 input per missing_indicator, in this order:
  // model_dense = model.num_dense_features entries in all.
  std::vector<DenseColumn> dense;
  int model_dense = 0;
  std::vector<SparseColumn> sparse;  // input columns (a feature reads one)
  std::vector<FeatureInput> features;
  // Lists longer than max_length keep their first max_length values
  // (sequence_overflow: OVERFLOW_TRUNCATE) instead of making the row bad.
  bool truncate_sequences = false;
  // Mapping kId: an id outside [0, rows) makes the row bad (named by its
  // file and line or record) instead of being wrapped into range
  // (sparse_core.enable_id_bound_check).
  bool check_id_range = false;
  // Text: > 0 makes a line with more fields malformed (CRITEO: 40). With a
  // header the header's field count is the limit.
  int max_text_columns = 0;
  bool criteo = false;
  std::vector<std::unique_ptr<Vocabulary>> vocabularies;  // owned by the schema
};

// Resolves `config`'s data.schema (or the CRITEO preset of a criteo or
// binary source) and loads the vocabularies. Text columns left unset with
// no header get their positions: the labels first (0, or 0..T-1 in
// model.tasks order), then the dense inputs, then the sparse inputs in
// schema order. Errors: InvalidArgument naming the feature
// for a CRITEO feature whose input_column is outside 0..25, a table too
// small for its vocabulary (observed vs needed rows); a vocabulary's
// errors (host/input/vocabulary.h).
absl::StatusOr<std::shared_ptr<const Schema>> ResolveSchema(const config::RunConfig& config);

// "the label" for a single-task schema, "label 'NAME'" for task t of a
// multi-task one: how errors name a label.
std::string LabelName(const Schema& schema, int t);

// The CRITEO preset's 26 category columns C1..C26 start at this text column.
inline constexpr int kCriteoFirstCategoryColumn = 14;
inline constexpr int kCriteoCategories = 26;
inline constexpr int kCriteoIntegers = 13;

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_SCHEMA_H_
