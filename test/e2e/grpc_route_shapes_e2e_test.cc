// End-to-end: the xDS shapes the GRPCRoute translation (Gateway API front
// end) will emit, written by hand in testdata/grpc-route-shapes.yaml.tmpl,
// served by `facet serve` and called through both real xDS clients (gRPC C++
// 1.51 and grpc-js-xds 1.14) with wait-for-ready on: fault aborts at route
// level and per ClusterWeight, weighted_clusters with total_weight and weight
// 0, method matches by path, prefix and wrapped safe_regex, header matches
// with the deprecated exact_match and safe_regex_match. Where the clients
// differ (an unwrapped regex), the test states what each one does.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/e2e/client_checks.h"
#include "test/e2e/e2e_harness.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {
namespace {

using ::testing::Each;
using ::testing::SizeIs;

constexpr char kTarget[] = "xds:///shapes.e2e.svc.cluster.local:50051";
// Serves the same RouteConfiguration through a Listener without the fault filter.
constexpr char kTargetWithoutFaultFilter[] = "xds:///shapes-no-fault";
constexpr absl::Duration kRpcTimeout = absl::Seconds(10);

// One call and the outcome it must have.
struct Expected {
  std::string method;
  std::string outcome;  // "ok <backend id>" or "fail <CODE>"
};

class GrpcRouteShapesTest : public ServedManifestTest {
 protected:
  // Facet accepts every shape, without a warning.
  void SetUp() override {
    Serve({"v1", "v2", "v3", "other", "loose", "trap"}, "grpc-route-shapes.yaml.tmpl",
          "shapes.yaml", "17 valid, 0 rejected; 0 errors, 0 warnings", "shapes");
  }

  // Returns a client of the kind under test on `target` making `count` rounds
  // of calls to `methods`, once per metadata set, printing every outcome.
  ClientOptions Client(std::vector<std::string> methods, int count,
                       std::vector<std::map<std::string, std::string>> metadata = {},
                       const std::string& target = kTarget) const {
    return {.kind = GetParam(),
            .target = target,
            .bootstrap_path = bootstrap_,
            .count = count,
            .rpc_timeout = kRpcTimeout,
            .methods = std::move(methods),
            .metadata = std::move(metadata),
            .outcomes = true};
  }

  // Runs the clients together; returns each one's outcome per call ("ok
  // <id>" / "fail <CODE>"), in call order. Logs how long the runs took.
  std::vector<std::vector<std::string>> RunOutcomes(const std::vector<ClientOptions>& clients) {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::vector<ClientRun>> runs = harness_->RunClients(clients);
    std::cerr << "e2e: " << clients.size() << " " << ClientKindName(GetParam())
              << " client run(s) in " << absl::FormatDuration(absl::Now() - start) << "\n";
    std::vector<std::vector<std::string>> outcomes(clients.size());
    if (!runs.ok()) {
      ADD_FAILURE() << runs.status();
      return outcomes;
    }
    for (size_t i = 0; i < runs->size(); ++i) {
      const ClientRun& run = (*runs)[i];
      EXPECT_TRUE(run.exit.Succeeded()) << run.ToString();
      const size_t sets = std::max<size_t>(1, clients[i].metadata.size());
      EXPECT_THAT(run.lines, SizeIs(clients[i].count * sets * clients[i].methods.size()))
          << run.ToString();
      for (const std::string& line : run.lines) outcomes[i].push_back(OutcomeOf(line));
    }
    return outcomes;
  }

