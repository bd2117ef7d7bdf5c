#include "host/formats/delimited_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lemrt::host {
namespace {

// A field for an error message: escaped and cut to a readable length.
std::string Quote(std::string_view field) {
  constexpr size_t kMaxShown = 24;
  const size_t shown = std::min(field.size(), kMaxShown);
  std::string text = absl::CHexEscape(absl::string_view(field.data(), shown));
  if (shown < field.size()) text += "...";
  return text;
}

absl::Status BadField(int column, std::string_view text, std::string_view expected,
                      std::string_view input) {
  return absl::InvalidArgumentError(absl::StrFormat("field %d '%s' is not %s (%s)", column + 1,
                                                    Quote(text), expected, input));
}

void Split(std::string_view line, char delimiter, std::vector<std::string_view>* out) {
  out->clear();
  size_t pos = 0;
  while (true) {
    const size_t next = line.find(delimiter, pos);
    if (next == std::string_view::npos) {
      out->push_back(line.substr(pos));
      return;
    }
    out->push_back(line.substr(pos, next - pos));
    pos = next + 1;
  }
}

bool ParseDouble(std::string_view text, double* value) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Calls `fn(item)` for each non-empty item of `text` split at `separator`
// (the whole text when separator is 0); stops at the first error.
template <typename Fn>
absl::Status ForEachItem(std::string_view text, char separator, Fn fn) {
  if (separator == 0) return text.empty() ? absl::OkStatus() : fn(text);
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t next = text.find(separator, pos);
    if (next == std::string_view::npos) next = text.size();
    if (next > pos) {
      if (absl::Status st = fn(text.substr(pos, next - pos)); !st.ok()) return st;
    }
    pos = next + 1;
  }
  return absl::OkStatus();
}

const char* Expected(ValueType type) {
  switch (type) {
    case ValueType::kInt64:
      return "an integer";
    case ValueType::kHex:
      return "a hex category";
    case ValueType::kString:
    default:
      return "a value";
  }
}

}  // namespace

DelimitedParser::DelimitedParser(std::shared_ptr<const Schema> schema, char delimiter)
    : schema_(std::move(schema)), delimiter_(delimiter) {}

absl::StatusOr<std::unique_ptr<DelimitedParser>> DelimitedParser::Create(
    std::shared_ptr<const Schema> schema, char delimiter, std::string_view header,
    std::string_view source) {
  auto p = std::unique_ptr<DelimitedParser>(new DelimitedParser(schema, delimiter));
  std::vector<std::string_view> names;
  if (!header.empty()) Split(header, delimiter, &names);
  auto resolve = [&](int column, const std::string& name, const char* what,
                     int* out) -> absl::Status {
    *out = column;
    if (column >= 0) return absl::OkStatus();
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the header of %s has no column '%s' (%s); its columns are: %s", source, name, what,
          Quote(header)));
    }
    *out = static_cast<int>(it - names.begin());
    const auto again = std::find(it + 1, names.end(), name);
    if (again != names.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the header of %s has two columns named '%s' (%s), columns %d and %d (1-based), so "
          "which one holds %s is ambiguous; rename one of them",
          source, name, what, *out + 1, static_cast<int>(again - names.begin()) + 1, what));
    }
    return absl::OkStatus();
  };
  absl::Status st;
  for (int t = 0; t < schema->num_tasks(); ++t) {
    const LabelColumn& label = schema->labels[t];
    int column = -1;
    st = resolve(label.column, label.key, LabelName(*schema, t).c_str(), &column);
    if (!st.ok() && label.optional) {
      column = -1;  // no label column: every row is unlabelled
      st = absl::OkStatus();
    }
    if (!st.ok()) return st;
    p->label_columns_.push_back(column);
  }
  for (const DenseColumn& d : schema->dense) {
    int column = -1;
    if (!d.absent) {
      st = resolve(d.column, d.name, absl::StrCat("dense input '", d.name, "'").c_str(), &column);
      if (!st.ok()) return st;
    }
    p->dense_columns_.push_back(column);
  }
  for (const SparseColumn& c : schema->sparse) {
    int column = -1, weights = -1;
    st = resolve(c.column, c.key, absl::StrCat("sparse input '", c.key, "'").c_str(), &column);
    if (!st.ok()) return st;
    if (c.weighted()) {
      st = resolve(c.weights_column, c.weights_key,
                   absl::StrCat("the weights of sparse input '", c.key, "'").c_str(), &weights);
      if (!st.ok()) return st;
    }
    p->sparse_columns_.push_back(column);
    p->weight_columns_.push_back(weights);
  }
  p->max_fields_ = header.empty() ? schema->max_text_columns : static_cast<int>(names.size());
  return p;
}

