#include "test/e2e/client_checks.h"

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::e2e {

using ::testing::Each;
using ::testing::MatchesRegex;
using ::testing::SizeIs;

void ExpectBackends(E2eHarness& harness, const std::vector<ClientOptions>& clients,
                    const std::vector<std::string>& expected) {
  ASSERT_EQ(clients.size(), expected.size());
  absl::StatusOr<std::vector<ClientRun>> runs = harness.RunClients(clients);
  ASSERT_TRUE(runs.ok()) << runs.status();
  for (size_t i = 0; i < runs->size(); ++i) {
    const ClientRun& run = (*runs)[i];
    EXPECT_TRUE(run.exit.Succeeded()) << run.ToString();
    EXPECT_THAT(run.lines, SizeIs(clients[i].count)) << run.ToString();
    EXPECT_THAT(run.lines, Each(expected[i]))
        << clients[i].target << " with " << clients[i].bootstrap_path << " should reach backend "
        << expected[i] << "\n"
        << run.ToString();
  }
}

std::vector<std::string> FinishContinuousRun(Process& client, absl::Duration timeout) {
  absl::StatusOr<ClientRun> run = E2eHarness::FinishClient(client, timeout);
  if (!run.ok()) {
    ADD_FAILURE() << run.status();
    return {};
  }
  EXPECT_TRUE(run->exit.Succeeded()) << run->ToString();
  if (run->lines.empty()) {
    ADD_FAILURE() << "no output\n" << run->ToString();
    return {};
  }
  EXPECT_THAT(run->lines.back(), MatchesRegex("summary ok=[0-9]+ fail=0")) << run->ToString();
  run->lines.pop_back();
  return run->lines;
}

void ExpectSwitchedOnce(const std::vector<std::string>& lines, const std::string& from,
                        const std::string& to) {
  bool switched = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    switched = switched || lines[i] == "ok " + to;
    ASSERT_EQ(lines[i], switched ? "ok " + to : "ok " + from)
        << "line " << i << " of:\n  " << absl::StrJoin(lines, "\n  ");
  }
  EXPECT_TRUE(switched) << "never reached " << to;
}

}  // namespace facet::e2e
