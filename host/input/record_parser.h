// Turns one raw record of a file format (a text line, a tf.train.Example,
// a binary record) into a ParsedSample by the schema. One implementation per
// format; FileSource (host/input/file_source.h) drives them. Thread-compatible.
#ifndef LEMRT_HOST_INPUT_RECORD_PARSER_H_
#define LEMRT_HOST_INPUT_RECORD_PARSER_H_

#include <string_view>

#include "absl/status/status.h"
#include "host/input/parsed_sample.h"

namespace lemrt::host {

class RecordParser {
 public:
  virtual ~RecordParser() = default;
  // Fills `out` (Reset by the parser) from `record`. Errors: InvalidArgument
  // with a sentence naming the field or key and the input it feeds, without
  // the file and line (the caller adds them).
  virtual absl::Status Parse(std::string_view record, ParsedSample* out) = 0;

  // Also fill ParsedSample::texts (off by default; costs a string per
  // value). Formats that store only keys (binary) keep none.
  void set_keep_text(bool keep) { keep_text_ = keep; }

 protected:
  bool keep_text_ = false;
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_RECORD_PARSER_H_
