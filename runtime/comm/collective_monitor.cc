#include "runtime/comm/collective_monitor.h"

#include <algorithm>
#include <cstring>

namespace lemrt::runtime {
namespace {

template <size_t N>
void CopyName(char (&out)[N], const char* in) {
  std::strncpy(out, in, N - 1);
  out[N - 1] = '\0';
}

}  // namespace

const char* CollectiveMonitor::ChannelName(int channel) {
  return channel == kSparseCore ? "SparseCore" : "TensorCore";
}

void CollectiveMonitor::SetStage(int channel, int64_t step, const char* stage,
                                 double extra_timeout_s) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_[channel];
  s.step = step;
  s.stage = stage;
  s.extra_timeout_s = extra_timeout_s;
  if (!s.in_collective) s.since = Clock::now();
}

void CollectiveMonitor::StepDone(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  longest_step_s_ = std::max(longest_step_s_, seconds);
}

void CollectiveMonitor::Enter(int channel, const char* op) {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_[channel];
  ++s.entered;
  s.in_collective = true;
  s.op = op;
  s.since = now;
}

void CollectiveMonitor::Exit(int channel) {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_[channel];
  s.in_collective = false;
  s.since = now;
}

CollectiveMonitor::Snapshot CollectiveMonitor::Take() const {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  Snapshot out;
  out.longest_step_s = longest_step_s_;
  for (int c = 0; c < kNumChannels; ++c) {
    const Slot& s = slots_[c];
    ChannelState& o = out.channels[c];
    o.entered = s.entered;
    o.step = s.step;
    o.in_collective = s.in_collective;
    o.seconds = std::chrono::duration<double>(now - s.since).count();
    o.extra_timeout_s = s.extra_timeout_s;
    CopyName(o.op, s.op);
    CopyName(o.stage, s.stage);
  }
  return out;
}

}  // namespace lemrt::runtime
