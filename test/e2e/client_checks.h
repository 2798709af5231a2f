// gtest checks on runs of the real xDS clients, shared by the end-to-end
// suites: which backends answered, and whether a continuous run failed.
#ifndef FACET_TEST_E2E_CLIENT_CHECKS_H_
#define FACET_TEST_E2E_CLIENT_CHECKS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test/e2e/e2e_harness.h"
#include "test/e2e/process.h"

namespace facet::e2e {

// Runs `clients` together (E2eHarness::RunClients) and expects each to exit 0
// after clients[i].count calls, every one answered by backend expected[i].
void ExpectBackends(E2eHarness& harness, const std::vector<ClientOptions>& clients,
                    const std::vector<std::string>& expected);

// Waits for a client started in continuous mode to finish and expects exit 0
// and a last line "summary ok=N fail=0". Returns its call lines ("ok <id>"),
// the summary left out; empty (with a test failure) if it did not finish.
std::vector<std::string> FinishContinuousRun(Process& client,
                                             absl::Duration timeout = absl::Seconds(30));

// Expects `lines` to be "ok <from>" ..., then "ok <to>" ... (at least one),
// and nothing else: one switch, never back.
void ExpectSwitchedOnce(const std::vector<std::string>& lines, const std::string& from,
                        const std::string& to);

// Returns "cpp" or "node".
std::string ClientKindName(ClientKind kind);

// Returns "ok <id>" or "fail <CODE>" for a client's outcome line (the
// failure's message dropped).
std::string OutcomeOf(const std::string& line);

// Runs one client in outcomes mode (sets options.outcomes), expects it to
// exit 0 after one line per call (count x methods x metadata sets), and
// returns each call's OutcomeOf in order; empty (with a test failure) when
// it could not run.
std::vector<std::string> CallOutcomes(E2eHarness& harness, ClientOptions options);

// Runs one client in outcomes mode making one call (options.count and
// options.outcomes set; one method and metadata set at most) every 100 ms
// until its outcome is `expected` ("ok <id>" or "fail <CODE>"); returns
// whether it was within `timeout`, with a test failure naming the last
// outcome if not. For a change the clients see only once it is served.
bool WaitForOutcome(E2eHarness& harness, ClientOptions options, const std::string& expected,
                    absl::Duration timeout = absl::Seconds(30));

// A suite that runs each test with each real client (the parameter)
// against one `facet serve` on a manifest directory.
class ServedManifestTest : public ::testing::TestWithParam<ClientKind> {
 protected:
  // Skips a Node run where the Node client is not installed; starts
  // `backends`, writes `template_name` (E2eHarness::WriteManifest) as
  // `file_name`, expects `facet validate` of it to print `summary`, starts
  // `facet serve` on it and writes bootstrap_ (node id "<node_id>-<kind>").
  // Call from SetUp() and stop on a fatal failure.
  void Serve(const std::vector<std::string>& backends, absl::string_view template_name,
             absl::string_view file_name, absl::string_view summary, absl::string_view node_id);

  // Expects `facet serve` to exit 0 on SIGTERM; after a failure keeps the
  // temporary directory and prints the server's log.
  void TearDown() override;

  std::unique_ptr<E2eHarness> harness_;
  std::string bootstrap_;
};

}  // namespace facet::e2e

#endif  // FACET_TEST_E2E_CLIENT_CHECKS_H_
