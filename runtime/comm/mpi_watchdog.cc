#include "runtime/comm/mpi_watchdog.h"

#include <unistd.h>

#include <chrono>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/comm/exit_deadline.h"
#include "runtime/comm/stall_report.h"

namespace lemrt::runtime {
namespace {

constexpr int kQueryTag = 1;
// Answers to round R are tagged kFirstAnswerTag + R % kAnswerRounds, so an
// answer that comes after its round was given up is never taken for the
// next round's (MPI guarantees tags up to 32767).
constexpr int kFirstAnswerTag = 2;
constexpr int kAnswerRounds = 30000;
using Snapshot = CollectiveMonitor::Snapshot;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MpiWatchdog>> MpiWatchdog::Start(MPI_Comm parent,
                                                                 const CollectiveMonitor& monitor,
                                                                 WatchdogOptions options) {
  MPI_Comm dup;
  if (MPI_Comm_dup(parent, &dup) != MPI_SUCCESS) {
    return absl::InternalError("watchdog: MPI_Comm_dup failed");
  }
  std::unique_ptr<MpiWatchdog> w(new MpiWatchdog(dup, monitor, std::move(options)));
  w->thread_ = std::thread([p = w.get()] { p->Loop(); });
  return w;
}

MpiWatchdog::MpiWatchdog(MPI_Comm comm, const CollectiveMonitor& monitor, WatchdogOptions options)
    : comm_(comm), monitor_(monitor), options_(std::move(options)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiWatchdog::~MpiWatchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  MPI_Comm_free(&comm_);
}

void MpiWatchdog::Loop() {
  const auto interval = std::chrono::duration<double>(options_.poll_interval_s);
  while (!stop_) {
    std::this_thread::sleep_for(interval);
    AnswerQueries();
    const Snapshot mine = monitor_.Take();
    const int channel = StalledChannel(mine, options_.timeout_s);
    if (channel >= 0) AbortStalled(channel, mine);
  }
}

void MpiWatchdog::AnswerQueries() {
  while (true) {
    int waiting = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, comm_, &waiting, &status);
    if (!waiting) return;
    int answer_tag = 0;
    MPI_Recv(&answer_tag, 1, MPI_INT, status.MPI_SOURCE, kQueryTag, comm_, MPI_STATUS_IGNORE);
    const Snapshot answer = monitor_.Take();
    // Small: sent eagerly, so this returns without the asker's receive.
    MPI_Send(&answer, sizeof(answer), MPI_BYTE, status.MPI_SOURCE, answer_tag, comm_);
  }
}

void MpiWatchdog::AbortStalled(int channel, const Snapshot& stalled) {
  std::vector<std::optional<Snapshot>> peers(size_);
  std::vector<Snapshot> answers(size_);
  std::vector<MPI_Request> sends(size_, MPI_REQUEST_NULL), receives(size_, MPI_REQUEST_NULL);
  const int answer_tag = kFirstAnswerTag + round_++ % kAnswerRounds;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Isend(&answer_tag, 1, MPI_INT, r, kQueryTag, comm_, &sends[r]);
    MPI_Irecv(&answers[r], sizeof(Snapshot), MPI_BYTE, r, answer_tag, comm_, &receives[r]);
  }
  const Clock::time_point t0 = Clock::now();
  int answered = 0;
  while (answered < size_ - 1 && SecondsSince(t0) < options_.answer_wait_s) {
    AnswerQueries();  // other stalled ranks may be asking us
    for (int r = 0; r < size_; ++r) {
      if (receives[r] == MPI_REQUEST_NULL) continue;
      int done = 0;
      MPI_Test(&receives[r], &done, MPI_STATUS_IGNORE);
      if (done) {
        peers[r] = answers[r];
        ++answered;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const Snapshot mine = monitor_.Take();
  if (!StillStalled(stalled, mine, channel)) {
    // The collective completed meanwhile: give the round up. Its queries are
    // small and sent eagerly; late answers keep their round's tag.
    for (MPI_Request& r : receives) {
      if (r == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Waitall(size_, sends.data(), MPI_STATUSES_IGNORE);
    return;
  }
  const Placement* placement =
      options_.placement.num_ranks() == size_ ? &options_.placement : nullptr;
  if (placement != nullptr && CutOff(rank_, *placement, peers)) {
    // The launcher is on the other side too: an abort would block. The
    // launcher and the other hosts see this rank's exit once they can.
    if (options_.on_stall) {
      options_.on_stall(CutOffReport(rank_, channel, mine, options_.timeout_s, peers,
                                     options_.answer_wait_s, *placement));
    }
    _exit(kWatchdogExitCode);
  }
  if (options_.on_stall) {
    options_.on_stall(StallReport(rank_, channel, mine, options_.timeout_s, peers,
                                  options_.answer_wait_s, placement));
  }
  ExitAfter(options_.abort_grace_s, kWatchdogExitCode,
            absl::StrFormat("watchdog: MPI_Abort did not end rank %d within %.0f s; exiting", rank_,
                            options_.abort_grace_s));
  MPI_Abort(comm_, kWatchdogExitCode);
  std::abort();
}

}  // namespace lemrt::runtime
