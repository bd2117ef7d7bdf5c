// data.schema lines composed with the CRITEO preset (proto/criteo_preset.h):
// what may be overridden, what an added input needs, and the conflicts, each
// error at the line that causes it.
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/config_check.h"
#include "proto/config_loader.h"
#include "proto/criteo_preset.h"

namespace lemrt::config {
namespace {

FieldPath LineField(const char* list, int i, const char* f) {
  return FieldPath{{"data"}, {"schema"}, {list, i}, {f}};
}

bool IsIntegerColumn(int column) { return column >= 1 && column <= kCriteoIntegerColumns; }

void CheckLabelLine(const LabelInput& label, ConfigErrors& errors) {
  const char* kOnly =
      "the CRITEO preset's label is 'label' in column 0; with the preset a label line may only "
      "set required";
  if (label.has_name() && label.name() != "label") {
    errors.Fail({{"data"}, {"schema"}, {"label"}, {"name"}},
                absl::StrCat("is '", label.name(), "': ", kOnly));
  }
  if (label.has_column() && label.column() != 0) {
    errors.Fail({{"data"}, {"schema"}, {"label"}, {"column"}},
                absl::StrCat("is ", label.column(), ": ", kOnly));
  }
}

// A dense line named I1..I13 overrides that input in place; any other adds
// an input, which needs an integer column.
void CheckDenseComposition(const InputSchema& s, ConfigErrors& errors) {
  for (int i = 0; i < s.dense_size(); ++i) {
    const DenseInput& d = s.dense(i);
    const int preset = CriteoColumnOf(d.name());
    if (IsIntegerColumn(preset)) {
      if (d.has_column() && d.column() != preset) {
        errors.Fail(LineField("dense", i, "column"),
                    absl::StrFormat("dense input '%s' is the CRITEO preset's column %d, not %d: "
                                    "a line named after a preset input overrides it in place; "
                                    "give the line another name to add an input reading column %d",
                                    d.name(), preset, d.column(), d.column()));
      }
    } else if (!d.has_column()) {
      errors.Fail(LineField("dense", i, "name"),
                  absl::StrFormat("dense input '%s' is none of the CRITEO preset's I1..I13: name "
                                  "one of them to override it, or set the integer column "
                                  "(column: 1..13) this added input reads",
                                  d.name()));
    } else if (!IsIntegerColumn(d.column())) {
      errors.Fail(LineField("dense", i, "column"),
                  absl::StrFormat("dense input '%s' reads column %d; in Criteo rows the numbers "
                                  "are columns 1..13 (I1..I13)",
                                  d.name(), d.column()));
    }
  }
}

// Sparse line i (feature `fc`, or null when unknown: CheckSparseInputs says
// so) names where it reads, or leaves it to the preset.
void CheckSparseLine(const SparseInput& in, int i, const FeatureConfig* fc, int position,
                     ConfigErrors& errors) {
  const int by_key = in.has_key() ? CriteoColumnOf(in.key()) : -1;
  if (in.has_key() && by_key < 0 && !in.has_column()) {
    errors.Fail(LineField("sparse", i, "key"),
                absl::StrFormat("feature '%s': key '%s' names no column of the CRITEO preset "
                                "(I1..I13, C1..C26); name one, or set column",
                                in.feature(), in.key()));
  }
  if (by_key >= 0 && in.has_column() && in.column() != by_key) {
    errors.Fail(LineField("sparse", i, "column"),
                absl::StrFormat("feature '%s': key '%s' is column %d of the CRITEO preset but "
                                "column is %d; set one of them",
                                in.feature(), in.key(), by_key, in.column()));
  }
  if (in.has_column() && (in.column() < 1 || in.column() >= kCriteoColumns)) {
    errors.Fail(LineField("sparse", i, "column"),
                absl::StrFormat("feature '%s': Criteo rows hold the label in column 0 and the "
                                "inputs in columns 1..%d, got %d",
                                in.feature(), kCriteoColumns - 1, in.column()));
  }
  if (fc == nullptr) return;
  const bool names_column = in.has_key() || in.has_column();
  if (names_column && fc->has_input_column()) {
    errors.Fail(LineField("sparse", i, in.has_key() ? "key" : "column"),
                absl::StrFormat("feature '%s' has input_column %d and a sparse line naming the "
                                "column it reads; keep one",
                                fc->name(), fc->input_column()));
  }
  if (!names_column && !fc->has_input_column() && position >= kCriteoCategoryColumns) {
    errors.Fail(LineField("sparse", i, "feature"),
                absl::StrFormat("feature '%s' is feature %d of the config, past the CRITEO "
                                "preset's %d categories, so the line must name the column it "
                                "reads (key: \"I5\", or column: 5)",
                                fc->name(), position + 1, kCriteoCategoryColumns));
  }
}

// Every feature without a line is fed by its position (or input_column).
void CheckFeaturesFedByPreset(const RunConfig& c, const std::set<std::string>& lines,
                              ConfigErrors& errors) {
  for (int f = 0; f < c.features_size(); ++f) {
    const FeatureConfig& fc = c.features(f);
    if (lines.count(fc.name()) > 0 || fc.has_input_column() || f < kCriteoCategoryColumns) continue;
    errors.Fail({{"features", f}, {"name"}},
                absl::StrFormat("feature '%s' is feature %d of the config, past the CRITEO "
                                "preset's %d categories: set input_column (0..%d) or add "
                                "sparse { feature: \"%s\" key: \"I5\" } naming the column it reads",
                                fc.name(), f + 1, kCriteoCategoryColumns,
                                kCriteoCategoryColumns - 1, fc.name()));
  }
}

void CheckComposedDenseCount(const RunConfig& c, ConfigErrors& errors) {
  const InputSchema expanded = ExpandCriteoPreset(c);
  const int inputs = ModelDenseInputs(expanded);
  if (c.model().num_dense_features() == inputs) return;
  errors.Fail({{"model"}, {"num_dense_features"}},
              absl::StrFormat("is %d but the CRITEO preset with data.schema's dense lines has %d "
                              "dense inputs and %d missing-value indicators (leave it unset to "
                              "take their sum)",
                              c.model().num_dense_features(), expanded.dense_size(),
                              inputs - expanded.dense_size()));
}

}  // namespace

void CheckCriteoSchema(const RunConfig& c, bool text, bool header, ConfigErrors& errors) {
  const InputSchema& s = c.data().schema();
  CheckLabelLine(s.label(), errors);
  if (!ComposesCriteoPreset(c)) return;
  CheckDenseLines(c, errors);
  CheckDenseComposition(s, errors);
  const std::set<std::string> lines = CheckSparseInputs(c, text, header, errors);
  for (int i = 0; i < s.sparse_size(); ++i) {
    const FeatureConfig* fc = nullptr;
    int position = -1;
    for (int f = 0; f < c.features_size(); ++f) {
      if (c.features(f).name() == s.sparse(i).feature()) {
        fc = &c.features(f);
        position = f;
      }
    }
    CheckSparseLine(s.sparse(i), i, fc, position, errors);
  }
  CheckFeaturesFedByPreset(c, lines, errors);
  if (s.dense_size() > 0) CheckComposedDenseCount(c, errors);
}

}  // namespace lemrt::config
