#include "runtime/comm/exit_deadline.h"

#include <unistd.h>

#include <chrono>
#include <thread>

namespace lemrt::runtime {

void ExitAfter(double seconds, int exit_code, std::string sentence) {
  sentence += '\n';
  std::thread([seconds, exit_code, sentence = std::move(sentence)] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    (void)!write(STDERR_FILENO, sentence.data(), sentence.size());
    _exit(exit_code);
  }).detach();
}

}  // namespace lemrt::runtime
