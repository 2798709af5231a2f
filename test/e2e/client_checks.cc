#include "test/e2e/client_checks.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {

using ::facet::testing::IsOk;
using ::testing::Each;
using ::testing::HasSubstr;
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

std::string ClientKindName(ClientKind kind) { return kind == ClientKind::kCpp ? "cpp" : "node"; }

std::string OutcomeOf(const std::string& line) {
  if (!absl::StartsWith(line, "fail ")) return line;
  return line.substr(0, line.find(':'));
}

std::vector<std::string> CallOutcomes(E2eHarness& harness, ClientOptions options) {
  options.outcomes = true;
  const size_t calls = options.count * std::max<size_t>(1, options.methods.size()) *
                       std::max<size_t>(1, options.metadata.size());
  absl::StatusOr<ClientRun> run = harness.RunClient(options);
  if (!run.ok()) {
    ADD_FAILURE() << run.status();
    return {};
  }
  EXPECT_TRUE(run->exit.Succeeded()) << run->ToString();
  EXPECT_THAT(run->lines, SizeIs(calls)) << run->ToString();
  std::vector<std::string> out;
  for (const std::string& line : run->lines) out.push_back(OutcomeOf(line));
  return out;
}

bool WaitForOutcome(E2eHarness& harness, ClientOptions options, const std::string& expected,
                    absl::Duration timeout) {
  options.count = 1;
  options.outcomes = true;
  std::string last;
  for (const absl::Time deadline = absl::Now() + timeout; absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(100))) {
    absl::StatusOr<ClientRun> run = harness.RunClient(options);
    if (!run.ok() || run->lines.size() != 1) continue;
    last = OutcomeOf(run->lines[0]);
    if (last == expected) return true;
  }
  ADD_FAILURE() << "never " << expected << "; last: " << last;
  return false;
}

void ServedManifestTest::Serve(const std::vector<std::string>& backends,
                               absl::string_view template_name, absl::string_view file_name,
                               absl::string_view summary, absl::string_view node_id) {
  if (GetParam() == ClientKind::kNode) {
    if (std::string reason = E2eHarness::NodeClientUnavailableReason(); !reason.empty()) {
      GTEST_SKIP() << reason;
    }
  }
  absl::StatusOr<std::unique_ptr<E2eHarness>> harness = E2eHarness::Create();
  ASSERT_THAT(harness, IsOk());
  harness_ = *std::move(harness);
  ASSERT_THAT(harness_->StartBackends(backends), IsOk());
  ASSERT_THAT(harness_->WriteManifest(template_name, file_name), IsOk());
  absl::StatusOr<std::string> validated = harness_->ValidateManifests();
  ASSERT_THAT(validated, IsOk());
  EXPECT_THAT(*validated, HasSubstr(summary));
  ASSERT_THAT(harness_->StartFacet(), IsOk());
  absl::StatusOr<std::string> bootstrap =
      harness_->WriteBootstrap({.node_id = absl::StrCat(node_id, "-", ClientKindName(GetParam())),
                                .metadata = {},
                                .authorities = {}});
  ASSERT_THAT(bootstrap, IsOk());
  bootstrap_ = *bootstrap;
}

void ServedManifestTest::TearDown() {
  if (harness_ == nullptr) return;
  EXPECT_THAT(harness_->StopFacet(), IsOk()) << "facet serve must exit 0 on SIGTERM";
  if (HasFailure()) {
    harness_->KeepTempDir();
    std::cerr << "e2e: kept " << harness_->dir() << "\nfacet stderr:\n"
              << harness_->FacetLog() << "\n";
  }
}

}  // namespace facet::e2e
