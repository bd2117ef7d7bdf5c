#include "tests/fuzz/fuzz_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "glog/logging.h"
#include "host/batch.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  FLAGS_minloglevel = google::GLOG_ERROR;
  return 0;
}

namespace lemrt::fuzz {
namespace {

void WriteAll(int fd, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
}

}  // namespace

FuzzFile::FuzzFile(const char* name) : fd_(memfd_create(name, 0)) {
  if (fd_ < 0) std::abort();
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

FuzzFile::~FuzzFile() { close(fd_); }

void FuzzFile::Set(const uint8_t* data, size_t size) {
  if (ftruncate(fd_, 0) != 0) std::abort();
  WriteAll(fd_, reinterpret_cast<const char*>(data), size);
}

FuzzDir::FuzzDir(const char* name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/lemrt_" +
                     name + "_XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  path_ = tmpl;
}

FuzzDir::~FuzzDir() {
  Clear();
  rmdir(path_.c_str());
}

void FuzzDir::Write(const std::string& name, std::string_view bytes) {
  const std::string file = path_ + "/" + name;
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) std::abort();
  WriteAll(fd, bytes.data(), bytes.size());
  close(fd);
}

void FuzzDir::Clear() {
  DIR* d = opendir(path_.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  for (const std::string& name : names) unlink((path_ + "/" + name).c_str());
}

void ReadEveryBatch(host::DataSource& source, int64_t steps) {
  host::Batch batch;
  for (int64_t step = 0; step < steps; ++step) {
    if (!source.TrainBatch(step, &batch).ok()) break;
  }
  for (int64_t chunk = 0; chunk < source.num_eval_chunks(); ++chunk) {
    if (!source.EvalBatch(chunk, &batch).ok()) break;
  }
}

}  // namespace lemrt::fuzz
