// --help of lemrt's command-line tools: the tool's own flags first (those its
// main file defines), then those of the libraries it links (glog, gflags),
// which gflags' own --help lists first by file name. Not thread-safe (reads
// the flag registry; call from main before other threads start).
#ifndef LEMRT_TOOLS_TOOL_HELP_H_
#define LEMRT_TOOLS_TOOL_HELP_H_

#include <string>

namespace lemrt::tools {

// The help text: `program`'s base name (argv[0]: "lemrt_train"), a colon and
// gflags' usage message, the flags defined in a file named like
// `main_file`'s base name ("lemrt_train_main.cc"), then every other flag,
// each as gflags describes it.
std::string HelpText(const char* program, const char* main_file);

// When argv holds --help (or -help, --help=true, --help=1) before a "--":
// prints HelpText(argv[0], main_file) to stdout and exits 0. Call after
// gflags::SetUsageMessage and before gflags::ParseCommandLineFlags, which
// would print its own order.
void HandleHelpFlag(int argc, char** argv, const char* main_file);

}  // namespace lemrt::tools

#endif  // LEMRT_TOOLS_TOOL_HELP_H_
