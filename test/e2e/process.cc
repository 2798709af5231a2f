#include "test/e2e/process.h"

#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace facet::e2e {
namespace {

absl::Status ErrnoStatus(absl::string_view what, int error) {
  return absl::ErrnoToStatus(error, what);  // Which adds strerror(error).
}

// Returns the last `max_chars` characters of `text`, starting at a line.
std::string Tail(absl::string_view text, size_t max_chars = 2000) {
  if (text.size() <= max_chars) return std::string(text);
  absl::string_view tail = text.substr(text.size() - max_chars);
  size_t newline = tail.find('\n');
  if (newline != absl::string_view::npos) tail.remove_prefix(newline + 1);
  return absl::StrCat("...\n", tail);
}

// Returns the milliseconds left until `deadline`, for poll(): at least 0,
// rounded up so that a short remainder does not become a busy loop.
int PollMillis(absl::Time deadline) {
  absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))));
}

int OpenPidFd(pid_t pid) {
#ifdef SYS_pidfd_open
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
#else
  return -1;
#endif
}

// Builds the child's environment: the inherited one with `changes` applied.
std::vector<std::string> BuildEnvironment(
    const std::map<std::string, std::optional<std::string>>& changes) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    absl::string_view text = *entry;
    std::string key(text.substr(0, text.find('=')));
    if (changes.count(key) == 0) env.emplace_back(text);
  }
  for (const auto& [key, value] : changes) {
    if (value.has_value()) env.push_back(absl::StrCat(key, "=", *value));
  }
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Closes the listed descriptors that are not -1.
void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

absl::StatusOr<int> OpenLog(const std::string& path) {
  if (path.empty()) return -1;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(absl::StrCat("open ", path), errno);
  return fd;
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (signal != 0) return absl::StrCat("killed by signal ", signal, " (", strsignal(signal), ")");
  return absl::StrCat("exit code ", exit_code);
}

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view list) {
  std::vector<int> cpus;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    std::pair<absl::string_view, absl::string_view> bounds =
        absl::StrSplit(part, absl::MaxSplits('-', 1));
    if (bounds.second.empty() && part.find('-') == absl::string_view::npos) {
      bounds.second = bounds.first;
    }
    int first = -1;
    int last = -1;
    // Digits only: SimpleAtoi also takes a sign and surrounding spaces.
    const auto number = [](absl::string_view text, int* out) {
      return !text.empty() && text.size() <= 9 &&
             std::all_of(text.begin(), text.end(),
                         [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); }) &&
             absl::SimpleAtoi(text, out);
    };
    if (!number(bounds.first, &first) || !number(bounds.second, &last)) {
      return absl::InvalidArgumentError(
          absl::StrCat("CPU list \"", list, "\": \"", part,
                       "\" is not a CPU number or a range of them (N or N-M)"));
    }
    if (first > last) {
      return absl::InvalidArgumentError(
          absl::StrCat("CPU list \"", list, "\": range \"", part, "\" ends before it starts"));
    }
    if (last >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrCat("CPU list \"", list, "\": CPU ", last,
                                                     " is past the largest, ", CPU_SETSIZE - 1));
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

absl::Status PinCallingThread(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrCat("CPU ", cpu, " does not exist"));
    }
    CPU_SET(cpu, &set);
  }
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    const int error = errno;
    return ErrnoStatus(absl::StrCat("pinning to CPUs ", absl::StrJoin(cpus, ",")), error);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> CallingThreadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return ErrnoStatus("reading this thread's CPUs", errno);
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

