#include "host/input/source_registry.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "google/protobuf/util/message_differencer.h"
#include "host/formats/binary_file.h"
#include "host/formats/binary_parser.h"
#include "host/formats/delimited_parser.h"
#include "host/formats/example_parser.h"
#include "host/input/synthetic_source.h"
#include "host/formats/text_lines_file.h"
#include "host/formats/tfrecord_file.h"

namespace lemrt::host {
namespace {

using config::DataConfig;
using config::RunConfig;

// Text files of one split: each indexed, their headers equal.
absl::StatusOr<SplitReader> OpenTextFiles(const std::string& patterns, std::string_view field,
                                          bool header, char delimiter,
                                          std::shared_ptr<const Schema> schema) {
  SplitReader split;
  if (patterns.empty()) return split;
  LEMRT_ASSIGN_OR_RETURN(const std::vector<std::string> paths, ExpandPaths(patterns, field));
  std::vector<std::unique_ptr<RecordFile>> files;
  std::string first_header;
  for (const std::string& path : paths) {
    LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<TextFile> file, TextFile::Open(path, header));
    if (header && file->header_line().empty() && file->num_records() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", path, "' is empty: it has no header line (", std::string(field),
          " files have one, data.text.header) and no rows."));
    }
    if (files.empty()) {
      first_header = file->header_line();
    } else if (header && file->header_line() != first_header) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", path, "' has the header '", file->header_line(), "' but '", paths[0],
          "' has '", first_header, "'; the files of a split need the same columns."));
    }
    files.push_back(std::move(file));
  }
  LEMRT_ASSIGN_OR_RETURN(split.parser, DelimitedParser::Create(std::move(schema), delimiter,
                                                               first_header,
                                                               absl::StrCat("'", paths[0], "'")));
  split.records = std::make_unique<RecordSet>(std::move(files));
  return split;
}

absl::StatusOr<SplitReader> OpenTextSplit(const RunConfig& config,
                                          std::shared_ptr<const Schema> schema, Split split) {
  const config::TextSourceConfig& t = config.data().text();
  const bool train = split == Split::kTrain;
  return OpenTextFiles(train ? t.train_path() : t.eval_path(),
                       train ? "data.text.train_path" : "data.text.eval_path", t.header(),
                       t.has_delimiter() ? t.delimiter()[0] : '\t', std::move(schema));
}

absl::StatusOr<SplitReader> OpenCriteoSplit(const RunConfig& config,
                                            std::shared_ptr<const Schema> schema, Split split) {
  const config::CriteoSourceConfig& c = config.data().criteo();
  const bool train = split == Split::kTrain;
  return OpenTextFiles(train ? c.train_path() : c.eval_path(),
                       train ? "data.criteo.train_path" : "data.criteo.eval_path",
                       /*header=*/false, '\t', std::move(schema));
}

absl::StatusOr<SplitReader> OpenBinarySplit(const RunConfig& config,
                                            std::shared_ptr<const Schema> schema, Split split) {
  const config::BinarySourceConfig& b = config.data().binary();
  const bool train = split == Split::kTrain;
  const std::string& patterns = train ? b.train_path() : b.eval_path();
  SplitReader out;
  if (patterns.empty()) return out;
  LEMRT_ASSIGN_OR_RETURN(const std::vector<std::string> paths,
                         ExpandPaths(patterns, train ? "data.binary.train_path"
                                                     : "data.binary.eval_path"));
  std::vector<std::unique_ptr<RecordFile>> files;
  for (const std::string& path : paths) {
    LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<BinaryFile> file, BinaryFile::Open(path));
    if (files.empty()) {
      LEMRT_ASSIGN_OR_RETURN(out.parser, BinaryParser::Create(schema, file->columns(), path));
    } else if (!google::protobuf::util::MessageDifferencer::Equals(
                   file->columns(), static_cast<const BinaryFile&>(*files[0]).columns())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", path, "' stores other columns than '", paths[0],
          "'; the files of a split need the same columns."));
    }
    files.push_back(std::move(file));
  }
  out.records = std::make_unique<RecordSet>(std::move(files));
  return out;
}

