// MPI's lifetime in a binary's main, the one start-up every lemrt binary
// shares (STYLE.md: MPI is initialised in main only): MPI_Init_thread at the
// thread level the binary asks for, the level MPI provides kept and checked,
// and MPI_Finalize when the session ends, after every communicator made from
// it is gone. The binaries reach MPI only through the session and the
// communicators it makes. Thread-compatible; one per process.
#ifndef LEMRT_RUNTIME_COMM_MPI_SESSION_H_
#define LEMRT_RUNTIME_COMM_MPI_SESSION_H_

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/comm/collective_monitor.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/comm/mpi_watchdog.h"

namespace lemrt::runtime {

// MPI's thread levels, weakest first (MPI_THREAD_FUNNELED ...).
enum class MpiThreads { kFunneled, kSerialized, kMultiple };

class MpiSession {
 public:
  // Initialises MPI asking for `wanted`; MPI may provide less (provides()).
  MpiSession(int* argc, char*** argv, MpiThreads wanted);
  ~MpiSession();  // MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  // Whether MPI provides at least `level`.
  bool provides(MpiThreads level) const;
  // OK when MPI provides at least `needed`; else FailedPrecondition "MPI
  // provides thread level X; <why> needs Y".
  absl::Status Require(MpiThreads needed, std::string_view why) const;

  // This process's rank and the number of ranks (MPI_COMM_WORLD).
  int rank() const { return rank_; }
  int size() const { return size_; }

  // A communicator over every rank (a duplicate of MPI_COMM_WORLD). Errors
  // as MpiCommunicator::Create.
  absl::StatusOr<std::unique_ptr<MpiCommunicator>> World(MpiCommunicatorOptions options = {}) const;
  // Collective over every rank: a communicator over the ranks that share this
  // node's memory (MPI_COMM_TYPE_SHARED), ranked by world rank. Errors:
  // Internal when MPI fails.
  absl::StatusOr<std::unique_ptr<MpiCommunicator>> Node() const;
  // Collective over every rank: MpiWatchdog::Start over MPI_COMM_WORLD.
  absl::StatusOr<std::unique_ptr<MpiWatchdog>> StartWatchdog(const CollectiveMonitor& monitor,
                                                             WatchdogOptions options) const;

 private:
  int provided_ = 0;  // MPI_THREAD_*
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_MPI_SESSION_H_
