// Decodes binary records (host/formats/binary_format.h) into ParsedSamples of the
// config's schema: the config's labels, dense inputs and sparse inputs are
// found among the file's stored columns by name (labels: name, dense: name,
// sparse: key), which must agree on what was stored (transform, value type,
// weights). A file with one stored label gives it to a one-task config
// whatever its name. Every length is checked against the record's bytes.
// Thread-compatible.
#ifndef LEMRT_HOST_FORMATS_BINARY_PARSER_H_
#define LEMRT_HOST_FORMATS_BINARY_PARSER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "host/input/record_parser.h"
#include "host/input/schema.h"
#include "proto/config.pb.h"

namespace lemrt::host {

class BinaryParser : public RecordParser {
 public:
  // Errors: InvalidArgument naming `path` and the input the file lacks or
  // stored differently (e.g. another transform): convert it again.
  static absl::StatusOr<std::unique_ptr<BinaryParser>> Create(std::shared_ptr<const Schema> schema,
                                                              const config::InputSchema& stored,
                                                              const std::string& path);
  // Errors: InvalidArgument naming the sparse input whose count runs past
  // the record, a HEX key with more digits than allowed, or a record of the
  // wrong size.
  absl::Status Parse(std::string_view record, ParsedSample* out) override;

 private:
  struct StoredSparse {
    int schema_index = -1;  // -1: not read by this config
    bool weighted = false;
    std::string key;
  };
  explicit BinaryParser(std::shared_ptr<const Schema> schema) : schema_(std::move(schema)) {}
  // Finds each task's label among the stored ones (by name; a lone stored
  // label serves a one-task config).
  absl::Status MatchLabels(const config::InputSchema& stored, const std::string& path);

  std::shared_ptr<const Schema> schema_;
  int stored_labels_ = 1;
  std::vector<int> label_from_;  // per task: its stored label index
  int stored_dense_ = 0;
  std::vector<int> dense_from_;  // per schema dense input: its stored index, -1 absent
  std::vector<StoredSparse> stored_sparse_;
};

// The stored columns for `schema` (what lemrt_convert writes): the label
// (`label`, one task) or the labels in task order (`labels`, with their
// `required`), the dense inputs present in the data, every sparse input
// column.
config::InputSchema StoredColumns(const Schema& schema);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_FORMATS_BINARY_PARSER_H_