absl::StatusOr<std::unique_ptr<Process>> Process::Start(const ProcessOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("Process::Start: empty argv");
  const std::string description = absl::StrJoin(options.argv, " ");

  absl::StatusOr<int> stdout_log = OpenLog(options.stdout_path);
  if (!stdout_log.ok()) return stdout_log.status();
  absl::StatusOr<int> stderr_log = OpenLog(options.stderr_path);
  if (!stderr_log.ok()) {
    CloseAll({*stdout_log});
    return stderr_log.status();
  }
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    int error = errno;
    CloseAll({*stdout_log, *stderr_log, out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]});
    return ErrnoStatus("pipe2", error);
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // dup2 clears FD_CLOEXEC on the target, so only 1 and 2 survive the exec.
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  // Give the child default signal dispositions and an empty mask, whatever
  // the test process (gtest, gRPC) has set up.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty_mask, default_signals;
  sigemptyset(&empty_mask);
  sigfillset(&default_signals);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  // Its own process group, so that the destructor can end grandchildren too
  // (they would otherwise hold the output pipes open).
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> argv_strings = options.argv;
  std::vector<std::string> env_strings = BuildEnvironment(options.env);
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<char*> envp = CStrings(env_strings);
  // The child inherits the spawning thread's CPUs: this thread takes the
  // child's for the spawn and gets its own back.
  absl::StatusOr<std::vector<int>> own_cpus = std::vector<int>();
  absl::Status pinned = absl::OkStatus();
  if (!options.cpus.empty()) {
    own_cpus = CallingThreadCpus();
    pinned = own_cpus.ok() ? PinCallingThread(options.cpus) : own_cpus.status();
  }
  pid_t pid = -1;
  int spawn_error = 0;
  if (pinned.ok()) {
    spawn_error = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  }
  if (!options.cpus.empty() && pinned.ok()) {
    // Cannot fail: this thread ran on these CPUs a moment ago.
    (void)PinCallingThread(*own_cpus);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  CloseAll({out_pipe[1], err_pipe[1]});
  if (!pinned.ok()) {
    CloseAll({*stdout_log, *stderr_log, out_pipe[0], err_pipe[0]});
    return absl::Status(pinned.code(), absl::StrCat(description, ": ", pinned.message()));
  }
  if (spawn_error != 0) {
    CloseAll({*stdout_log, *stderr_log, out_pipe[0], err_pipe[0]});
    return ErrnoStatus(absl::StrCat("posix_spawnp ", description), spawn_error);
  }

  std::unique_ptr<Process> process(new Process(pid, OpenPidFd(pid), description));
  Process* self = process.get();
  process->stdout_reader_ = std::thread(
      [self, fd = out_pipe[0], log = *stdout_log] { self->Drain(/*is_stdout=*/true, fd, log); });
  process->stderr_reader_ = std::thread(
      [self, fd = err_pipe[0], log = *stderr_log] { self->Drain(/*is_stdout=*/false, fd, log); });
  return process;
}

Process::Process(pid_t pid, int pid_fd, std::string description)
    : pid_(pid), pid_fd_(pid_fd), description_(std::move(description)) {}

Process::~Process() {
  {
    absl::MutexLock lock(&mu_);
    if (!TryReapLocked()) {
      kill(-pid_, SIGKILL);
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      exit_status_ = ExitStatus{.exit_code = -1, .signal = SIGKILL};
    }
  }
  if (stdout_reader_.joinable()) stdout_reader_.join();
  if (stderr_reader_.joinable()) stderr_reader_.join();
  CloseAll({pid_fd_});
}

void Process::Drain(bool is_stdout, int fd, int log_fd) {
  char buffer[4096];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (log_fd >= 0) {
      // Best effort: the log is for people reading a failure.
      ssize_t unused = write(log_fd, buffer, static_cast<size_t>(n));
      (void)unused;
    }
    absl::MutexLock lock(&mu_);
    (is_stdout ? stdout_ : stderr_).append(buffer, static_cast<size_t>(n));
  }
  CloseAll({fd, log_fd});
  absl::MutexLock lock(&mu_);
  (is_stdout ? stdout_eof_ : stderr_eof_) = true;
}

bool Process::TryReapLocked() {
  if (exit_status_.has_value()) return true;
  int status = 0;
  pid_t result;
  do {
    result = waitpid(pid_, &status, WNOHANG);
  } while (result < 0 && errno == EINTR);
  if (result != pid_) return false;
  ExitStatus exit;
  if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  } else {
    exit.exit_code = WEXITSTATUS(status);
  }
  exit_status_ = exit;
  return true;
}

absl::Status Process::Signal(int signo) {
  absl::MutexLock lock(&mu_);
  // Signalling a reaped pid could hit an unrelated process that reused it.
  if (exit_status_.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(description_, " has already exited (", exit_status_->ToString(), ")"));
  }
  if (kill(pid_, signo) != 0) return ErrnoStatus(absl::StrCat("kill ", pid_), errno);
  return absl::OkStatus();
}

