#include "runtime/checkpoint/step_dirs.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "runtime/checkpoint/durable_files.h"

namespace lemrt::checkpoint {
namespace {

constexpr std::string_view kStepPrefix = "step-";

bool IsDir(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The names of the entries of `dir` (without . and ..).
absl::StatusOr<std::vector<std::string>> ListNames(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    const int err = errno;
    if (err == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat("checkpoint directory '", dir,
                                              "' is not a directory (a checkpoint is a directory "
                                              "of step-N directories, or one step-N directory)."));
    }
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat("checkpoint directory '", dir, "' does not exist."));
    }
    return absl::NotFoundError(
        absl::StrCat("checkpoint directory '", dir, "' cannot be read: ", std::strerror(err), "."));
  }
  std::vector<std::string> names;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

void WarnIfError(const absl::Status& st) {
  if (!st.ok()) LOG(WARNING) << st.message() << " (left for the next start to remove)";
}

void Hook(const StepHook& hook, std::string_view point) {
  if (hook) hook(point);
}

}  // namespace

std::optional<int64_t> ParseStepDirName(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  name.remove_prefix(prefix.size());
  if (name.substr(0, kStepPrefix.size()) != kStepPrefix) return std::nullopt;
  name.remove_prefix(kStepPrefix.size());
  // At most 18 digits: a stray "step-99999999999999999999" must not overflow.
  if (name.empty() || name.size() > 18 || name.find_first_not_of("0123456789") != name.npos) {
    return std::nullopt;
  }
  int64_t step = 0;
  for (char c : name) step = step * 10 + (c - '0');
  return step;
}

