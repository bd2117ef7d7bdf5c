// Parsing the config text, merging --override and a tool's flags, and mapping
// a validation error back to the file:line:column (or --override:line:column,
// or the flag) that set the field. The rules themselves are in the *_checks.cc files
// (config_check.h).
#include "proto/config_loader.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/text_file.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "proto/config_check.h"

namespace lemrt::config {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::TextFormat;

class ParseErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit ParseErrorCollector(std::string_view source) : source_(source) {}
  void AddError(int line, int column, const std::string& message) override {
    if (first_.empty()) {
      first_ = absl::StrFormat("%s:%d:%d: %s", source_, line + 1, column + 1, message);
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string source_;
  std::string first_;
};

absl::Status ParseText(std::string_view text, std::string_view source, bool merge,
                       TextFormat::ParseInfoTree* tree, RunConfig* out) {
  TextFormat::Parser parser;
  ParseErrorCollector errors(source);
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(tree);
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  const bool ok = merge ? parser.Merge(&input, out) : parser.Parse(&input, out);
  if (!ok) {
    return absl::InvalidArgumentError(
        errors.first().empty() ? absl::StrCat(std::string(source), ": cannot parse config") : errors.first());
  }
  return absl::OkStatus();
}

// Where a parse tree places a field path: the line and column of the
// deepest field of `path` it holds, and how many fields of `path` deep that
// is (0: none).
struct Location {
  int line = 0;
  int column = 0;
  size_t depth = 0;
};

// Location of `path` (indices into the merged config) in `tree`, the parse
// tree of one text. `before` is what was parsed before that text (null for
// the first): its entries of a repeated field come first in the merged
// config, so the text's own entry k is merged entry k + their count.
Location Locate(const TextFormat::ParseInfoTree* tree, const FieldPath& path,
                const google::protobuf::Message* before) {
  const Descriptor* desc = RunConfig::descriptor();
  Location found;
  for (size_t i = 0; i < path.size() && tree != nullptr && desc != nullptr; ++i) {
    const FieldDescriptor* fd = desc->FindFieldByName(path[i].field);
    if (fd == nullptr) break;
    int index = -1;
    if (fd->is_repeated()) {
      const int earlier = before == nullptr ? 0 : before->GetReflection()->FieldSize(*before, fd);
      index = std::max(path[i].index, 0) - earlier;
      if (index < 0) break;  // an entry of the earlier text
    }
    auto loc = tree->GetLocation(fd, index);
    if (loc.line < 0) break;
    found = {loc.line + 1, loc.column + 1, i + 1};
    if (fd->type() != FieldDescriptor::TYPE_MESSAGE) break;
    if (before != nullptr) {
      // Below a singular message the earlier text's fields still come
      // first; below a repeated entry of this text there are none.
      before = fd->is_repeated() ? nullptr : &before->GetReflection()->GetMessage(*before, fd);
    }
    tree = tree->GetTreeForNested(fd, index);
    desc = fd->message_type();
  }
  return found;
}

// Every check, in this order: the first error found is the one reported, so
// the order decides which of several errors a user sees first.
std::optional<ConfigError> FirstConfigError(const RunConfig& c, int world_size) {
  ConfigErrors errors;
  CheckTopology(c, world_size, errors);
  CheckVocabularyFiles(c, errors);
  CheckTables(c, errors);
  CheckFeatures(c, errors);
  CheckModel(c, errors);
  CheckTasks(c, errors);
  CheckTraining(c, errors);
  CheckIdLimits(c, errors);
  CheckEmulatedChip(c, errors);
  CheckQuantization(c, errors);
  CheckHotRows(c, errors);
  CheckPartitionLimits(c, errors);
  CheckTableStacking(c, errors);
  CheckHostWorkers(c, errors);
  CheckStepBufferReserve(c, errors);
  CheckData(c, errors);
  CheckObservability(c, errors);
  CheckCheckpoint(c, errors);
  CheckWatchdog(c, errors);
  CheckCounterSizes(c, errors);
  if (errors.empty()) return std::nullopt;
  return errors.first();
}

}  // namespace

std::string PathString(const FieldPath& path) {
  std::string out;
  for (const PathStep& s : path) {
    if (!out.empty()) out += ".";
    out += s.field;
    if (s.index >= 0) absl::StrAppend(&out, "[", s.index, "]");
  }
  return out;
}

absl::StatusOr<RunConfig> ParseConfig(std::string_view text, std::string_view source_name,
                                      std::string_view override_text, int world_size,
                                      const ConfigAdjustment& adjust,
                                      std::span<const FlagOverride> flag_overrides) {
  // Each text merged after the file: its name in messages, whether it is a
  // flag (named without a line), its parse tree, and the config before it.
  struct Merged {
    std::string name;
    bool is_flag = false;
    TextFormat::ParseInfoTree tree;
    RunConfig before;
  };
  RunConfig config;
  TextFormat::ParseInfoTree file_tree;
  absl::Status st = ParseText(text, source_name, /*merge=*/false, &file_tree, &config);
  if (!st.ok()) return st;
  std::deque<Merged> merged;  // ParseInfoTree does not move
  auto merge = [&](std::string_view name, bool is_flag, std::string_view more) {
    Merged& m = merged.emplace_back();
    m.name = std::string(name);
    m.is_flag = is_flag;
    m.before = config;
    return ParseText(more, name, /*merge=*/true, &m.tree, &config);
  };
  if (!override_text.empty()) {
    st = merge("--override", /*is_flag=*/false, override_text);
    if (!st.ok()) return st;
  }
  for (const FlagOverride& flag : flag_overrides) {
    if (flag.text.empty()) continue;
    st = merge(flag.flag, /*is_flag=*/true, flag.text);
    if (!st.ok()) return st;
  }
  if (adjust) adjust(&config);
  ApplyTopologyPreset(world_size, config.mutable_topology());
  ApplyDataDefaults(&config);
  if (config.data().max_table_rows() > 0) {
    for (TableConfig& table : *config.mutable_tables()) {
      table.set_vocab_size(std::min(table.vocab_size(), config.data().max_table_rows()));
    }
  }
  std::optional<ConfigError> error = FirstConfigError(config, world_size);
  if (!error.has_value()) return config;

  // The text that holds more of the offending field's path set it (of texts
  // that hold as much, the one merged last).
  std::string where(source_name);
  Location best = Locate(&file_tree, error->path, nullptr);
  if (best.depth > 0) where = absl::StrFormat("%s:%d:%d", source_name, best.line, best.column);
  for (const Merged& m : merged) {
    const Location in_text = Locate(&m.tree, error->path, &m.before);
    if (in_text.depth == 0 || in_text.depth < best.depth) continue;
    best = in_text;
    where = m.is_flag ? m.name : absl::StrFormat("%s:%d:%d", m.name, in_text.line, in_text.column);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": ", PathString(error->path), ": ", error->message));
}

absl::StatusOr<RunConfig> LoadConfig(const std::string& path, std::string_view override_text,
                                     int world_size, const ConfigAdjustment& adjust,
                                     std::span<const FlagOverride> flag_overrides) {
  absl::StatusOr<std::string> text = base::ReadTextFile(path, kMaxConfigBytes, "config file");
  if (!text.ok()) return text.status();
  return ParseConfig(*text, path, override_text, world_size, adjust, flag_overrides);
}

}  // namespace lemrt::config
