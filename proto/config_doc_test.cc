// docs/configuration.md documents every field of proto/config.proto: this test
// walks the descriptors of RunConfig (and of LimitsFile, the limits file's
// schema) and fails naming each field path without a table row in the doc,
// and each row that names no field. Likewise every top-level field of the run
// summary (proto/summary.proto, RunSummary) has a row in docs/observability.md. A message type used in several places is
// documented once, at its first path in declaration order (so
// training.dense_optimizer needs a row, its subfields do not: they are the
// rows of tables.optimizer).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"

namespace lemrt::config {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

constexpr char kDoc[] = "docs/configuration.md";

struct FieldPath {
  std::string path;   // e.g. "tables.optimizer.adam.beta1"
  std::string where;  // e.g. "OptimizerConfig.Adam.beta1 (field 1)"
  std::string default_text;
  const FieldDescriptor* field = nullptr;
};

std::string DefaultText(const FieldDescriptor* f) {
  if (f->is_repeated()) return "empty";
  if (f->type() == FieldDescriptor::TYPE_MESSAGE) return "unset";
  if (!f->has_default_value()) return "unset";
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL:
      return f->default_value_bool() ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return f->default_value_enum()->name();
    case FieldDescriptor::CPPTYPE_STRING:
      return "\"" + f->default_value_string() + "\"";
    case FieldDescriptor::CPPTYPE_INT32:
      return std::to_string(f->default_value_int32());
    case FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(f->default_value_int64());
    case FieldDescriptor::CPPTYPE_UINT32:
      return std::to_string(f->default_value_uint32());
    case FieldDescriptor::CPPTYPE_UINT64:
      return std::to_string(f->default_value_uint64());
    case FieldDescriptor::CPPTYPE_FLOAT: {
      std::ostringstream s;
      s << f->default_value_float();
      return s.str();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      std::ostringstream s;
      s << f->default_value_double();
      return s.str();
    }
    default:
      return "?";
  }
}

// Depth-first over the fields in declaration order; each message type's
// fields are listed under the first path that reaches it. Map fields are
// leaves (their entry messages are not config messages).
void Walk(const Descriptor* d, const std::string& prefix, std::set<std::string>* visited,
          std::vector<FieldPath>* out) {
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string path = prefix + f->name();
    out->push_back({path,
                    d->full_name().substr(d->file()->package().size() + 1) + "." + f->name() +
                        " (field " + std::to_string(f->number()) + ")",
                    DefaultText(f), f});
    if (f->type() != FieldDescriptor::TYPE_MESSAGE || f->is_map()) continue;
    const Descriptor* m = f->message_type();
    if (!visited->insert(m->full_name()).second) continue;
    Walk(m, path + ".", visited, out);
  }
}

std::vector<FieldPath> AllFieldPaths() {
  std::set<std::string> visited = {RunConfig::descriptor()->full_name(),
                                   LimitsFile::descriptor()->full_name()};
  std::vector<FieldPath> out;
  Walk(RunConfig::descriptor(), "", &visited, &out);
  Walk(LimitsFile::descriptor(), "LimitsFile.", &visited, &out);
  return out;
}

struct DocRow {
  int line = 0;
  std::string heading;       // the "## ..." section the row is in
  std::string default_cell;  // the row's second cell
};

// Rows of the doc's tables whose first cell is a backquoted field path.
std::map<std::string, DocRow> DocumentedPaths(const std::string& text) {
  static const std::regex kRow(R"(^\|\s*`([A-Za-z_][A-Za-z0-9_.]*)`\s*\|)");
  std::map<std::string, DocRow> rows;
  std::istringstream in(text);
  std::string line, heading;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.rfind("## ", 0) == 0) heading = line;
    std::smatch m;
    if (!std::regex_search(line, m, kRow)) continue;
    const std::string rest = m.suffix().str();
    rows.emplace(m[1].str(), DocRow{n, heading, rest.substr(0, rest.find('|'))});
  }
  return rows;
}

std::string ReadDoc(const char* relative_path) {
  std::ifstream in(std::string(LEMRT_SOURCE_DIR) + "/" + relative_path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Every backquoted name in the first cell of a table row (`stages[]` -> stages).
std::set<std::string> FirstCellNames(const std::string& text) {
  static const std::regex kName(R"(`([A-Za-z_][A-Za-z0-9_]*)(\[\])?`)");
  std::set<std::string> names;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0) continue;
    const size_t end = line.find(" |", 1);
    const std::string cell = line.substr(0, end);
    for (std::sregex_iterator it(cell.begin(), cell.end(), kName), last; it != last; ++it) {
      names.insert((*it)[1].str());
    }
  }
  return names;
}

std::string FirstComponent(const std::string& path) {
  const size_t dot = path.find('.');
  if (path.rfind("LimitsFile.", 0) == 0) return "LimitsFile";
  return dot == std::string::npos ? path : path.substr(0, dot);
}

