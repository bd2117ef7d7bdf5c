#include "runtime/config_agreement.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "proto/config_diff.h"

namespace lemrt::runtime {
namespace {

// The differences of `mine` from rank 0's serialized config, as one status.
absl::Status CompareWithRankZero(const std::string& rank0_bytes, const config::RunConfig& mine) {
  config::RunConfig rank0;
  if (!rank0.ParseFromString(rank0_bytes)) {
    return absl::InternalError("cannot parse rank 0's config as broadcast");
  }
  const std::vector<std::string> differences = config::FieldDifferences(rank0, mine);
  if (differences.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "its config differs from rank 0's (", absl::StrJoin(differences, "; "),
      ", rank 0's value first); every rank must run the same config and flags: give each "
      "rank the same --config and --override"));
}

}  // namespace

absl::Status AgreeOnConfig(Communicator& comm, const config::RunConfig& config) {
  std::string bytes;
  if (comm.rank() == 0) CHECK(config.SerializeToString(&bytes));
  LEMRT_RETURN_IF_ERROR(comm.Broadcast(&bytes, /*root=*/0));
  const absl::Status local =
      comm.rank() == 0 ? absl::OkStatus() : CompareWithRankZero(bytes, config);
  return AgreeOnStatus(comm, local);
}

}  // namespace lemrt::runtime
