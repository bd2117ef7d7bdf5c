#include "host/formats/example_parser.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lemrt::host {
namespace {

// The one number of a label or dense feature; false when it has none.
absl::StatusOr<bool> OneNumber(const example::Feature& f, const std::string& key,
                               const std::string& input, double* value) {
  switch (f.kind_case()) {
    case example::Feature::kFloatList:
      if (f.float_list().value_size() > 1) break;
      if (f.float_list().value_size() == 0) return false;
      *value = f.float_list().value(0);
      return true;
    case example::Feature::kInt64List:
      if (f.int64_list().value_size() > 1) break;
      if (f.int64_list().value_size() == 0) return false;
      *value = static_cast<double>(f.int64_list().value(0));
      return true;
    case example::Feature::kBytesList:
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature key '%s' (%s) is a bytes_list; it needs a float_list or int64_list", key,
          input));
    default:
      return false;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("feature key '%s' (%s) has more than one value", key, input));
}

}  // namespace

absl::Status ExampleParser::Parse(std::string_view record, ParsedSample* out) {
  const Schema& schema = *schema_;
  out->Reset(schema);
  example_.Clear();
  if (!example_.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
    return absl::InvalidArgumentError("the record is not a serialized tf.train.Example");
  }
  const auto& features = example_.features().feature();
  double value = 0;
  absl::StatusOr<bool> has = false;
  for (int t = 0; t < schema.num_tasks(); ++t) {
    const LabelColumn& column = schema.labels[t];
    const auto label = features.find(column.key);
    has = false;
    if (label != features.end()) {
      has = OneNumber(label->second, column.key, LabelName(schema, t), &value);
      if (!has.ok()) return has.status();
    }
    if (!*has && !column.optional) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the example has no value for feature key '%s' (%s)", column.key, LabelName(schema, t)));
    }
    out->labels[t] = *has ? static_cast<float>(value) : std::numeric_limits<float>::quiet_NaN();
  }
  for (size_t k = 0; k < schema.dense.size(); ++k) {
    const DenseColumn& d = schema.dense[k];
    double x = d.default_value;
    bool present = false;
    const auto it = d.absent ? features.end() : features.find(d.name);
    if (it != features.end()) {
      has = OneNumber(it->second, d.name, absl::StrCat("dense input '", d.name, "'"), &value);
      if (!has.ok()) return has.status();
      present = *has;
      if (present) x = value;
    }
    out->dense_missing[k] = present ? 0 : 1;
    out->dense[k] = static_cast<float>(d.log1p ? std::log1p(std::max(x, 0.0)) : x);
  }
  for (size_t c = 0; c < schema.sparse.size(); ++c) {
    const SparseColumn& col = schema.sparse[c];
    const auto it = features.find(col.key);
    std::vector<uint64_t>& values = out->values[c];
    if (it != features.end()) {
      const example::Feature& f = it->second;
      if (f.has_int64_list()) {
        if (col.type == ValueType::kString) {
          // As text, so TSV "123" and int64 123 are one value.
          for (int64_t v : f.int64_list().value()) {
            const std::string text = absl::StrCat(v);
            values.push_back(Fingerprint64(text));
            if (keep_text_) out->texts[c].push_back(text);
          }
        } else {
          for (int64_t v : f.int64_list().value()) values.push_back(static_cast<uint64_t>(v));
        }
      } else if (f.has_bytes_list()) {
        for (const std::string& text : f.bytes_list().value()) {
          if (text.empty()) continue;
          uint64_t key = 0;
          if (!ParseValueKey(text, col.type, col.max_hex_digits, &key)) {
            return absl::InvalidArgumentError(absl::StrFormat(
                "feature key '%s' (sparse input '%s') holds '%s', not %s", col.key, col.key,
                text.substr(0, 24),
                col.type == ValueType::kHex ? "a hex value" : "an integer"));
          }
          values.push_back(key);
          if (keep_text_ && col.type != ValueType::kInt64) out->texts[c].push_back(text);
        }
      } else if (f.has_float_list()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "feature key '%s' (sparse input '%s') is a float_list; values need an int64_list or "
            "a bytes_list",
            col.key, col.key));
      }
    }
    if (!col.weighted()) continue;
    const auto w = features.find(col.weights_key);
    std::vector<float>& weights = out->weights[c];
    if (w != features.end() && w->second.has_float_list()) {
      weights.assign(w->second.float_list().value().begin(), w->second.float_list().value().end());
    } else if (w != features.end() && w->second.kind_case() != example::Feature::KIND_NOT_SET) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature key '%s' (the weights of sparse input '%s') is not a float_list",
          col.weights_key, col.key));
    }
    if (weights.size() != values.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature key '%s' has %d weights for the %d values of sparse input '%s'",
          col.weights_key, weights.size(), values.size(), col.key));
    }
  }
  return absl::OkStatus();
}

}  // namespace lemrt::host
