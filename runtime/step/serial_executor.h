// A single worker thread that runs submitted tasks one at a time, in
// submission order (one executor = one emulated engine, e.g. the SparseCores
// of a chip). With `inline_execution` the tasks run on the submitting thread
// inside Submit, in the same order: the same schedule without overlap, used
// to check that threading changes nothing. Thread-safe.
#ifndef LEMRT_RUNTIME_STEP_SERIAL_EXECUTOR_H_
#define LEMRT_RUNTIME_STEP_SERIAL_EXECUTOR_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "absl/status/status.h"

namespace lemrt::runtime {

class SerialExecutor {
 public:
  using Task = std::function<absl::Status()>;

  explicit SerialExecutor(bool inline_execution);
  // Waits for every submitted task, then joins the thread.
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  // Queues `task`; the future yields its status once it has run.
  std::shared_future<absl::Status> Submit(Task task);

 private:
  void Loop();

  const bool inline_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<absl::Status()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_STEP_SERIAL_EXECUTOR_H_
