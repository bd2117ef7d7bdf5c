// The lock that keeps two jobs from writing one checkpoint directory (their
// saves, retention and leftover cleanup would mix and delete each other's
// files). DIR/lemrt.lock is flock()ed for the life of the object, so the
// kernel releases it when the process dies however it dies: a lock file
// left by a dead job never blocks the next one. The file holds the holder
// ("pid 123 on host n1 since 2024-05-01 12:00:00 UTC") for the error
// message, and is emptied when the lock is released cleanly, so a non-empty
// file found unlocked names a job that died. Thread-compatible.
//
// flock works across the clients of NFS v4 (Linux emulates it with POSIX
// byte-range locks); on file systems without working locks two jobs are not
// detected.
#ifndef LEMRT_RUNTIME_CHECKPOINT_DIR_LOCK_H_
#define LEMRT_RUNTIME_CHECKPOINT_DIR_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace lemrt::checkpoint {

inline constexpr char kLockName[] = "lemrt.lock";

class DirLock {
 public:
  // Takes the lock of existing directory `dir`. FailedPrecondition naming
  // the holder when another process holds it; errno errors naming the file.
  // `*stale_holder` is set to the holder text a job left that died without
  // releasing the lock ("" when there was none).
  static absl::StatusOr<std::unique_ptr<DirLock>> Acquire(const std::string& dir,
                                                          std::string* stale_holder);
  // Empties the lock file and releases the lock.
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  DirLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_DIR_LOCK_H_
