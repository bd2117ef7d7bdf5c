// What this rank's collectives are doing, for the watchdog
// (mpi_watchdog.h): per channel (the SparseCore and the TensorCore
// communicator, each used by one thread), how many collectives it has
// entered, whether it is inside one, which, since when, and the step and
// stage the trainer says it is in. Also the longest step so far, which
// scales the timeout. Thread-safe: each channel is written by its own thread
// (WatchedCommunicator, the trainer) and read by the watchdog's; the steady
// state allocates nothing (names are string literals).
#ifndef LEMRT_RUNTIME_COMM_COLLECTIVE_MONITOR_H_
#define LEMRT_RUNTIME_COMM_COLLECTIVE_MONITOR_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace lemrt::runtime {

class CollectiveMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  enum Channel : int { kSparseCore = 0, kTensorCore = 1, kNumChannels = 2 };
  static const char* ChannelName(int channel);  // "SparseCore", "TensorCore"

  // One channel as seen at one moment (plain data: sent between ranks).
  struct ChannelState {
    int64_t entered = 0;       // collectives entered so far on the channel
    int64_t step = -1;         // the trainer's step (-1: start-up)
    bool in_collective = false;
    double seconds = 0;        // inside the collective (or, outside, in the stage) so far
    double extra_timeout_s = 0;  // the stage's allowance on top of the timeout
    char op[24] = {};          // "all-to-all-v", ...
    char stage[32] = {};       // "sc_forward", ...
  };
  struct Snapshot {
    std::array<ChannelState, kNumChannels> channels;
    double longest_step_s = 0;
  };

  // The trainer's position on `channel`: `stage` must be a string literal (or
  // outlive the monitor). `extra_timeout_s` lengthens the timeout of the
  // channel's collectives in this stage (e.g. a checkpoint's file I/O).
  void SetStage(int channel, int64_t step, const char* stage, double extra_timeout_s = 0);
  // A step took `seconds` (the timeout grows with the longest).
  void StepDone(double seconds);

  // WatchedCommunicator: entering and leaving collective `op` (a literal).
  void Enter(int channel, const char* op);
  void Exit(int channel);

  Snapshot Take() const;

 private:
  struct Slot {
    int64_t entered = 0;
    int64_t step = -1;
    bool in_collective = false;
    Clock::time_point since = Clock::now();  // of the collective, or of the stage
    const char* op = "";
    const char* stage = "start-up";
    double extra_timeout_s = 0;
  };
  mutable std::mutex mu_;
  std::array<Slot, kNumChannels> slots_;
  double longest_step_s_ = 0;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_COLLECTIVE_MONITOR_H_
