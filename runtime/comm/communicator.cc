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
  return absl::Status(static_cast<absl::StatusCode>(code),
                      absl::StrCat("rank ", root, ": ", payload.substr(colon + 1)));
}

}  // namespace lemrt::runtime
