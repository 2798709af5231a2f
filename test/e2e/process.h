// A child process for end-to-end tests: spawned with posix_spawn, its stdout
// and stderr read through pipes into memory and into log files, killed and
// reaped when the handle is destroyed.
#ifndef FACET_TEST_E2E_PROCESS_H_
#define FACET_TEST_E2E_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace facet::e2e {

struct ProcessOptions {
  // argv[0] is the program: a path, or a name looked up in PATH.
  std::vector<std::string> argv;
  // Changes to the inherited environment: a value sets the variable, nullopt
  // removes it.
  std::map<std::string, std::optional<std::string>> env;
  // Where to copy the child's output as it arrives; empty means memory only.
  std::string stdout_path;
  std::string stderr_path;
  // The CPUs the child (and every thread it starts) may run on; empty: those
  // of the thread that starts it.
  std::vector<int> cpus;
};

// Parses a CPU list as taskset(1) and the kernel's cpuset files write it:
// comma-separated CPU numbers and inclusive ranges ("1", "0-1", "0,2-3").
// Returns the CPUs in ascending order, each once. InvalidArgument, naming the
// part, for anything else (an empty part, a reversed range, a number past
// CPU_SETSIZE).
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view list);

// Restricts the calling thread, and the threads and processes it starts
// afterwards, to `cpus`. A process calls it before starting any thread to
// pin itself as a whole. InvalidArgument when the machine has none of them.
absl::Status PinCallingThread(const std::vector<int>& cpus);

// Returns the CPUs the calling thread may run on, in ascending order.
absl::StatusOr<std::vector<int>> CallingThreadCpus();

// How a child ended.
struct ExitStatus {
  int exit_code = -1;  // Valid when signal == 0.
  int signal = 0;      // The terminating signal, or 0 for a normal exit.

  bool Succeeded() const { return signal == 0 && exit_code == 0; }
  std::string ToString() const;
};

// One child process, leader of its own process group. Stdin is /dev/null.
// Thread-safe, except that the destructor must not race with other calls.
class Process {
 public:
  // Spawns the child. Fails if the program cannot be started or a log file
  // cannot be opened.
  static absl::StatusOr<std::unique_ptr<Process>> Start(const ProcessOptions& options);

  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  // Kills the child's process group with SIGKILL if the child is still
  // running, reaps the child and waits for its output to drain.
  ~Process();

  pid_t pid() const { return pid_; }
  // Returns the program name and arguments, for messages.
  const std::string& description() const { return description_; }

  // Sends `signo` to the child. FailedPrecondition once it has been reaped.
  absl::Status Signal(int signo);

  // Waits until the child exits (and its output has been read to the end) and
  // returns how it ended. DeadlineExceeded if it is still running after
  // `timeout`; the child is left running.
  absl::StatusOr<ExitStatus> WaitExit(absl::Duration timeout);

  // Returns true while the child has not exited. Does not reap it.
  bool Running() const;

  // Returns a file descriptor that becomes readable when the child exits
  // (a pidfd), or -1 if the kernel has none. Owned by this object.
  int exit_fd() const { return pid_fd_; }

  // Returns everything the child has written to stdout / stderr so far.
  std::string Stdout() const;
  std::string Stderr() const;

  // Waits until `done(stdout so far)` is true. DeadlineExceeded after
  // `timeout`; FailedPrecondition if stdout reaches end-of-file (the child
  // exited) first. `done` is called with an internal lock held: it must not
  // call back into this object.
  absl::Status WaitForStdout(absl::FunctionRef<bool(absl::string_view)> done,
                             absl::Duration timeout);

 private:
  Process(pid_t pid, int pid_fd, std::string description);
  // Copies `fd` to the buffer (and `log_fd`, if not -1) until end-of-file,
  // then closes both. Runs on a reader thread.
  void Drain(bool is_stdout, int fd, int log_fd);
  // Reaps the child if it has exited; returns true once it is reaped.
  bool TryReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const pid_t pid_;
  const int pid_fd_;
  const std::string description_;

  mutable absl::Mutex mu_;
  std::string stdout_ ABSL_GUARDED_BY(mu_);
  std::string stderr_ ABSL_GUARDED_BY(mu_);
  bool stdout_eof_ ABSL_GUARDED_BY(mu_) = false;
  bool stderr_eof_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<ExitStatus> exit_status_ ABSL_GUARDED_BY(mu_);

  std::thread stdout_reader_;
  std::thread stderr_reader_;
};

// Waits until `path` exists and is non-empty, then returns its contents.
// Wakes on inotify events in the file's directory, so a file written with
// write-then-rename is seen at once. DeadlineExceeded after `timeout`. If
// `process` is given and it exits first, fails with FailedPrecondition and a
// message that includes the tail of its stderr.
absl::StatusOr<std::string> WaitForFile(const std::string& path, absl::Duration timeout,
                                        const Process* process = nullptr);

// Writes `contents` to `path` atomically (a temporary file in the same
// directory, then rename).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// Returns the contents of `path`.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace facet::e2e

#endif  // FACET_TEST_E2E_PROCESS_H_
