#include "test/e2e/process.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::IsOkAndHolds;
using ::facet::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string MakeTempDir() {
  std::string pattern = absl::StrCat(::testing::TempDir(), "/process_test.XXXXXX");
  char* dir = mkdtemp(pattern.data());
  EXPECT_NE(dir, nullptr);
  return pattern;
}

std::unique_ptr<Process> StartShell(const std::string& script, ProcessOptions options = {}) {
  options.argv = {"/bin/sh", "-c", script};
  absl::StatusOr<std::unique_ptr<Process>> process = Process::Start(options);
  EXPECT_THAT(process, IsOk());
  return process.ok() ? *std::move(process) : nullptr;
}

TEST(ProcessTest, CapturesOutputExitCodeAndLogFiles) {
  const std::string dir = MakeTempDir();
  ProcessOptions options;
  options.stdout_path = dir + "/out.log";
  options.stderr_path = dir + "/err.log";
  std::unique_ptr<Process> process = StartShell("echo hello; echo oops >&2; exit 3", options);
  ASSERT_NE(process, nullptr);
  absl::StatusOr<ExitStatus> exit = process->WaitExit(absl::Seconds(10));
  ASSERT_THAT(exit, IsOk());
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_FALSE(exit->Succeeded());
  EXPECT_EQ(process->Stdout(), "hello\n");
  EXPECT_EQ(process->Stderr(), "oops\n");
  EXPECT_EQ(*ReadFile(options.stdout_path), "hello\n");
  EXPECT_EQ(*ReadFile(options.stderr_path), "oops\n");
  EXPECT_FALSE(process->Running());
  std::filesystem::remove_all(dir);
}

TEST(ProcessTest, AppliesEnvironmentChanges) {
  setenv("PROCESS_TEST_REMOVED", "inherited", 1);
  ProcessOptions options;
  options.env["PROCESS_TEST_SET"] = "value";
  options.env["PROCESS_TEST_REMOVED"] = std::nullopt;
  std::unique_ptr<Process> process =
      StartShell("echo \"${PROCESS_TEST_SET}/${PROCESS_TEST_REMOVED:-unset}\"", options);
  ASSERT_NE(process, nullptr);
  ASSERT_THAT(process->WaitExit(absl::Seconds(10)), IsOk());
  EXPECT_EQ(process->Stdout(), "value/unset\n");
}

