// gtest checks on runs of the real xDS clients, shared by the end-to-end
// suites: which backends answered, and whether a continuous run failed.
#ifndef FACET_TEST_E2E_CLIENT_CHECKS_H_
#define FACET_TEST_E2E_CLIENT_CHECKS_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
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

}  // namespace facet::e2e

#endif  // FACET_TEST_E2E_CLIENT_CHECKS_H_
