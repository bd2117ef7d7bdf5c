// The collective watchdog: a thread on every rank that notices when one of
// this rank's collectives (CollectiveMonitor) has waited past its timeout
// (stall_report.h: the larger of the configured timeout and 20 times the
// longest step so far, plus the stage's allowance), asks every other rank
// what it is doing, and aborts the job with a sentence naming the step, the
// stage and the ranks that did not arrive. A rank that is stopped (SIGSTOP),
// hung in the kernel or dead does not answer, and is named as such.
//
// Protocol, on the watchdog's own duplicate of the communicator it is given
// (tags: a query, an answer): every 100 ms each watchdog answers the queries
// waiting for it with its monitor's snapshot, then checks its own channels.
// A stalled rank sends a query to every other rank, collects answers for up
// to 5 s (answering queries meanwhile), calls `on_stall` with the sentence
// and MPI_Abort; should the abort not end the process within
// `abort_grace_s` (it blocks when the launcher cannot be reached), the rank
// _exits. A rank cut off from the rest of the job (stall_report.h, CutOff:
// the job spans hosts and no rank on another host answered) does not try
// the abort: it calls `on_stall` with the cut-off sentence and _exits at
// once, so the ranks of a host that lost its network end by themselves.
// Both exits use status kWatchdogExitCode. Costs nothing on the training
// path but the monitor's bookkeeping; the thread wakes 10 times a second.
//
// Needs MPI_THREAD_MULTIPLE (its thread calls MPI while the trainer's do).
// Thread-safe to construct and destroy from main; destroy it before
// MPI_Finalize.
#ifndef LEMRT_RUNTIME_COMM_MPI_WATCHDOG_H_
#define LEMRT_RUNTIME_COMM_MPI_WATCHDOG_H_

#include <mpi.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "runtime/comm/collective_monitor.h"
#include "runtime/comm/placement.h"

namespace lemrt::runtime {

// The exit status of a rank the watchdog ends (its MPI_Abort's error code).
inline constexpr int kWatchdogExitCode = 3;

struct WatchdogOptions {
  double timeout_s = 300;       // the configured collective timeout (> 0)
  double answer_wait_s = 5;     // how long a stalled rank waits for answers
  double poll_interval_s = 0.1;
  double abort_grace_s = 10;    // MPI_Abort's time to end the process
  // The ranks' hosts (of the parent communicator): the sentences name the
  // hosts of the ranks that did not arrive, and a cut-off host's ranks end
  // themselves. Empty: unknown (one host assumed, no host names).
  Placement placement;
  // Called once, on the watchdog thread, with the sentence, before the abort
  // (e.g. to print it). Must not use MPI.
  std::function<void(const std::string&)> on_stall;
};

class MpiWatchdog {
 public:
  // Duplicates `parent` and starts the thread. `monitor` must outlive the
  // watchdog. Errors: Internal when MPI fails.
  static absl::StatusOr<std::unique_ptr<MpiWatchdog>> Start(MPI_Comm parent,
                                                            const CollectiveMonitor& monitor,
                                                            WatchdogOptions options);
  // Stops and joins the thread and frees the communicator.
  ~MpiWatchdog();
  MpiWatchdog(const MpiWatchdog&) = delete;
  MpiWatchdog& operator=(const MpiWatchdog&) = delete;

 private:
  MpiWatchdog(MPI_Comm comm, const CollectiveMonitor& monitor, WatchdogOptions options);
  void Loop();
  // Answers every query waiting for this rank.
  void AnswerQueries();
  // Asks every rank, waits for the answers, reports and aborts; returns
  // without a word when this rank's stalled collective (as in `stalled`)
  // completed while it waited for the answers (a loaded machine, not a
  // stuck job).
  void AbortStalled(int channel, const CollectiveMonitor::Snapshot& stalled);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  const CollectiveMonitor& monitor_;
  const WatchdogOptions options_;
  int round_ = 0;  // queries asked so far; answers carry it in their tag
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_MPI_WATCHDOG_H_
