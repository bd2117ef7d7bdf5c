// The features and the data section: sources, the input schema against the
// config's features and model, shuffling.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/regular_file.h"
#include "proto/config_check.h"
#include "proto/config_loader.h"
#include "proto/criteo_preset.h"

namespace lemrt::config {
namespace {

// Lines of a text file (the last one may lack its newline); 0 when it cannot
// be read (validation then names the table's missing vocab_size).
int64_t CountLines(const std::string& path) {
  struct stat st;  // a FIFO or device is never opened (CheckVocabularyFiles names it)
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  int64_t lines = 0;
  char last = '\n';
  std::vector<char> block(1 << 16);
  while (in.read(block.data(), block.size()) || in.gcount() > 0) {
    const std::streamsize n = in.gcount();
    lines += std::count(block.data(), block.data() + n, '\n');
    last = block[n - 1];
  }
  return lines + (last != '\n' ? 1 : 0);
}

bool IsSynthetic(const DataConfig& d) {
  return d.source_case() == DataConfig::SOURCE_NOT_SET || d.has_synthetic();
}

bool HasColumns(const InputSchema& s) {
  return s.has_label() || s.labels_size() > 0 || s.dense_size() > 0 || s.sparse_size() > 0;
}

// A comma-separated list of files or globs: none empty.
void CheckPaths(const FieldPath& at, bool has, const std::string& paths, bool required,
                ConfigErrors& errors) {
  if (!has) {
    if (required) errors.Fail(at, "is required: name the files (a list or a glob)");
    return;
  }
  size_t begin = 0;
  while (true) {
    const size_t comma = paths.find(',', begin);
    const size_t end = comma == std::string::npos ? paths.size() : comma;
    if (end == begin) {
      errors.Fail(at, absl::StrCat("'", paths, "' has an empty entry; name files or glob "
                                   "patterns separated by commas"));
      return;
    }
    if (comma == std::string::npos) return;
    begin = comma + 1;
  }
}

FieldPath SchemaField(const char* list, int i, const char* f) {
  return FieldPath{{"data"}, {"schema"}, {list, i}, {f}};
}

}  // namespace

void CheckDenseLines(const RunConfig& c, ConfigErrors& errors) {
  const InputSchema& s = c.data().schema();
  std::set<std::string> dense_names;
  for (int i = 0; i < s.dense_size(); ++i) {
    const DenseInput& d = s.dense(i);
    if (d.name().empty()) {
      errors.Fail(SchemaField("dense", i, "name"), "a dense input needs a name");
    }
    if (!dense_names.insert(d.name()).second) {
      errors.Fail(SchemaField("dense", i, "name"),
                  absl::StrCat("duplicate dense input '", d.name(), "'"));
    }
    if (d.has_column() && d.column() < 0) {
      errors.Fail(SchemaField("dense", i, "column"),
                  absl::StrCat("must be >= 0, got ", d.column()));
    }
    if (!std::isfinite(d.default_value())) {
      errors.Fail(SchemaField("dense", i, "default_value"), "must be a finite number");
    }
    CheckDenseInput({{"data"}, {"schema"}, {"dense", i}}, d, c.data().has_binary(), errors);
  }
}

namespace {

// The label's column and the dense inputs: at least one, named once each.
void CheckLabelAndDense(const RunConfig& c, ConfigErrors& errors) {
  const InputSchema& s = c.data().schema();
  if (s.label().has_column() && s.label().column() < 0) {
    errors.Fail({{"data"}, {"schema"}, {"label"}, {"column"}},
                absl::StrCat("must be >= 0, got ", s.label().column()));
  }
  if (s.dense_size() == 0) {
    errors.Fail({{"data"}, {"schema"}, {"dense"}},
                "needs at least one dense input (the DLRM bottom MLP reads them)");
  }
  CheckDenseLines(c, errors);
}

// Sparse input i's mapping, vocabulary, list separator and weights; `text`
// and `header` as in CheckSchemaColumns.
void CheckSparseInputFields(const SparseInput& in, int i, bool text, bool header,
                            const std::string& delimiter, ConfigErrors& errors) {
  auto at = [i](const char* f) { return SchemaField("sparse", i, f); };
  if (in.has_column() && in.column() < 0) {
    errors.Fail(at("column"), absl::StrCat("must be >= 0, got ", in.column()));
  }
  if (in.mapping() == SparseInput::ID && in.type() != SparseInput::INT64) {
    errors.Fail(at("mapping"),
                absl::StrCat("feature '", in.feature(),
                             "': mapping ID uses the values as rows and needs type: INT64"));
  }
  if (in.mapping() == SparseInput::VOCABULARY && in.vocabulary_file().empty()) {
    errors.Fail(at("vocabulary_file"),
                absl::StrCat("feature '", in.feature(), "': mapping VOCABULARY needs a file"));
  }
  if (in.has_vocabulary_file() && in.mapping() != SparseInput::VOCABULARY) {
    errors.Fail(at("vocabulary_file"), absl::StrCat("feature '", in.feature(),
                                                    "': a vocabulary_file needs mapping: "
                                                    "VOCABULARY"));
  }
  if (in.num_oov_buckets() < 0) {
    errors.Fail(at("num_oov_buckets"), absl::StrCat("must be >= 0, got ", in.num_oov_buckets()));
  }
  if (in.has_separator()) {
    if (in.separator().size() != 1 || in.separator() == "\n" || in.separator() == "\r") {
      errors.Fail(at("separator"), absl::StrCat("must be one character (not a line break), got '",
                                                in.separator(), "'"));
    } else if (text && in.separator() == delimiter) {
      errors.Fail(at("separator"),
                  "equals the text delimiter; the values of a list need another character");
    }
  }
  if (in.has_weights_column() && in.weights_column() < 0) {
    errors.Fail(at("weights_column"), absl::StrCat("must be >= 0, got ", in.weights_column()));
  }
  if (text && !header && in.has_weights_key() && !in.has_weights_column()) {
    errors.Fail(at("weights_key"),
                "names a column, but the text files have no header; set weights_column");
  }
}

}  // namespace

std::set<std::string> CheckSparseInputs(const RunConfig& c, bool text, bool header,
                                        ConfigErrors& errors) {
  const InputSchema& s = c.data().schema();
  std::set<std::string> fed;
  const std::string delimiter =
      c.data().text().has_delimiter() ? c.data().text().delimiter() : std::string("\t");
  for (int i = 0; i < s.sparse_size(); ++i) {
    const SparseInput& in = s.sparse(i);
    bool known = false;
    for (const FeatureConfig& f : c.features()) known = known || f.name() == in.feature();
    if (!known) {
      errors.Fail(SchemaField("sparse", i, "feature"),
                  absl::StrCat("'", in.feature(), "' is not a feature of the config"));
    } else if (!fed.insert(in.feature()).second) {
      errors.Fail(SchemaField("sparse", i, "feature"),
                  absl::StrCat("feature '", in.feature(), "' has two sparse inputs"));
    }
    CheckSparseInputFields(in, i, text, header, delimiter, errors);
  }
  return fed;
}

namespace {

// Every feature has a sparse input (`fed`) and no CRITEO input_column.
void CheckFeaturesFed(const RunConfig& c, const std::set<std::string>& fed, ConfigErrors& errors) {
  for (int f = 0; f < c.features_size(); ++f) {
    if (c.features(f).has_input_column()) {
      errors.Fail({{"features", f}, {"input_column"}},
                  absl::StrCat("feature '", c.features(f).name(),
                               "': input_column is for the CRITEO preset; name the column in "
                               "data.schema.sparse instead"));
    }
    if (fed.count(c.features(f).name()) == 0) {
      errors.Fail({{"data"}, {"schema"}, {"sparse"}},
                  absl::StrCat("feature '", c.features(f).name(),
                               "' has no sparse input; add sparse { feature: \"",
                               c.features(f).name(), "\" ... }"));
    }
  }
}

// model.num_dense_features against the schema's dense inputs.
void CheckModelDenseInputs(const RunConfig& c, ConfigErrors& errors) {
  const InputSchema& s = c.data().schema();
  const int model_inputs = ModelDenseInputs(s);
  if (c.model().num_dense_features() != model_inputs && s.dense_size() > 0) {
    errors.Fail({{"model"}, {"num_dense_features"}},
                absl::StrFormat("is %d but data.schema has %d dense inputs%s (leave it unset to "
                                "take the schema's)",
                                c.model().num_dense_features(), s.dense_size(),
                                model_inputs == s.dense_size()
                                    ? ""
                                    : absl::StrFormat(" and %d missing-value indicators",
                                                      model_inputs - s.dense_size())));
  }
}

// The schema's columns: names, text columns, kinds against mappings; errors
// in that order (label and dense, sparse inputs, features, model).
void CheckSchemaColumns(const RunConfig& c, bool text, bool header, ConfigErrors& errors) {
  CheckLabelAndDense(c, errors);
  CheckFeaturesFed(c, CheckSparseInputs(c, text, header, errors), errors);
  CheckModelDenseInputs(c, errors);
}

// The schema a source needs: none for synthetic data, the CRITEO preset for
// Criteo TSV and binary files, columns for text.
void CheckSchema(const RunConfig& c, ConfigErrors& errors) {
  const DataConfig& d = c.data();
  const InputSchema& s = d.schema();
  const FieldPath at = {{"data"}, {"schema"}};
  if (IsSynthetic(d)) {
    if (d.has_schema()) {
      errors.Fail(at, "synthetic data makes its own columns; remove data.schema or name files");
    }
    return;
  }
  if (UsesCriteoPreset(c)) {  // data.criteo, the preset, or files converted from Criteo TSV
    CheckCriteoSchema(c, d.has_text(), d.text().header(), errors);
    return;
  }
  if (!HasColumns(s)) {
    errors.Fail(at, "is required for file data: name the label, dense and sparse columns "
                    "(or set preset: CRITEO)");
    return;
  }
  CheckSchemaColumns(c, d.has_text(), d.text().header(), errors);
}

}  // namespace

void ApplyDataDefaults(RunConfig* c) {
  const InputSchema& s = c->data().schema();
  if (s.dense_size() > 0 && !c->model().has_num_dense_features()) {
    c->mutable_model()->set_num_dense_features(
        ModelDenseInputs(UsesCriteoPreset(*c) ? ExpandCriteoPreset(*c) : s));
  }
  // Tables without a vocab_size take the rows their features' vocabularies
  // need: OOV buckets + entries (the largest, when several feed one table).
  for (TableConfig& t : *c->mutable_tables()) {
    if (t.has_vocab_size()) continue;
    int64_t rows = 0;
    for (const FeatureConfig& f : c->features()) {
      if (f.table() != t.name()) continue;
      for (const SparseInput& in : s.sparse()) {
        if (in.feature() != f.name() || in.mapping() != SparseInput::VOCABULARY) continue;
        const int64_t entries = CountLines(in.vocabulary_file());
        if (entries > 0) rows = std::max<int64_t>(rows, in.num_oov_buckets() + entries);
      }
    }
    if (rows > 0) t.set_vocab_size(rows);
  }
}

void CheckVocabularyFiles(const RunConfig& c, ConfigErrors& errors) {
  const InputSchema& s = c.data().schema();
  struct Use {
    std::string file, feature;
  };
  std::map<std::string, Use> by_table;  // the first vocabulary feeding each table
  for (int i = 0; i < s.sparse_size(); ++i) {
    const SparseInput& in = s.sparse(i);
    if (in.mapping() != SparseInput::VOCABULARY || in.vocabulary_file().empty()) continue;
    const FieldPath at = {{"data"}, {"schema"}, {"sparse", i}, {"vocabulary_file"}};
    const std::string& path = in.vocabulary_file();
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      errors.Fail(at, absl::StrCat("feature '", in.feature(), "': cannot read vocabulary '", path,
                                   "': ", std::strerror(errno)));
    } else if (!S_ISREG(st.st_mode)) {
      errors.Fail(at, absl::StrCat("feature '", in.feature(), "': vocabulary '", path, "' is ",
                                   base::FileKind(st.st_mode), ", not a regular file"));
    } else if (st.st_size == 0) {
      errors.Fail(at, absl::StrCat("feature '", in.feature(), "': vocabulary '", path,
                                   "' is empty; a vocabulary has one value a line"));
    }
    std::string table;
    for (const FeatureConfig& f : c.features()) {
      if (f.name() == in.feature()) table = f.table();
    }
    if (table.empty()) continue;
    const auto [it, first] = by_table.emplace(table, Use{path, in.feature()});
    if (!first && it->second.file != path) {
      errors.Fail(at, absl::StrFormat(
                          "features '%s' and '%s' share table '%s' but map their values with "
                          "different vocabulary files ('%s' and '%s'), so one row would stand "
                          "for different values; give them one vocabulary file or separate tables",
                          it->second.feature, in.feature(), table, it->second.file, path));
    }
  }
}

