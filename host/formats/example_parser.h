// Parses serialized tf.train.Example records (proto/example.proto) by the
// schema (docs/data.md "TFRecord"): the label and each dense input are a
// feature of one value (float_list or int64_list; a missing or empty dense
// feature takes its default_value); a sparse input is an int64_list (INT64
// or HEX values) or a bytes_list (each value read as text by the input's
// type), a missing key meaning no values; weights are a float_list of the
// same length. Thread-compatible.
#ifndef LEMRT_HOST_FORMATS_EXAMPLE_PARSER_H_
#define LEMRT_HOST_FORMATS_EXAMPLE_PARSER_H_

#include <memory>

#include "host/input/record_parser.h"
#include "host/input/schema.h"
#include "proto/example.pb.h"

namespace lemrt::host {

class ExampleParser : public RecordParser {
 public:
  explicit ExampleParser(std::shared_ptr<const Schema> schema) : schema_(std::move(schema)) {}
  // Errors name the key and the input, e.g. "feature key 'C3' (sparse input
  // 'C3') is a float_list; INT64 values need an int64_list or bytes_list".
  absl::Status Parse(std::string_view record, ParsedSample* out) override;

 private:
  std::shared_ptr<const Schema> schema_;
  example::Example example_;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_EXAMPLE_PARSER_H_
