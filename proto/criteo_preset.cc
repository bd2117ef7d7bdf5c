#include "proto/criteo_preset.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace lemrt::config {
namespace {

bool HasColumnLines(const InputSchema& s) { return s.dense_size() > 0 || s.sparse_size() > 0; }

// The line of `s` feeding `feature` (the first; duplicates are config errors).
const SparseInput* LineOf(const InputSchema& s, const std::string& feature) {
  for (const SparseInput& in : s.sparse()) {
    if (in.feature() == feature) return &in;
  }
  return nullptr;
}

// The preset's own sparse input for column `column` (an I or C column).
SparseInput PresetSparse(const std::string& key, int column) {
  SparseInput in;
  in.set_key(key);
  in.set_column(column);
  in.set_type(column < kCriteoFirstCategory ? SparseInput::INT64 : SparseInput::HEX);
  return in;
}

// How feature `f` (index `f` of the config) is fed; false when the preset
// cannot feed it (a config error).
bool ExpandFeature(const RunConfig& c, int f, SparseInput* out) {
  const FeatureConfig& fc = c.features(f);
  const SparseInput* line = LineOf(c.data().schema(), fc.name());
  if (line != nullptr && (line->has_key() || line->has_column())) {
    const int column = line->has_key() ? CriteoColumnOf(line->key()) : -1;
    if (column >= 0) *out = PresetSparse(line->key(), column);
  } else {
    const int category = fc.has_input_column() ? fc.input_column() : f;
    if (category < 0 || category >= kCriteoCategoryColumns) return false;
    *out = PresetSparse(absl::StrCat("C", category + 1), kCriteoFirstCategory + category);
  }
  if (line != nullptr) out->MergeFrom(*line);
  out->set_feature(fc.name());
  return true;
}

}  // namespace

bool UsesCriteoPreset(const RunConfig& c) {
  const DataConfig& d = c.data();
  return d.has_criteo() || d.schema().preset() == InputSchema::CRITEO ||
         (d.has_binary() && !HasColumnLines(d.schema()));
}

bool ComposesCriteoPreset(const RunConfig& c) {
  return UsesCriteoPreset(c) && HasColumnLines(c.data().schema());
}

int CriteoColumnOf(std::string_view name) {
  if (name.size() < 2 || (name[0] != 'I' && name[0] != 'C')) return -1;
  if (name[1] == '0' || name.size() > 3) return -1;
  int k = 0;
  for (char ch : name.substr(1)) {
    if (ch < '0' || ch > '9') return -1;
    k = 10 * k + (ch - '0');
  }
  if (name[0] == 'I') return k >= 1 && k <= kCriteoIntegerColumns ? k : -1;
  return k >= 1 && k <= kCriteoCategoryColumns ? kCriteoFirstCategory + k - 1 : -1;
}

InputSchema ExpandCriteoPreset(const RunConfig& c) {
  const InputSchema& s = c.data().schema();
  InputSchema out;
  out.mutable_label()->set_name("label");
  out.mutable_label()->set_column(0);
  if (s.label().has_required()) out.mutable_label()->set_required(s.label().required());
  for (int k = 1; k <= kCriteoIntegerColumns; ++k) {
    DenseInput* d = out.add_dense();
    d->set_name(absl::StrCat("I", k));
    d->set_column(k);
    d->set_transform(DenseInput::LOG1P);
    for (const DenseInput& line : s.dense()) {
      if (line.name() == d->name()) {
        d->MergeFrom(line);
        break;
      }
    }
  }
  for (const DenseInput& line : s.dense()) {
    const int column = CriteoColumnOf(line.name());
    if (column < 1 || column > kCriteoIntegerColumns) *out.add_dense() = line;
  }
  for (int f = 0; f < c.features_size(); ++f) {
    SparseInput in;
    if (ExpandFeature(c, f, &in)) *out.add_sparse() = in;
  }
  if (s.has_sequence_overflow()) out.set_sequence_overflow(s.sequence_overflow());
  return out;
}

}  // namespace lemrt::config
