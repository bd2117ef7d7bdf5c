#include "layout/limits.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/text_file.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "proto/config_loader.h"

namespace lemrt::layout {
namespace {

class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstError(std::string source) : source_(std::move(source)) {}
  void AddError(int line, int column, const std::string& message) override {
    if (first_.empty())
      first_ = absl::StrFormat("%s:%d:%d: %s", source_, line + 1, column + 1, message);
  }
  const std::string& first() const { return first_; }

 private:
  std::string source_;
  std::string first_;
};

int32_t CeilDiv(int64_t a, int64_t b) { return static_cast<int32_t>((a + b - 1) / b); }

}  // namespace

bool PartitionLimits::any_limited() const {
  for (const TableLimit& t : tables) {
    if (t.limited()) return true;
  }
  return false;
}

absl::StatusOr<config::LimitsFile> ParseLimitsFile(const std::string& text,
                                                   const std::string& source) {
  config::LimitsFile out;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors(source);
  parser.RecordErrorsTo(&errors);
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  if (!parser.Parse(&input, &out)) {
    return absl::InvalidArgumentError(errors.first().empty()
                                          ? absl::StrCat(source, ": cannot parse the limits file")
                                          : errors.first());
  }
  return out;
}

absl::Status WriteLimitsFile(const config::LimitsFile& limits, const std::string& path) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(limits, &text);
  std::ofstream out(path);
  out << "# Partition limits per table (lemrt_limits); use with sparse_core { limits_file: \""
      << path << "\" }\n"
      << text;
  if (!out) return absl::InternalError(absl::StrCat("cannot write the limits file '", path, "'"));
  return absl::OkStatus();
}

absl::StatusOr<PartitionLimits> ResolveLimits(const config::RunConfig& config) {
  const config::SparseCoreConfig& sc = config.sparse_core();
  const int64_t n = std::max<int64_t>(1, config::TotalSparseCores(config));
  PartitionLimits out;
  for (const config::TableConfig& t : config.tables()) {
    TableLimit limit;
    if (sc.has_max_ids_per_partition()) limit.max_ids = sc.max_ids_per_partition();
    if (sc.has_max_unique_ids_per_partition()) {
      limit.max_unique_ids = sc.max_unique_ids_per_partition();
    }
    if (auto it = sc.max_ids_per_table().find(t.name()); it != sc.max_ids_per_table().end()) {
      limit.max_ids = CeilDiv(it->second, n);
    }
    if (auto it = sc.max_unique_ids_per_table().find(t.name());
        it != sc.max_unique_ids_per_table().end()) {
      limit.max_unique_ids = CeilDiv(it->second, n);
    }
    out.tables.push_back(limit);
    out.table_names.push_back(t.name());
  }
  if (sc.limits_file().empty()) return out;

  const std::string& path = sc.limits_file();
  absl::StatusOr<std::string> text =
      base::ReadTextFile(path, config::kMaxConfigBytes, "limits file");
  if (!text.ok()) return text.status();
  absl::StatusOr<config::LimitsFile> file = ParseLimitsFile(*text, path);
  if (!file.ok()) return file.status();
  std::vector<int> entry_of_table(out.tables.size(), -1);
  for (int i = 0; i < file->tables_size(); ++i) {
    const config::TableLimits& e = file->tables(i);
    const int t = config::FindTable(config, e.table());
    if (t < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: tables[%d] names table '%s', which the config does not have", path, i, e.table()));
    }
    if (entry_of_table[t] >= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: tables[%d] names table '%s' again (tables[%d] did): one entry a table", path, i,
          e.table(), entry_of_table[t]));
    }
    entry_of_table[t] = i;
    if ((e.has_max_ids_per_partition() && e.max_ids_per_partition() <= 0) ||
        (e.has_max_unique_ids_per_partition() && e.max_unique_ids_per_partition() <= 0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: table '%s': limits must be > 0, got max_ids_per_partition %d and "
          "max_unique_ids_per_partition %d",
          path, e.table(), e.max_ids_per_partition(), e.max_unique_ids_per_partition()));
    }
    if (e.has_max_ids_per_partition()) out.tables[t].max_ids = e.max_ids_per_partition();
    if (e.has_max_unique_ids_per_partition()) {
      out.tables[t].max_unique_ids = e.max_unique_ids_per_partition();
    }
  }
  return out;
}

}  // namespace lemrt::layout
