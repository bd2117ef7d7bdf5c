// The data source formats lemrt reads, one entry per DataConfig source
// (docs/data.md): how to create the DataSource and, for file formats, how to
// open one split's records and parser (used by the FileSource and by the
// tools lemrt_convert, lemrt_vocab and lemrt_predict). Adding a format is
// one entry here plus its RecordFile and RecordParser. Immutable; thread-safe.
#ifndef LEMRT_HOST_INPUT_SOURCE_REGISTRY_H_
#define LEMRT_HOST_INPUT_SOURCE_REGISTRY_H_

#include <memory>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "host/input/data_source.h"
#include "host/input/file_source.h"
#include "host/input/schema.h"
#include "proto/config.pb.h"

namespace lemrt::host {

enum class Split { kTrain, kEval };

struct SourceFormat {
  config::DataConfig::SourceCase source;
  std::string_view name;  // the DataConfig field: "synthetic", "text", ...
  // Creates the source for rank `rank` of `world_size`.
  absl::StatusOr<std::unique_ptr<DataSource>> (*create)(const config::RunConfig& config, int rank,
                                                        int world_size);
  // File formats: opens `split`'s files (records == null when the split has
  // none configured); null for synthetic data.
  absl::StatusOr<SplitReader> (*open_split)(const config::RunConfig& config,
                                            std::shared_ptr<const Schema> schema, Split split);
  // File formats: whether malformed rows are errors (the source's strict).
  bool (*strict)(const config::RunConfig& config);
};

// Every format, in DataConfig field order.
std::span<const SourceFormat> SourceFormats();

// The format of `data` (synthetic when no source is set).
const SourceFormat& FormatOf(const config::DataConfig& data);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_SOURCE_REGISTRY_H_
