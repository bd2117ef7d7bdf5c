// A last resort for a process that is ending: if it is still running
// `seconds` from now (an MPI_Abort that cannot reach the launcher blocks),
// print a sentence and _exit. Thread-safe; starts a detached thread.
#ifndef LEMRT_RUNTIME_COMM_EXIT_DEADLINE_H_
#define LEMRT_RUNTIME_COMM_EXIT_DEADLINE_H_

#include <string>

namespace lemrt::runtime {

// After `seconds`, writes `sentence` and a newline to stderr and calls
// _exit(exit_code) (no destructors, no atexit handlers: the process may be
// stuck in one). Returns at once. Call only on a path that ends the
// process.
void ExitAfter(double seconds, int exit_code, std::string sentence);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_COMM_EXIT_DEADLINE_H_