TEST(ConfigDocTest, EveryConfigFieldHasARowInConfigurationMd) {
  const std::string doc_path = std::string(LEMRT_SOURCE_DIR) + "/" + kDoc;
  std::ifstream in(doc_path);
  ASSERT_TRUE(in) << "cannot read " << doc_path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::map<std::string, DocRow> rows = DocumentedPaths(buffer.str());

  // Where the rows of each top-level field live, to say where to add one.
  std::map<std::string, std::string> heading_of;
  for (const auto& [path, row] : rows) heading_of.emplace(FirstComponent(path), row.heading);

  const std::vector<FieldPath> fields = AllFieldPaths();
  ASSERT_GT(fields.size(), 100u);  // the walk reached the nested messages
  std::set<std::string> known;
  std::string missing;
  for (const FieldPath& f : fields) {
    known.insert(f.path);
    if (rows.count(f.path)) continue;
    const auto h = heading_of.find(FirstComponent(f.path));
    const std::string where =
        h != heading_of.end()
            ? "in the table under \"" + h->second + "\""
            : "in a new section \"## " + FirstComponent(f.path) + "\" (a table | field | default | effect |)";
    missing += "  " + std::string(kDoc) + " has no row for config field `" + f.path + "` (" +
               f.where + " in proto/config.proto). Add " + where + ":\n    | `" + f.path + "` | " +
               f.default_text + " | <what it does, its unit and valid range> |\n";
  }
  EXPECT_TRUE(missing.empty()) << "Every field of proto/config.proto needs a row in " << kDoc
                               << " with its default and effect:\n"
                               << missing;

  std::string stale;
  for (const auto& [path, row] : rows) {
    if (known.count(path)) continue;
    stale += "  " + std::string(kDoc) + ":" + std::to_string(row.line) + ": `" + path +
             "` is not a field of proto/config.proto (renamed or removed?): fix the path or "
             "delete the row\n";
  }
  EXPECT_TRUE(stale.empty()) << stale;
}

// Whether a row's default cell states the proto's explicit default: the enum
// value's or bool's name, or a number equal to it (1e-8 and 1e-08 alike).
bool CellStatesDefault(const FieldDescriptor* f, const std::string& cell) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL:
      return cell.find(f->default_value_bool() ? "true" : "false") != std::string::npos;
    case FieldDescriptor::CPPTYPE_ENUM:
      return cell.find(f->default_value_enum()->name()) != std::string::npos;
    case FieldDescriptor::CPPTYPE_STRING:
      return cell.find(f->default_value_string()) != std::string::npos;
    default:
      break;
  }
  double want = 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: want = f->default_value_int32(); break;
    case FieldDescriptor::CPPTYPE_INT64: want = static_cast<double>(f->default_value_int64()); break;
    case FieldDescriptor::CPPTYPE_UINT32: want = f->default_value_uint32(); break;
    case FieldDescriptor::CPPTYPE_UINT64: want = static_cast<double>(f->default_value_uint64()); break;
    case FieldDescriptor::CPPTYPE_FLOAT: want = f->default_value_float(); break;
    case FieldDescriptor::CPPTYPE_DOUBLE: want = f->default_value_double(); break;
    default: return true;
  }
  static const std::regex kNumber(R"((^|[^A-Za-z0-9_.])(-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?))");
  for (std::sregex_iterator it(cell.begin(), cell.end(), kNumber), last; it != last; ++it) {
    const double got = std::stod((*it)[2].str());
    if (std::abs(got - want) <= 1e-5 * std::abs(want)) return true;  // float precision
  }
  return false;
}

TEST(ConfigDocTest, RowsStateTheProtoDefaults) {
  const std::map<std::string, DocRow> rows = DocumentedPaths(ReadDoc(kDoc));
  std::string wrong;
  for (const FieldPath& f : AllFieldPaths()) {
    const auto row = rows.find(f.path);
    if (row == rows.end() || !f.field->has_default_value() || f.field->is_repeated()) continue;
    if (CellStatesDefault(f.field, row->second.default_cell)) continue;
    wrong += "  " + std::string(kDoc) + ":" + std::to_string(row->second.line) + ": `" + f.path +
             "` has default " + f.default_text + " in proto/config.proto (" + f.where +
             "), but the row's default column says '" + row->second.default_cell +
             "': update the row (or the proto)\n";
  }
  EXPECT_TRUE(wrong.empty()) << wrong;
}

TEST(SummaryDocTest, EveryTopLevelSummaryFieldHasARowInObservabilityMd) {
  const std::string text = ReadDoc("docs/observability.md");
  ASSERT_FALSE(text.empty()) << "cannot read docs/observability.md";
  const std::set<std::string> names = FirstCellNames(text);
  const Descriptor* d = summary::RunSummary::descriptor();
  std::string missing;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (names.count(f->name())) continue;
    missing += "  docs/observability.md has no row for summary field `" + f->name() +
               "` (RunSummary." + f->name() + ", field " + std::to_string(f->number()) +
               " in proto/summary.proto). Add to the table under \"## The progress lines and "
               "the summary JSON\":\n    | `" + f->name() + "` | <what it holds, its unit; where "
               "it is documented> |\n";
  }
  EXPECT_TRUE(missing.empty()) << missing;
}

TEST(ConfigDocTest, WalkNamesNestedFieldsOnceEach) {
  std::set<std::string> paths;
  for (const FieldPath& f : AllFieldPaths()) {
    EXPECT_TRUE(paths.insert(f.path).second) << f.path;
  }
  EXPECT_TRUE(paths.count("tables.optimizer.adam.beta1"));
  EXPECT_TRUE(paths.count("training.dense_optimizer"));
  EXPECT_FALSE(paths.count("training.dense_optimizer.adam.beta1"));  // documented once
  EXPECT_TRUE(paths.count("sparse_core.max_ids_per_table"));
  EXPECT_FALSE(paths.count("sparse_core.max_ids_per_table.key"));  // maps are leaves
  EXPECT_TRUE(paths.count("LimitsFile.tables.max_ids_per_partition"));
}

TEST(ConfigDocTest, DocRowsAreFoundWithTheirSection) {
  const auto rows = DocumentedPaths(
      "## training\n| field | default | effect |\n|---|---|---|\n"
      "| `training.steps` | 100 | steps |\n| `--flag` | x | y |\ntext `a.b` |\n");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows.begin()->first, "training.steps");
  EXPECT_EQ(rows.begin()->second.line, 4);
  EXPECT_EQ(rows.begin()->second.heading, "## training");
}

}  // namespace
}  // namespace lemrt::config
