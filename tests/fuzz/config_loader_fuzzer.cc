// libFuzzer target for the run-config and limits-file text loaders: the
// input is parsed as a RunConfig (then validated, topology filled for 1..4
// ranks) and as a LimitsFile. Errors are fine; crashes, hangs and sanitizer
// reports are not.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "layout/limits.h"
#include "proto/config_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const int world_size = 1 + static_cast<int>(size % 4);
  auto config = lemrt::config::ParseConfig(text, "fuzz.pbtxt", "", world_size);
  if (config.ok()) {
    // A valid config must also resolve its limits without crashing (not
    // from a file the input names: that could be /dev/zero).
    config->mutable_sparse_core()->clear_limits_file();
    (void)lemrt::layout::ResolveLimits(*config);
  }
  (void)lemrt::layout::ParseLimitsFile(text, "fuzz.limits");
  return 0;
}