void CheckFeatures(const RunConfig& c, ConfigErrors& errors) {
  if (c.features_size() == 0) errors.Fail({{"features"}}, "at least one feature is required");
  std::set<std::string> names;
  for (int i = 0; i < c.features_size(); ++i) {
    const FeatureConfig& f = c.features(i);
    auto at = [&](const char* name) { return FieldPath{{"features", i}, {name}}; };
    if (f.name().empty()) errors.Fail({{"features", i}}, "a feature needs a name");
    if (!names.insert(f.name()).second) {
      errors.Fail(at("name"), absl::StrCat("duplicate feature name '", f.name(), "'"));
    }
    if (FindTable(c, f.table()) < 0) {
      errors.Fail(at("table"), absl::StrCat("feature '", f.name(), "' uses unknown table '",
                                            f.table(), "'"));
    }
    if (f.max_sequence_length() <= 0) {
      errors.Fail(at("max_sequence_length"), absl::StrCat("feature '", f.name(),
                                                          "': must be > 0, got ",
                                                          f.max_sequence_length()));
    }
    if (f.has_input_column() && (f.input_column() < 0 || f.input_column() >= 26)) {
      errors.Fail(at("input_column"), absl::StrCat("feature '", f.name(),
                                                   "': Criteo categorical columns are 0..25, got ",
                                                   f.input_column()));
    }
  }
}

