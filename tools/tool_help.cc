#include "tools/tool_help.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gflags/gflags.h"

namespace lemrt::tools {
namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsHelp(const char* arg) {
  for (const char* form : {"--help", "-help", "--help=true", "-help=true", "--help=1"}) {
    if (std::strcmp(arg, form) == 0) return true;
  }
  return false;
}

}  // namespace

std::string HelpText(const char* program, const char* main_file) {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);  // sorted by file, then name
  const std::string own = BaseName(main_file);
  // The name comes from argv[0]: gflags knows the program's name only once
  // ParseCommandLineFlags has run (before, it says "UNKNOWN").
  std::string text =
      BaseName(program) + ": " + gflags::ProgramUsage() + "\n\n  Flags of this tool:\n";
  for (const auto& f : flags) {
    if (BaseName(f.filename) == own) text += gflags::DescribeOneFlag(f);
  }
  text += "\n  Flags of the libraries it uses (glog, gflags):\n";
  for (const auto& f : flags) {
    if (BaseName(f.filename) != own) text += gflags::DescribeOneFlag(f);
  }
  return text;
}

void HandleHelpFlag(int argc, char** argv, const char* main_file) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return;
    if (IsHelp(argv[i])) {
      std::fputs(HelpText(argc > 0 ? argv[0] : "", main_file).c_str(), stdout);
      std::exit(0);
    }
  }
}

}  // namespace lemrt::tools