std::string_view DelimitedParser::Field(int column) const {
  return column < static_cast<int>(fields_.size()) ? fields_[column] : std::string_view();
}

absl::Status DelimitedParser::ParseLabel(int t, ParsedSample* out) const {
  const Schema& schema = *schema_;
  const int column = label_columns_[t];
  const std::string_view label = column < 0 ? std::string_view() : Field(column);
  float& value = out->labels[t];
  if (label.empty() && schema.labels[t].optional) {
    value = std::numeric_limits<float>::quiet_NaN();
  } else if (schema.binary_label) {
    if (label != "0" && label != "1") {
      return BadField(column, label, "a label (0 or 1)", LabelName(schema, t));
    }
    value = label[0] == '1' ? 1.0f : 0.0f;
  } else {
    double number = 0;
    if (!ParseDouble(label, &number)) {
      return BadField(column, label, "a label (a number in [0, 1])", LabelName(schema, t));
    }
    value = static_cast<float>(number);
  }
  return absl::OkStatus();
}

absl::Status DelimitedParser::ParseDense(ParsedSample* out) const {
  for (size_t k = 0; k < schema_->dense.size(); ++k) {
    const DenseColumn& d = schema_->dense[k];
    const int column = dense_columns_[k];
    const std::string_view text = column < 0 ? std::string_view() : Field(column);
    double x = d.default_value;
    out->dense_missing[k] = text.empty() ? 1 : 0;
    if (!text.empty()) {
      if (d.integer) {
        int64_t value = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || ptr != text.data() + text.size()) {
          return BadField(column, text, "an integer", absl::StrCat("dense input '", d.name, "'"));
        }
        x = static_cast<double>(value);
      } else if (!ParseDouble(text, &x)) {
        return BadField(column, text, "a number", absl::StrCat("dense input '", d.name, "'"));
      }
    }
    out->dense[k] = static_cast<float>(d.log1p ? std::log1p(std::max(x, 0.0)) : x);
  }
  return absl::OkStatus();
}

absl::Status DelimitedParser::ParseSparse(size_t c, ParsedSample* out) const {
  const SparseColumn& col = schema_->sparse[c];
  const int column = sparse_columns_[c];
  std::vector<uint64_t>& values = out->values[c];
  absl::Status st = ForEachItem(Field(column), col.separator, [&](std::string_view item) {
    uint64_t key = 0;
    if (!ParseValueKey(item, col.type, col.max_hex_digits, &key)) {
      return BadField(column, item, Expected(col.type),
                      absl::StrCat("sparse input '", col.key, "'"));
    }
    values.push_back(key);
    if (keep_text_ && col.type != ValueType::kInt64) out->texts[c].emplace_back(item);
    return absl::OkStatus();
  });
  if (!st.ok() || !col.weighted()) return st;
  const int wcolumn = weight_columns_[c];
  std::vector<float>& weights = out->weights[c];
  st = ForEachItem(Field(wcolumn), col.separator, [&](std::string_view item) {
    double w = 0;
    if (!ParseDouble(item, &w)) {
      return BadField(wcolumn, item, "a weight (a number)",
                      absl::StrCat("weights of sparse input '", col.key, "'"));
    }
    weights.push_back(static_cast<float>(w));
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  if (weights.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "field %d has %d weights for the %d values of sparse input '%s' (field %d)", wcolumn + 1,
        weights.size(), values.size(), col.key, column + 1));
  }
  return absl::OkStatus();
}

absl::Status DelimitedParser::Parse(std::string_view line, ParsedSample* out) {
  out->Reset(*schema_);
  Split(line, delimiter_, &fields_);
  if (max_fields_ > 0 && static_cast<int>(fields_.size()) > max_fields_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the line has more than %d fields", max_fields_));
  }
  for (int t = 0; t < schema_->num_tasks(); ++t) {
    if (absl::Status st = ParseLabel(t, out); !st.ok()) return st;
  }
  if (absl::Status st = ParseDense(out); !st.ok()) return st;
  for (size_t c = 0; c < schema_->sparse.size(); ++c) {
    if (absl::Status st = ParseSparse(c, out); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace lemrt::host
