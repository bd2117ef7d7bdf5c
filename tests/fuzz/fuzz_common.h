// What the fuzz targets share: in-memory files and a scratch directory that
// each input rewrites, and a driver that reads every batch a data source
// offers. fuzz_common.cc also defines LLVMFuzzerInitialize for every target
// (glog at ERROR: the readers' skipped-line warnings would flood the output
// and slow a run ~10x). Thread-compatible; one of each per fuzz process.
#ifndef LEMRT_TESTS_FUZZ_FUZZ_COMMON_H_
#define LEMRT_TESTS_FUZZ_FUZZ_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "host/input/data_source.h"

namespace lemrt::fuzz {

// A file in memory (memfd) whose contents a target replaces on every input,
// so readers that open a path are fuzzed without touching the disk.
class FuzzFile {
 public:
  explicit FuzzFile(const char* name);
  ~FuzzFile();
  FuzzFile(const FuzzFile&) = delete;
  FuzzFile& operator=(const FuzzFile&) = delete;

  // Replaces the contents with `size` bytes at `data`.
  void Set(const uint8_t* data, size_t size);
  // A path other code can open (valid while this object lives).
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// A private directory (under $TMPDIR or /tmp) for readers that take a
// directory; Clear() empties it between inputs, the destructor removes it.
class FuzzDir {
 public:
  explicit FuzzDir(const char* name);
  ~FuzzDir();
  FuzzDir(const FuzzDir&) = delete;
  FuzzDir& operator=(const FuzzDir&) = delete;

  // Writes `bytes` to the plain file `name` in the directory (aborts on an
  // I/O error: the harness, not the code under test, failed).
  void Write(const std::string& name, std::string_view bytes);
  // Removes every file in the directory.
  void Clear();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Reads training steps 0..steps-1 and every eval chunk of `source`, stopping
// at the first error of each (errors are fine; crashes are not).
void ReadEveryBatch(host::DataSource& source, int64_t steps);

}  // namespace lemrt::fuzz

#endif  // LEMRT_TESTS_FUZZ_FUZZ_COMMON_H_