void CheckData(const RunConfig& c, ConfigErrors& errors) {
  const DataConfig& d = c.data();
  if (d.has_max_table_rows() && d.max_table_rows() <= 0) {
    errors.Fail({{"data"}, {"max_table_rows"}},
                absl::StrCat("must be > 0 rows, got ", d.max_table_rows()));
  }
  if (d.shuffle_window() < 0) {
    errors.Fail({{"data"}, {"shuffle_window"}},
                absl::StrCat("must be >= 0 rows (0 = file order), got ", d.shuffle_window()));
  }
  CheckSchema(c, errors);
  if (d.has_binary()) {
    if (d.binary().train_path().empty()) {
      errors.Fail({{"data"}, {"binary"}, {"train_path"}}, "is required for binary data");
    }
    if (d.binary().shuffle_window() < 0) {
      errors.Fail({{"data"}, {"binary"}, {"shuffle_window"}},
                  absl::StrCat("must be >= 0 records, got ", d.binary().shuffle_window()));
    }
    return;
  }
  if (d.has_criteo()) {
    if (d.criteo().train_path().empty()) {
      errors.Fail({{"data"}, {"criteo"}, {"train_path"}}, "is required for Criteo data");
    }
    return;
  }
  if (d.has_text()) {
    const TextSourceConfig& t = d.text();
    CheckPaths({{"data"}, {"text"}, {"train_path"}}, t.has_train_path(), t.train_path(),
               /*required=*/true, errors);
    CheckPaths({{"data"}, {"text"}, {"eval_path"}}, t.has_eval_path(), t.eval_path(),
               /*required=*/false, errors);
    if (t.has_delimiter() &&
        (t.delimiter().size() != 1 || t.delimiter() == "\n" || t.delimiter() == "\r")) {
      errors.Fail({{"data"}, {"text"}, {"delimiter"}},
                  absl::StrCat("must be one character (e.g. \"\\t\" or \",\"), got '",
                               t.delimiter(), "'"));
    }
    return;
  }
  if (d.has_tfrecord()) {
    const TfRecordSourceConfig& t = d.tfrecord();
    CheckPaths({{"data"}, {"tfrecord"}, {"train_path"}}, t.has_train_path(), t.train_path(),
               /*required=*/true, errors);
    CheckPaths({{"data"}, {"tfrecord"}, {"eval_path"}}, t.has_eval_path(), t.eval_path(),
               /*required=*/false, errors);
    return;
  }
  const SyntheticSourceConfig& s = d.synthetic();
  if (!(s.zipf_fraction() >= 0 && s.zipf_fraction() <= 1)) {
    errors.Fail({{"data"}, {"synthetic"}, {"zipf_fraction"}},
                absl::StrCat("must be in [0, 1], got ", s.zipf_fraction()));
  }
  if (!Positive(s.zipf_exponent())) {
    errors.Fail({{"data"}, {"synthetic"}, {"zipf_exponent"}},
                absl::StrCat("must be > 0, got ", s.zipf_exponent()));
  }
  const std::pair<const char*, float> scales[] = {{"teacher_id_scale", s.teacher_id_scale()},
                                                   {"teacher_dense_scale", s.teacher_dense_scale()},
                                                   {"teacher_pair_scale", s.teacher_pair_scale()},
                                                   {"teacher_cross_scale", s.teacher_cross_scale()}};
  for (const auto& [name, scale] : scales) {
    if (!std::isfinite(scale)) {
      errors.Fail({{"data"}, {"synthetic"}, {name}},
                  absl::StrCat("must be a finite number, got ", scale));
    }
  }
}

}  // namespace lemrt::config
