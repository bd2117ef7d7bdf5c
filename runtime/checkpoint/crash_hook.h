// Test hook for the fault suite (tests/fault_checkpoint*.sh): kills this
// process at a named point of a checkpoint save, to show that a crash
// anywhere leaves the previous checkpoint restorable. Armed by the
// environment only:
//
//   LEMRT_TEST_CRASH_DURING_CHECKPOINT=STEP:RANK[:POINT]
//
// rank RANK SIGKILLs itself in the save of step STEP at POINT:
//   mid_file          (default) half of its second table file written (its
//                     first when it has one)
//   tables_written    its data files written, before the ranks agree
//   manifest_written  (rank 0) the manifest written, before the publishing
//                     rename
//   exchanged         (rank 0) a re-saved step exchanged with the old one,
//                     before the old one is removed
//   renamed_old_away  (rank 0, two-rename publishing) the old step renamed
//                     away, the new one not yet in place
//   published         (rank 0) the step published, before retention
//   retiring          (rank 0) an old step renamed for removal, not removed
//
// LEMRT_TEST_CHECKPOINT_RENAME_ONLY=1 makes publishing use two renames
// instead of an exchange (the path for file systems without
// RENAME_EXCHANGE). Immutable after construction.
#ifndef LEMRT_RUNTIME_CHECKPOINT_CRASH_HOOK_H_
#define LEMRT_RUNTIME_CHECKPOINT_CRASH_HOOK_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace lemrt::checkpoint {

inline constexpr char kCrashHookEnv[] = "LEMRT_TEST_CRASH_DURING_CHECKPOINT";
inline constexpr char kRenameOnlyEnv[] = "LEMRT_TEST_CHECKPOINT_RENAME_ONLY";

class CrashHook {
 public:
  // Reads the environment: armed when it names `step` and `rank`.
  CrashHook(int64_t step, int rank);

  // SIGKILLs the process when armed for `point` (logs a line first).
  void At(std::string_view point) const;
  // The mid_file crash: when armed for it and `file_index` is the file to
  // die in, writes half of `bytes` to `path` and SIGKILLs the process.
  void MidFile(int file_index, int files_to_write, const std::string& path,
               std::string_view bytes) const;

  // False when LEMRT_TEST_CHECKPOINT_RENAME_ONLY is set.
  static bool AllowExchange();

 private:
  std::string point_;  // empty when not armed
};

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_CRASH_HOOK_H_
