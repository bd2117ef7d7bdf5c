#include "runtime/comm/stall_hook.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "glog/logging.h"

namespace lemrt::runtime {

StallHook::StallHook(int rank) {
  const char* hook = std::getenv(kStallHookEnv);
  if (hook == nullptr) return;
  for (const std::string& item :
       std::vector<std::string>(absl::StrSplit(hook, ',', absl::SkipEmpty()))) {
    int r = -1;
    long long first = -1, last = -1;
    char seconds[32] = "";
    int n = std::sscanf(item.c_str(), "%d:%lld-%lld:%31s", &r, &first, &last, seconds);
    if (n != 4) {
      last = -1;
      n = std::sscanf(item.c_str(), "%d:%lld:%31s", &r, &first, seconds);
      if (n == 3) {
        last = first;
        n = 4;
      }
    }
    if (n != 4 || first < 0 || last < first) {
      LOG(ERROR) << kStallHookEnv << ": ignoring '" << item
                 << "' (want RANK:FIRST_STEP[-LAST_STEP]:SECONDS)";
      continue;
    }
    if (r != rank) continue;
    const std::string s = seconds;
    entries_.push_back({first, last, s == "inf" ? -1.0 : std::atof(seconds)});
  }
}

void StallHook::At(int64_t step) const {
  for (const Entry& e : entries_) {
    if (step < e.first || step > e.last) continue;
    if (e.seconds < 0) {
      LOG(ERROR) << kStallHookEnv << ": this rank stops in step " << step + 1;
      while (true) std::this_thread::sleep_for(std::chrono::seconds(3600));
    }
    if (step == e.first) {
      LOG(WARNING) << kStallHookEnv << ": this rank sleeps " << e.seconds << " s in steps "
                   << e.first + 1 << "-" << e.last + 1;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(e.seconds));
  }
}

}  // namespace lemrt::runtime