  // Calls each method once through one client with `metadata` and expects
  // the outcomes in order.
  void ExpectOutcomes(const std::vector<Expected>& expected,
                      const std::map<std::string, std::string>& metadata = {}) {
    std::vector<std::string> methods;
    std::vector<std::string> wanted;
    for (const Expected& e : expected) {
      methods.push_back(e.method);
      wanted.push_back(e.outcome);
    }
    std::vector<std::vector<std::string>> got = RunOutcomes({Client(methods, 1, {metadata})});
    EXPECT_EQ(got[0], wanted) << "methods: " << absl::StrJoin(methods, " ");
  }
};

// A route-level fault abort (grpc_status 12, 100 %) fails the call with
// UNIMPLEMENTED before any pick: the real backend behind it is never called,
// and the design's last route, which points at the cluster with no
// endpoints, fails at once even though the calls wait for ready (a call that
// waited would end DEADLINE_EXCEEDED after kRpcTimeout).
TEST_P(GrpcRouteShapesTest, RouteLevelAbortFailsUnimplementedWithoutCallingTheBackend) {
  std::vector<std::vector<std::string>> outcomes =
      RunOutcomes({Client({"/facet.test.Echo/Abort", "/facet.test.NoSuch/Call"}, 5)});
  EXPECT_THAT(outcomes[0], Each("fail UNIMPLEMENTED"));
}

// A ClusterWeight carrying an abort (grpc_status 14) with all the weight:
// every call fails UNAVAILABLE and its cluster's backend is never called.
TEST_P(GrpcRouteShapesTest, ClusterWeightAbortFailsUnavailableWithoutCallingTheBackend) {
  std::vector<std::vector<std::string>> outcomes =
      RunOutcomes({Client({"/facet.test.Echo/Unavailable"}, 10)});
  EXPECT_THAT(outcomes[0], Each("fail UNAVAILABLE"));
}

// weighted_clusters with total_weight 100 and a weight-0 entry beside a
// weight-100 one: the weight-0 cluster gets no call.
TEST_P(GrpcRouteShapesTest, WeightZeroClusterGetsNoTraffic) {
  std::vector<std::vector<std::string>> outcomes =
      RunOutcomes({Client({"/facet.test.Echo/Weighted"}, 20)});
  EXPECT_THAT(outcomes[0], Each("ok v1"));
}

// The design's split: 50 to an aborting entry on the unroutable cluster, 50
// to a real backend, 0 to another. Each of 60 calls is one of the two
// outcomes, and both occur (missing one has probability 2^-59).
TEST_P(GrpcRouteShapesTest, SplitWithAbortingWeightFailsItsShareUnavailable) {
  std::vector<std::vector<std::string>> outcomes =
      RunOutcomes({Client({"/facet.test.Echo/Split"}, 60)});
  std::map<std::string, int> counts;
  for (const std::string& outcome : outcomes[0]) ++counts[outcome];
  std::cerr << "e2e: " << ClientKindName(GetParam()) << " split of 60: " << counts["ok v2"]
            << " v2, " << counts["fail UNAVAILABLE"] << " UNAVAILABLE\n";
  EXPECT_GT(counts["ok v2"], 0);
  EXPECT_GT(counts["fail UNAVAILABLE"], 0);
  EXPECT_EQ(counts["ok v2"] + counts["fail UNAVAILABLE"], 60) << absl::StrJoin(outcomes[0], ", ");
}

// Method matches: exact path, service prefix, and safe_regex on the path with
// service and method each wrapped in (?:...), which both clients match against
// the whole path.
TEST_P(GrpcRouteShapesTest, MethodMatchesByPathPrefixAndWrappedRegex) {
  ExpectOutcomes({
      {"/facet.test.Echo/Exact", "ok v1"},
      {"/facet.test.Echo/ExactX", "fail UNIMPLEMENTED"},
      {"/facet.test.Prefixed/Anything", "ok v2"},
      {"/facet.test.PrefixedX/Anything", "fail UNIMPLEMENTED"},
      {"/facet.test.Regex/Get", "ok v3"},
      {"/facet.test.Regexp/List", "ok v3"},
      {"/facet.test.Regex/GetAll", "fail UNIMPLEMENTED"},
      {"/facet.test.Re/Get", "fail UNIMPLEMENTED"},
      {"/facet.test.Any/Ping", "ok other"},
      {"/facet.test.Any/PingPong", "fail UNIMPLEMENTED"},
      {"/facet.test.Echo/Whoami", "ok other"},
  });
}

// Header matches with exact_match and a wrapped safe_regex_match select the
// route by a request metadata header, ANDed with the method prefix and with
// each other; the first matching route wins. Every header route sits under
// prefix /facet.test.Echo/, so /facet.test.Other/Whoami matches none of them
// whatever the headers.
TEST_P(GrpcRouteShapesTest, HeaderMatchesByExactAndWrappedRegex) {
  struct Case {
    std::map<std::string, std::string> metadata;
    std::string outcome;  // of /facet.test.Echo/Whoami
  };
  const std::vector<Case> cases = {
      {{}, "ok other"},
      {{{"x-variant", "blue"}}, "ok v2"},
      {{{"x-variant", "blue"}, {"x-tier", "gold"}}, "ok v3"},
      {{{"x-variant", "blue"}, {"x-tier", "silver"}}, "ok v2"},
      {{{"x-variant", "Blue"}}, "ok other"},
      {{{"x-variant", "gray"}}, "ok v3"},
      {{{"x-variant", "green"}}, "ok v3"},
      {{{"x-variant", "greenish"}}, "ok other"},
      {{{"x-variant", "red"}}, "ok loose"},
  };
  std::vector<std::map<std::string, std::string>> sets;
  for (const Case& c : cases) sets.push_back(c.metadata);
  std::vector<std::vector<std::string>> outcomes =
      RunOutcomes({Client({"/facet.test.Echo/Whoami", "/facet.test.Other/Whoami"}, 1, sets)});
  ASSERT_THAT(outcomes[0], SizeIs(2 * cases.size()));
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(absl::StrJoin(cases[i].metadata, ",", absl::PairFormatter("=")));
    EXPECT_EQ(outcomes[0][2 * i], cases[i].outcome) << "/facet.test.Echo/Whoami";
    EXPECT_EQ(outcomes[0][2 * i + 1], "fail UNIMPLEMENTED") << "/facet.test.Other/Whoami";
  }
}