bool Process::Running() const {
  absl::MutexLock lock(&mu_);
  if (exit_status_.has_value()) return false;
  siginfo_t info{};
  // WNOWAIT leaves the child to be reaped by WaitExit.
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return false;
  }
  return info.si_pid == 0;
}

absl::StatusOr<ExitStatus> Process::WaitExit(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (TryReapLocked()) break;
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(description_, " still running after ", absl::FormatDuration(timeout)));
    }
    if (pid_fd_ >= 0) {
      pollfd fd{.fd = pid_fd_, .events = POLLIN, .revents = 0};
      poll(&fd, 1, PollMillis(deadline));
    } else {
      // No pidfd (old kernel): fall back to checking every few milliseconds.
      absl::SleepFor(absl::Milliseconds(5));
    }
  }
  absl::MutexLock lock(&mu_);
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stdout_eof_ && stderr_eof_; };
  // A grandchild that inherited the pipes could keep them open; give up on
  // the rest of the output rather than hang.
  mu_.AwaitWithDeadline(absl::Condition(&drained), deadline + absl::Seconds(5));
  return *exit_status_;
}

std::string Process::Stdout() const {
  absl::MutexLock lock(&mu_);
  return stdout_;
}

std::string Process::Stderr() const {
  absl::MutexLock lock(&mu_);
  return stderr_;
}

absl::Status Process::WaitForStdout(absl::FunctionRef<bool(absl::string_view)> done,
                                    absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  bool satisfied = false;
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    satisfied = done(stdout_);
    return satisfied || stdout_eof_;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("waited ", absl::FormatDuration(timeout), " for output from ", description_,
                     "; stdout so far:\n", Tail(stdout_), "\nstderr:\n", Tail(stderr_)));
  }
  if (satisfied) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(description_, " closed stdout before the expected output; stdout:\n",
                   Tail(stdout_), "\nstderr:\n", Tail(stderr_)));
}

absl::StatusOr<std::string> WaitForFile(const std::string& path, absl::Duration timeout,
                                        const Process* process) {
  const absl::Time deadline = absl::Now() + timeout;
  const std::string dir = std::filesystem::path(path).parent_path().string();
  int inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify_fd < 0) return ErrnoStatus("inotify_init1", errno);
  if (inotify_add_watch(inotify_fd, dir.empty() ? "." : dir.c_str(),
                        IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY) < 0) {
    int error = errno;
    CloseAll({inotify_fd});
    return ErrnoStatus(absl::StrCat("inotify_add_watch ", dir), error);
  }
  while (true) {
    // Check after the watch is in place, so no event can slip in between.
    absl::StatusOr<std::string> contents = ReadFile(path);
    if (contents.ok() && !contents->empty()) {
      CloseAll({inotify_fd});
      return contents;
    }
    if (process != nullptr && !process->Running()) {
      CloseAll({inotify_fd});
      return absl::FailedPreconditionError(absl::StrCat(process->description(),
                                                        " exited before writing ", path,
                                                        "; stderr:\n", Tail(process->Stderr())));
    }
    if (absl::Now() >= deadline) {
      CloseAll({inotify_fd});
      return absl::DeadlineExceededError(
          absl::StrCat(path, " did not appear within ", absl::FormatDuration(timeout)));
    }
    pollfd fds[2] = {
        {.fd = inotify_fd, .events = POLLIN, .revents = 0},
        {.fd = process != nullptr ? process->exit_fd() : -1, .events = POLLIN, .revents = 0}};
    int wait_ms = PollMillis(deadline);
    // Without a pidfd, look at the process now and then.
    if (process != nullptr && process->exit_fd() < 0) wait_ms = std::min(wait_ms, 50);
    poll(fds, 2, wait_ms);
    char events[4096];
    while (read(inotify_fd, events, sizeof(events)) > 0) {
    }
  }
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", temp));
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    return ErrnoStatus(absl::StrCat("rename ", temp, " to ", path), errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

}  // namespace facet::e2e
