// Parses delimited text lines (TSV, CSV without quoting; docs/data.md
// "Delimited text") by the schema: the fields of a line are split at the
// delimiter, a line with fewer fields than the schema reads is padded with
// empty (missing) fields, and one with more fields than the header (or the
// CRITEO preset's 40) is malformed. Empty fields: the label is missing (a
// bad row, or NaN where the label is optional), a dense input takes its default_value, a sparse input has no
// value. A sparse field with a separator holds a list; empty items are
// skipped. Thread-compatible.
#ifndef LEMRT_HOST_FORMATS_DELIMITED_PARSER_H_
#define LEMRT_HOST_FORMATS_DELIMITED_PARSER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "host/input/record_parser.h"
#include "host/input/schema.h"

namespace lemrt::host {

class DelimitedParser : public RecordParser {
 public:
  // Resolves the schema's columns: by position, or by name in `header` (the
  // header line of `source`, empty when the files have none). Errors:
  // InvalidArgument naming `source` and the column a header lacks.
  static absl::StatusOr<std::unique_ptr<DelimitedParser>> Create(
      std::shared_ptr<const Schema> schema, char delimiter, std::string_view header,
      std::string_view source);

  // Errors name the 1-based field, its text and the input, e.g. "field 40
  // 'zz12' is not a hex category (sparse input 'C26')".
  absl::Status Parse(std::string_view line, ParsedSample* out) override;

 private:
  DelimitedParser(std::shared_ptr<const Schema> schema, char delimiter);
  std::string_view Field(int column) const;
  // The parts of Parse, on the line's fields_.
  absl::Status ParseLabel(int task, ParsedSample* out) const;
  absl::Status ParseDense(ParsedSample* out) const;
  absl::Status ParseSparse(size_t column, ParsedSample* out) const;

  std::shared_ptr<const Schema> schema_;
  const char delimiter_;
  int max_fields_ = 0;  // 0 = any number
  std::vector<int> label_columns_;  // per task; -1: absent (optional labels)
  std::vector<int> dense_columns_;   // -1: absent
  std::vector<int> sparse_columns_;
  std::vector<int> weight_columns_;  // -1: no weights
  std::vector<std::string_view> fields_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_DELIMITED_PARSER_H_