TEST(ProcessTest, SignalEndsChildAndWaitExitReportsIt) {
  std::unique_ptr<Process> process = StartShell("echo started; exec sleep 60");
  ASSERT_NE(process, nullptr);
  ASSERT_THAT(process->WaitForStdout(
                  [](absl::string_view out) { return absl::StrContains(out, "started"); },
                  absl::Seconds(10)),
              IsOk());
  EXPECT_TRUE(process->Running());
  EXPECT_THAT(process->WaitExit(absl::Milliseconds(50)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_THAT(process->Signal(SIGTERM), IsOk());
  absl::StatusOr<ExitStatus> exit = process->WaitExit(absl::Seconds(10));
  ASSERT_THAT(exit, IsOk());
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_THAT(process->Signal(SIGTERM), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(ProcessTest, WaitForStdoutFailsWhenChildExitsFirst) {
  std::unique_ptr<Process> process = StartShell("echo something-else");
  ASSERT_NE(process, nullptr);
  EXPECT_THAT(
      process->WaitForStdout([](absl::string_view out) { return absl::StrContains(out, "never"); },
                             absl::Seconds(10)),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("something-else")));
}

TEST(ProcessTest, DestructorKillsRunningChild) {
  std::unique_ptr<Process> process = StartShell("exec sleep 60");
  ASSERT_NE(process, nullptr);
  const pid_t pid = process->pid();
  process.reset();
  // Reaped: the pid is no longer our child.
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
}

TEST(ProcessTest, StartFailsForMissingProgram) {
  ProcessOptions options;
  options.argv = {"/nonexistent/program"};
  EXPECT_THAT(Process::Start(options), StatusIs(absl::StatusCode::kNotFound));
}

TEST(ParseCpuListTest, ReadsNumbersAndRangesInOrderOnce) {
  EXPECT_THAT(ParseCpuList("1"), IsOkAndHolds(ElementsAre(1)));
  EXPECT_THAT(ParseCpuList("0-1"), IsOkAndHolds(ElementsAre(0, 1)));
  EXPECT_THAT(ParseCpuList("3,0-1,1"), IsOkAndHolds(ElementsAre(0, 1, 3)));
  EXPECT_THAT(ParseCpuList("2-2"), IsOkAndHolds(ElementsAre(2)));
}

TEST(ParseCpuListTest, NamesThePartItCannotRead) {
  for (const char* list : {"", "a", "1,", "-1", "1-", "+1", " 1", "1 ", "0-1\t", "0-1-2", "1.5"}) {
    EXPECT_THAT(ParseCpuList(list), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("is not a CPU number")))
        << list;
  }
  EXPECT_THAT(ParseCpuList("0,3-1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"3-1\" ends before")));
  EXPECT_THAT(ParseCpuList("5000"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("past the largest")));
}

TEST(ProcessTest, ChildRunsOnTheCpusGivenAndTheStarterKeepsItsOwn) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  // The last CPU this test may run on (a machine or container may not give
  // it CPU 0), and only it.
  int cpu = CPU_SETSIZE - 1;
  while (cpu > 0 && !CPU_ISSET(cpu, &before)) --cpu;
  ProcessOptions options;
  options.cpus = {cpu};
  std::unique_ptr<Process> child =
      StartShell("grep Cpus_allowed_list /proc/self/status", options);
  ASSERT_NE(child, nullptr);
  ASSERT_THAT(child->WaitExit(absl::Seconds(30)), IsOk());
  EXPECT_THAT(child->Stdout(), HasSubstr(absl::StrCat("Cpus_allowed_list:\t", cpu, "\n")));
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
  absl::StatusOr<std::vector<int>> own = CallingThreadCpus();
  ASSERT_THAT(own, IsOk());
  EXPECT_EQ(static_cast<int>(own->size()), CPU_COUNT(&after));
  EXPECT_EQ(own->back(), cpu);
}

TEST(ProcessTest, StartFailsForCpusTheMachineLacks) {
  ProcessOptions options;
  options.argv = {"/bin/true"};
  options.cpus = {CPU_SETSIZE - 1};
  EXPECT_THAT(Process::Start(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/bin/true: pinning")));
}

TEST(ProcessTest, WaitForFileSeesAtomicWriteFromChild) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/ready";
  std::unique_ptr<Process> process = StartShell(absl::StrCat(
      "sleep 0.2; echo '{}' > ", path, ".tmp; mv ", path, ".tmp ", path, "; sleep 60"));
  ASSERT_NE(process, nullptr);
  absl::StatusOr<std::string> contents = WaitForFile(path, absl::Seconds(10), process.get());
  ASSERT_THAT(contents, IsOk());
  EXPECT_EQ(*contents, "{}\n");
  std::filesystem::remove_all(dir);
}

TEST(ProcessTest, WaitForFileFailsFastWhenProcessExits) {
  const std::string dir = MakeTempDir();
  std::unique_ptr<Process> process = StartShell("echo cannot-start >&2; exit 1");
  ASSERT_NE(process, nullptr);
  const absl::Time start = absl::Now();
  EXPECT_THAT(WaitForFile(dir + "/never", absl::Seconds(30), process.get()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("exited before")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  std::filesystem::remove_all(dir);
}

TEST(ProcessTest, WaitForFileTimesOut) {
  const std::string dir = MakeTempDir();
  EXPECT_THAT(WaitForFile(dir + "/never", absl::Milliseconds(100)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace facet::e2e
