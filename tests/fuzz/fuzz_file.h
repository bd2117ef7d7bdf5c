// A file in memory (memfd) whose contents a fuzz target replaces on every
// input, so readers that open a path can be fuzzed without touching the disk.
// Thread-compatible; one per fuzz process.
#ifndef LEMRT_TESTS_FUZZ_FUZZ_FILE_H_
#define LEMRT_TESTS_FUZZ_FUZZ_FILE_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace lemrt::fuzz {

class FuzzFile {
 public:
  explicit FuzzFile(const char* name) : fd_(memfd_create(name, 0)) {
    if (fd_ < 0) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~FuzzFile() { close(fd_); }
  FuzzFile(const FuzzFile&) = delete;
  FuzzFile& operator=(const FuzzFile&) = delete;

  // Replaces the contents with `size` bytes at `data`.
  void Set(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < size) {
      const ssize_t n = pwrite(fd_, data + done, size - done, done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
  }
  // A path other code can open (valid while this object lives).
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace lemrt::fuzz

#endif  // LEMRT_TESTS_FUZZ_FUZZ_FILE_H_
