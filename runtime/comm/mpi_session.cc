#include "runtime/comm/mpi_session.h"

#include <mpi.h>

#include <utility>

#include "absl/strings/str_format.h"

namespace lemrt::runtime {
namespace {

int MpiLevel(MpiThreads level) {
  switch (level) {
    case MpiThreads::kFunneled:
      return MPI_THREAD_FUNNELED;
    case MpiThreads::kSerialized:
      return MPI_THREAD_SERIALIZED;
    case MpiThreads::kMultiple:
      return MPI_THREAD_MULTIPLE;
  }
  return MPI_THREAD_MULTIPLE;
}

const char* LevelName(int level) {
  if (level >= MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  if (level >= MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level >= MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  return "MPI_THREAD_SINGLE";
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv, MpiThreads wanted) {
  MPI_Init_thread(argc, argv, MpiLevel(wanted), &provided_);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

bool MpiSession::provides(MpiThreads level) const { return provided_ >= MpiLevel(level); }

absl::Status MpiSession::Require(MpiThreads needed, std::string_view why) const {
  if (provides(needed)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat("MPI provides thread level %s; %s needs %s",
                                                       LevelName(provided_), why,
                                                       LevelName(MpiLevel(needed))));
}

absl::StatusOr<std::unique_ptr<MpiCommunicator>> MpiSession::World(
    MpiCommunicatorOptions options) const {
  return MpiCommunicator::Create(MPI_COMM_WORLD, options);
}

absl::StatusOr<std::unique_ptr<MpiCommunicator>> MpiSession::Node() const {
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) !=
      MPI_SUCCESS) {
    return absl::InternalError("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
  }
  auto comm = MpiCommunicator::Create(node);
  MPI_Comm_free(&node);
  return comm;
}

absl::StatusOr<std::unique_ptr<MpiWatchdog>> MpiSession::StartWatchdog(
    const CollectiveMonitor& monitor, WatchdogOptions options) const {
  return MpiWatchdog::Start(MPI_COMM_WORLD, monitor, std::move(options));
}

}  // namespace lemrt::runtime