absl::StatusOr<SplitReader> OpenTfRecordSplit(const RunConfig& config,
                                              std::shared_ptr<const Schema> schema, Split split) {
  const config::TfRecordSourceConfig& t = config.data().tfrecord();
  const bool train = split == Split::kTrain;
  const std::string& patterns = train ? t.train_path() : t.eval_path();
  SplitReader out;
  if (patterns.empty()) return out;
  LEMRT_ASSIGN_OR_RETURN(
      const std::vector<std::string> paths,
      ExpandPaths(patterns, train ? "data.tfrecord.train_path" : "data.tfrecord.eval_path"));
  std::vector<std::unique_ptr<RecordFile>> files;
  for (const std::string& path : paths) {
    LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<TfRecordFile> file, TfRecordFile::Open(path));
    files.push_back(std::move(file));
  }
  out.records = std::make_unique<RecordSet>(std::move(files));
  out.parser = std::make_unique<ExampleParser>(std::move(schema));
  return out;
}

// A FileSource over the format's splits.
template <auto kOpenSplit, auto kStrict>
absl::StatusOr<std::unique_ptr<DataSource>> CreateFileSource(const RunConfig& config, int rank,
                                                             int world_size) {
  LEMRT_ASSIGN_OR_RETURN(std::shared_ptr<const Schema> schema, ResolveSchema(config));
  LEMRT_ASSIGN_OR_RETURN(SplitReader train, kOpenSplit(config, schema, Split::kTrain));
  if (train.records == nullptr) {
    return absl::InvalidArgumentError("no training files are set in the data section.");
  }
  LEMRT_ASSIGN_OR_RETURN(SplitReader eval, kOpenSplit(config, schema, Split::kEval));
  LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<FileSource> source,
                         FileSource::Create(config, rank, world_size, schema, std::move(train),
                                            std::move(eval), kStrict(config)));
  return std::unique_ptr<DataSource>(std::move(source));
}

bool TextStrict(const RunConfig& c) { return c.data().text().strict(); }
// A binary record that passed its block checksum and still does not decode
// was written wrong or tampered with: always an error.
bool BinaryStrict(const RunConfig&) { return true; }
bool CriteoStrict(const RunConfig& c) { return c.data().criteo().strict(); }
bool TfRecordStrict(const RunConfig& c) { return c.data().tfrecord().strict(); }

absl::StatusOr<std::unique_ptr<DataSource>> CreateSynthetic(const RunConfig& config, int rank,
                                                            int world_size) {
  LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<SyntheticSource> s,
                         SyntheticSource::Create(config, rank, world_size));
  return std::unique_ptr<DataSource>(std::move(s));
}

const SourceFormat kFormats[] = {
    {DataConfig::kSynthetic, "synthetic", &CreateSynthetic, nullptr, nullptr},
    {DataConfig::kCriteo, "criteo", &CreateFileSource<&OpenCriteoSplit, &CriteoStrict>,
     &OpenCriteoSplit, &CriteoStrict},
    {DataConfig::kBinary, "binary", &CreateFileSource<&OpenBinarySplit, &BinaryStrict>,
     &OpenBinarySplit, &BinaryStrict},
    {DataConfig::kText, "text", &CreateFileSource<&OpenTextSplit, &TextStrict>, &OpenTextSplit,
     &TextStrict},
    {DataConfig::kTfrecord, "tfrecord", &CreateFileSource<&OpenTfRecordSplit, &TfRecordStrict>,
     &OpenTfRecordSplit, &TfRecordStrict},
};

}  // namespace

std::span<const SourceFormat> SourceFormats() { return kFormats; }

const SourceFormat& FormatOf(const DataConfig& data) {
  for (const SourceFormat& f : kFormats) {
    if (f.source == data.source_case()) return f;
  }
  return kFormats[0];  // no source set: synthetic data with the default knobs
}

absl::StatusOr<std::unique_ptr<DataSource>> CreateDataSource(const RunConfig& config, int rank,
                                                             int world_size) {
  return FormatOf(config.data()).create(config, rank, world_size);
}

}  // namespace lemrt::host