absl::StatusOr<std::vector<int64_t>> ListPublishedSteps(const std::string& root) {
  LEMRT_ASSIGN_OR_RETURN(const std::vector<std::string> names, ListNames(root));
  std::vector<int64_t> steps;
  for (const std::string& name : names) {
    const std::optional<int64_t> step = ParseStepDirName(name);
    if (step.has_value() && IsDir(Join(root, name))) steps.push_back(*step);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

absl::StatusOr<std::string> BeginStepDir(const std::string& root, int64_t step) {
  LEMRT_RETURN_IF_ERROR(MakeDirs(root));
  const std::string dir = Join(root, kIncompletePrefix + StepDirName(step));
  LEMRT_RETURN_IF_ERROR(RemoveTree(dir));
  LEMRT_RETURN_IF_ERROR(MakeDirs(dir));
  return dir;
}

absl::Status PublishStepDir(const std::string& root, int64_t step, bool allow_exchange,
                            const StepHook& hook) {
  const std::string name = StepDirName(step);
  const std::string incomplete = Join(root, kIncompletePrefix + name);
  const std::string published = Join(root, name);
  LEMRT_RETURN_IF_ERROR(SyncDir(incomplete));
  if (!PathExists(published)) {
    LEMRT_RETURN_IF_ERROR(RenameDir(incomplete, published));
    return SyncDir(root);
  }
  // Saving a step again (e.g. a re-shard at the last step): the old
  // checkpoint stays valid until the new one has its name. Once it has, a
  // failure to remove the old one is only a warning (a leftover that the
  // next start removes), never a failed save.
  absl::Status st = allow_exchange ? ExchangeDirs(incomplete, published)
                                   : absl::UnimplementedError("exchange not allowed");
  if (st.ok()) {
    LEMRT_RETURN_IF_ERROR(SyncDir(root));
    Hook(hook, "exchanged");
    // `incomplete` now holds the old checkpoint.
    WarnIfError(RemoveTree(incomplete));
    return absl::OkStatus();
  }
  if (!absl::IsUnimplemented(st)) return st;
  const std::string replaced = Join(root, kReplacedPrefix + name);
  LEMRT_RETURN_IF_ERROR(RemoveTree(replaced));
  LEMRT_RETURN_IF_ERROR(RenameDir(published, replaced));
  LEMRT_RETURN_IF_ERROR(SyncDir(root));
  Hook(hook, "renamed_old_away");
  st = RenameDir(incomplete, published);
  if (st.ok()) st = SyncDir(root);
  if (!st.ok()) {
    WarnIfError(RenameDir(replaced, published));  // the old one back
    return st;
  }
  Hook(hook, "renamed_new_in");
  WarnIfError(RemoveTree(replaced));
  return absl::OkStatus();
}

absl::Status RetireStepDir(const std::string& root, int64_t step, const StepHook& hook) {
  const std::string name = StepDirName(step);
  const std::string discard = Join(root, kDiscardPrefix + name);
  LEMRT_RETURN_IF_ERROR(RemoveTree(discard));
  LEMRT_RETURN_IF_ERROR(RenameDir(Join(root, name), discard));
  LEMRT_RETURN_IF_ERROR(SyncDir(root));
  Hook(hook, "retiring");
  WarnIfError(RemoveTree(discard));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> CleanLeftovers(const std::string& root) {
  std::vector<std::string> done;
  auto names = ListNames(root);
  if (!names.ok()) return done;  // nothing there yet
  bool renamed = false;
  for (const std::string& name : *names) {
    const std::string path = Join(root, name);
    if (!IsDir(path)) continue;
    if (ParseStepDirName(name, kIncompletePrefix) || ParseStepDirName(name, kDiscardPrefix)) {
      LEMRT_RETURN_IF_ERROR(RemoveTree(path));
      done.push_back(absl::StrCat(
          "removed '", path, "' (",
          name.rfind(kIncompletePrefix, 0) == 0
              ? "an unfinished or failed save, or the old copy of a step saved again"
                                                : "a checkpoint retention was deleting",
          ")"));
    } else if (const auto step = ParseStepDirName(name, kReplacedPrefix)) {
      const std::string published = Join(root, StepDirName(*step));
      if (PathExists(published)) {
        LEMRT_RETURN_IF_ERROR(RemoveTree(path));
        done.push_back(absl::StrCat("removed '", path, "' (superseded by '", published, "')"));
      } else {
        LEMRT_RETURN_IF_ERROR(RenameDir(path, published));
        renamed = true;
        done.push_back(absl::StrCat("renamed '", path, "' back to '", published,
                                    "' (a save of the same step was interrupted)"));
      }
    }
  }
  if (renamed) LEMRT_RETURN_IF_ERROR(SyncDir(root));
  return done;
}

std::vector<int64_t> StepsToRetire(std::span<const int64_t> published, int keep_last,
                                   const std::set<int64_t>& pinned) {
  std::vector<int64_t> steps(published.begin(), published.end());
  std::sort(steps.rbegin(), steps.rend());
  std::vector<int64_t> retire;
  if (keep_last <= 0) return retire;
  for (size_t i = static_cast<size_t>(keep_last); i < steps.size(); ++i) {
    if (!pinned.contains(steps[i])) retire.push_back(steps[i]);
  }
  return retire;
}

absl::StatusOr<std::vector<std::string>> CheckpointCandidates(const std::string& dir) {
  if (IsFile(Join(dir, kManifestName))) return std::vector<std::string>{dir};
  LEMRT_ASSIGN_OR_RETURN(const std::vector<int64_t> steps, ListPublishedSteps(dir));
  if (steps.empty()) {
    return absl::NotFoundError(absl::StrCat("no checkpoint in '", dir, "': it has no ",
                                            kManifestName, " and no step-N directory."));
  }
  std::vector<std::string> dirs;
  for (int64_t step : steps) dirs.push_back(Join(dir, StepDirName(step)));
  return dirs;
}

absl::StatusOr<std::string> ResolveCheckpointDir(const std::string& dir) {
  LEMRT_ASSIGN_OR_RETURN(const std::vector<std::string> dirs, CheckpointCandidates(dir));
  for (const std::string& d : dirs) {
    if (IsFile(Join(d, kManifestName))) return d;
  }
  return absl::NotFoundError(absl::StrCat("no checkpoint in '", dir, "': it has no ",
                                          kManifestName, " and no step-N directory with one."));
}

}  // namespace lemrt::checkpoint
