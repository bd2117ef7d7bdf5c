#include "runtime/comm/communicator.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace lemrt::runtime {

absl::Status AgreeOnStatus(Communicator& comm, const absl::Status& local) {
  // Max of (size - rank) over failing ranks picks the lowest failing rank.
  int64_t flag = local.ok() ? 0 : comm.size() - comm.rank();
  absl::Status st = comm.AllReduceMax(std::span<int64_t>(&flag, 1));
  if (!st.ok()) return st;
  if (flag == 0) return absl::OkStatus();
  const int root = comm.size() - static_cast<int>(flag);
  std::string payload;
  if (comm.rank() == root) {
    payload = absl::StrCat(static_cast<int>(local.code()), ":", local.message());
  }
  st = comm.Broadcast(&payload, root);
  if (!st.ok()) return st;
  const size_t colon = payload.find(':');
  const int code = std::stoi(payload.substr(0, colon));
  const absl::string_view message = absl::string_view(payload).substr(colon + 1);
  // An error every rank shares (a bad config) names no rank.
  int64_t differs = local.ok() || static_cast<int>(local.code()) != code ||
                            local.message() != message
                        ? 1
                        : 0;
  st = comm.AllReduceMax(std::span<int64_t>(&differs, 1));
  if (!st.ok()) return st;
  const absl::StatusCode agreed = static_cast<absl::StatusCode>(code);
  if (differs == 0) return absl::Status(agreed, message);
  return absl::Status(agreed, absl::StrCat("rank ", root, ": ", message));
}

}  // namespace lemrt::runtime