// Why the translation wraps every regex in (?:...): an alternation left
// unwrapped is anchored as a whole by gRPC C++ (RE2 full match) but only at
// its ends by grpc-js-xds, which compiles `^${regex}$` (build/src/matcher.js),
// so "^a|b$" also matches any value starting with "a". Not a shape the
// translation emits; kept to show the difference stays as described.
TEST_P(GrpcRouteShapesTest, UnwrappedAlternationMatchesMoreInNodeThanInCpp) {
  const bool node = GetParam() == ClientKind::kNode;
  ExpectOutcomes({
      {"/facet.test.Loose/A", "ok loose"},
      {"/facet.test.Loose/B", "ok loose"},
      // /facet\.test\.Loose/A|/facet\.test\.Loose/B
      {"/facet.test.Loose/Ax", node ? "ok loose" : "fail UNIMPLEMENTED"},
  });
  // x-variant: red|pink (route unwrapped-header-regex, before route whoami).
  ExpectOutcomes({{"/facet.test.Echo/Whoami", node ? "ok loose" : "ok other"}},
                 {{"x-variant", "reddish"}});
}

// A fault override for a filter the Listener does not list is ignored by both
// clients, and Facet accepts it without a warning: the call goes to the
// route's cluster as if there were no abort, so the trap backend answers, and
// a call to the unroutable cluster waits for ready until its deadline. The
// translation must therefore put the fault filter in every Listener whose
// routes may abort (the design's constant Listener does).
TEST_P(GrpcRouteShapesTest, AbortWithoutFaultFilterInListenerIsIgnored) {
  std::vector<std::vector<std::string>> outcomes =
      RunOutcomes({Client({"/facet.test.Echo/Abort", "/facet.test.Echo/Unavailable"}, 3, {},
                          kTargetWithoutFaultFilter)});
  EXPECT_THAT(outcomes[0], Each("ok trap"));

  ClientOptions no_route = Client({"/facet.test.Echo/Abort", "/facet.test.NoSuch/Call"}, 1, {},
                                  kTargetWithoutFaultFilter);
  no_route.rpc_timeout = absl::Seconds(2);
  outcomes = RunOutcomes({no_route});
  // The first call shows the configuration is there; the second one hangs.
  EXPECT_EQ(outcomes[0], (std::vector<std::string>{"ok trap", "fail DEADLINE_EXCEEDED"}));
}

INSTANTIATE_TEST_SUITE_P(BothClients, GrpcRouteShapesTest,
                         ::testing::Values(ClientKind::kCpp, ClientKind::kNode),
                         [](const ::testing::TestParamInfo<ClientKind>& info) {
                           return info.param == ClientKind::kCpp ? "Cpp" : "Node";
                         });

}  // namespace
}  // namespace facet::e2e
