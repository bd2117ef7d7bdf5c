#include "runtime/step/serial_executor.h"

namespace lemrt::runtime {

SerialExecutor::SerialExecutor(bool inline_execution) : inline_(inline_execution) {
  if (!inline_) thread_ = std::thread([this] { Loop(); });
}

SerialExecutor::~SerialExecutor() {
  if (inline_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

std::shared_future<absl::Status> SerialExecutor::Submit(Task task) {
  std::packaged_task<absl::Status()> packaged(std::move(task));
  std::shared_future<absl::Status> done = packaged.get_future().share();
  if (inline_) {
    packaged();
    return done;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(packaged));
  }
  cv_.notify_one();
  return done;
}

void SerialExecutor::Loop() {
  for (;;) {
    std::packaged_task<absl::Status()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace lemrt::runtime
