// Runs `facet validate` in-process over every fixture under test/testdata:
// each invalid manifest must be rejected with the message its `# expect:` line
// names, each warning manifest must pass with its `# expect-warning:` lines,
// and the examples must pass cleanly.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controller/cli/validate_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome Validate(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = RunValidate(args, out, err);
  return {code, out.str(), err.str()};
}

std::vector<std::string> Directives(const fs::path& file, absl::string_view directive) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    absl::string_view view = line;
    if (absl::ConsumePrefix(&view, "# ") && absl::ConsumePrefix(&view, directive)) {
      out.emplace_back(absl::StripAsciiWhitespace(view));
    }
  }
  return out;
}

std::vector<fs::path> Fixtures(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(FACET_SOURCE_DIR) / dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".yaml" || ext == ".yml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ValidateFixturesTest, ExamplesAreValidWithoutWarnings) {
  Outcome outcome = Validate({std::string(FACET_SOURCE_DIR) + "/examples"});
  EXPECT_EQ(outcome.code, kValidateOk) << outcome.out << outcome.err;
  // Nothing but the variants compiled from conditional elements is printed.
  std::istringstream lines(outcome.out);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_TRUE(absl::StartsWith(line, "  ") || absl::StrContains(line, ": compiles to "))
        << "examples should not produce problems or warnings: " << line;
  }
  EXPECT_THAT(outcome.out, HasSubstr("demo/greeter-when-routes: spec.variants[0].resource: "
                                     "compiles to 4 variants from 3 distinct conditions"));
  EXPECT_THAT(outcome.err, HasSubstr(" 0 rejected"));
}

// docs/gateway-api.md's walkthrough starts with this.
TEST(ValidateFixturesTest, GatewayExampleIsValidWithoutWarnings) {
  Outcome outcome = Validate({std::string(FACET_SOURCE_DIR) + "/examples/gateway"});
  EXPECT_EQ(outcome.code, kValidateOk) << outcome.out << outcome.err;
  EXPECT_EQ(outcome.out, "");
  EXPECT_THAT(outcome.err, HasSubstr("2 objects: 2 valid, 0 rejected; 0 errors, 0 warnings"));
}

TEST(ValidateFixturesTest, EveryInvalidFixtureIsRejectedForItsReason) {
  std::vector<fs::path> files = Fixtures("test/testdata/invalid");
  ASSERT_GE(files.size(), 20u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    std::vector<std::string> expected = Directives(file, "expect:");
    ASSERT_FALSE(expected.empty()) << "fixture has no '# expect:' line";
    Outcome outcome = Validate({file.string()});
    EXPECT_EQ(outcome.code, kValidateRejected) << outcome.out;
    for (const std::string& substring : expected) {
      EXPECT_THAT(absl::AsciiStrToLower(outcome.out), HasSubstr(substring)) << outcome.out;
    }
  }
}

TEST(ValidateFixturesTest, EveryWarningFixturePassesWithItsWarnings) {
  std::vector<fs::path> files = Fixtures("test/testdata/warnings");
  ASSERT_GE(files.size(), 4u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    std::vector<std::string> expected = Directives(file, "expect-warning:");
    ASSERT_FALSE(expected.empty()) << "fixture has no '# expect-warning:' line";
    Outcome outcome = Validate({file.string()});
    EXPECT_EQ(outcome.code, kValidateOk) << outcome.out;
    for (const std::string& substring : expected) {
      EXPECT_THAT(absl::AsciiStrToLower(outcome.out), HasSubstr(substring)) << outcome.out;
    }
    EXPECT_THAT(outcome.out, HasSubstr(": warning: "));
  }
}

TEST(ValidateFixturesTest, OutputLinesNameObjectFieldAndReason) {
  Outcome outcome = Validate({std::string(FACET_SOURCE_DIR) + "/test/testdata/invalid"});
  EXPECT_EQ(outcome.code, kValidateRejected);
  std::istringstream lines(outcome.out);
  for (std::string line; std::getline(lines, line);) {
    // "namespace/name: field: reason" or "file:line: reason".
    EXPECT_GE(std::count(line.begin(), line.end(), ':'), 2) << line;
  }
}

TEST(ValidateFixturesTest, PrintsARejectedObjectBeforeTheObjectsThatReferToIt) {
  Outcome outcome = Validate({std::string(FACET_SOURCE_DIR) +
                              "/test/testdata/invalid/reference-to-rejected-object.yaml"});
  EXPECT_EQ(outcome.code, kValidateRejected);
  std::vector<std::string> lines;
  std::istringstream in(outcome.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // By name the listener (a-) and the route (b-) come first; the cluster (c-)
  // is the cause, so it prints first, then the route, then the listener.
  ASSERT_EQ(lines.size(), 3u) << outcome.out;
  EXPECT_THAT(lines[0], HasSubstr("demo/c-cluster: spec.variants[0].resource.lb_polcy: unknown "
                                  "field \"lb_polcy\""));
  EXPECT_THAT(lines[0], HasSubstr("did you mean \"lb_policy\"?"));
  EXPECT_THAT(lines[1], HasSubstr("demo/b-route: spec.variants[0].resource.virtual_hosts[0]."
                                  "routes[0].route.cluster: references cluster \"greeter\", which "
                                  "is rejected (see demo/c-cluster)"));
  EXPECT_THAT(lines[2], HasSubstr("demo/a-listener: spec.variants[0].resource.api_listener."
                                  "api_listener.rds.route_config_name: references route "
                                  "\"greeter\", which is rejected (see demo/b-route)"));
}

TEST(ValidateFixturesTest, PrintsNamesWithControlCharactersEscapedOnOneLine) {
  const fs::path file = fs::path(::testing::TempDir()) / "forged-name.yaml";
  // A newline and ESC (YAML escapes) and a byte that is not UTF-8 (raw).
  std::ofstream(file) << "apiVersion: facet.dev/v1alpha1\nkind: XdsResource\n"
                         "metadata: {name: \"x\\ndemo/forged: ok\\e[2K\", namespace: \"n\xff\"}\n"
                         "spec: {type: cluster, name: c, variants: [{resource: {}}]}\n";
  Outcome outcome = Validate({file.string()});
  EXPECT_EQ(outcome.code, kValidateRejected);
  EXPECT_THAT(outcome.out, HasSubstr("x\\ndemo/forged: ok\\x1b[2K"));
  EXPECT_THAT(outcome.out, HasSubstr("n\\xff"));
  std::istringstream lines(outcome.out);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_THAT(line, Not(HasSubstr("\x1b"))) << line;
    EXPECT_THAT(line, Not(HasSubstr("\xff"))) << line;
    EXPECT_FALSE(absl::StartsWith(line, "demo/forged")) << outcome.out;
  }
  fs::remove(file);
}

// Writes `files` (name, text) into a fresh directory under the test's
// temporary directory and returns its path.
fs::path WriteDirectory(const std::string& name,
                        const std::vector<std::pair<std::string, std::string>>& files) {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [file, text] : files) std::ofstream(dir / file) << text;
  return dir;
}

constexpr char kService[] =
    "apiVersion: v1\nkind: Service\nmetadata: {name: greeter, namespace: demo}\n"
    "spec: {ports: [{name: grpc, port: 50051}]}\n";
constexpr char kRoute[] =
    "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\n"
    "metadata: {name: greeter, namespace: demo}\n"
    "spec:\n  parentRefs: [{group: '', kind: Service, name: greeter}]\n";

TEST(ValidateFixturesTest, ProblemsOfObjectsFacetDoesNotOwnAreWarnings) {
  // A slice without its Service label, a ReferenceGrant without `to`: Facet
  // ignores them, and says so, but the input is valid.
  const fs::path dir = WriteDirectory("not-owned", {{"objects.yaml", absl::StrCat(kService, R"(---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: greeter-1, namespace: demo}
addressType: IPv4
endpoints: []
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: g, namespace: demo}
spec: {from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: other}]}
)")}});
  Outcome outcome = Validate({dir.string()});
  EXPECT_EQ(outcome.code, kValidateOk) << outcome.out;
  EXPECT_THAT(outcome.out,
              HasSubstr("demo/greeter-1: metadata.labels.kubernetes.io/service-name: warning: "
                        "is not set: the slice belongs to no Service and is not used\n"));
  EXPECT_THAT(outcome.out, HasSubstr("demo/g: spec.to: warning: ignored: invalid ReferenceGrant: "
                                     "is required: at least 1 entry\n"));
  EXPECT_THAT(Validate({"--no-warnings", dir.string()}).out, Not(HasSubstr("demo/")));
  fs::remove_all(dir);
}

TEST(ValidateFixturesTest, ARouteOrPolicyWithErrorsRejectsTheInput) {
  const fs::path dir = WriteDirectory(
      "route-errors",
      {{"objects.yaml", absl::StrCat(kService, "---\n", kRoute, R"(  rules: [{name: Bad_Name}]
---
apiVersion: facet.dev/v1alpha1
kind: XdsVariantPolicy
metadata: {name: canary, namespace: demo}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: GRPCRoute, name: greeter}]
  when: {env: prod}
  extra: 1
)")}});
  Outcome outcome = Validate({dir.string()});
  EXPECT_EQ(outcome.code, kValidateRejected) << outcome.out;
  EXPECT_THAT(outcome.out, HasSubstr("demo/greeter: spec.rules[0].name: Accepted=False "
                                     "UnsupportedValue: \"Bad_Name\" does not match"));
  EXPECT_THAT(outcome.out, HasSubstr("demo/canary: spec.extra: "));
  EXPECT_THAT(outcome.out, Not(HasSubstr("warning")));
  EXPECT_THAT(outcome.err, HasSubstr("2 objects: 0 valid, 2 rejected"));
  fs::remove_all(dir);
}

TEST(ValidateFixturesTest, RouteStatusIsPrintedOncePerCauseWhateverItsParents) {
  // Two ports, both parents of the route: one line for the route's problem,
  // one per parent for what only that parent says.
  const fs::path dir = WriteDirectory("route-status", {{"objects.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: greeter, namespace: demo}
spec: {ports: [{name: grpc, port: 50051}, {name: admin, port: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: greeter, namespace: demo}
spec:
  parentRefs: [{group: '', kind: Service, name: greeter}, {group: '', kind: Service, name: gone}]
  hostnames: [greeter.example.com]
  rules:
  - filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: a, value: b}]}}]
    backendRefs: [{name: greeter, port: 50051}]
)"}});
  Outcome outcome = Validate({dir.string()});
  EXPECT_EQ(outcome.code, kValidateRejected) << outcome.out;
  EXPECT_EQ(outcome.out,
            "demo/greeter: spec.rules[0].filters[0]: Accepted=False IncompatibleFilters: "
            "RequestHeaderModifier filter is not supported: proxyless gRPC clients cannot modify "
            "headers (no gRFC gives them a filter for it); remove it\n"
            "demo/greeter: spec.parentRefs[1]: Accepted=False NoMatchingParent: Service demo/gone "
            "does not exist\n");
  EXPECT_THAT(outcome.err, HasSubstr("1 objects: 0 valid, 1 rejected; 2 errors, 0 warnings"));
  fs::remove_all(dir);
}

TEST(ValidateFixturesTest, RouteOfAnotherControllerPrintsOnlyWhatTheCrdRefuses) {
  // Attached to a Gateway only: not Facet's route, its filter no concern.
  constexpr char kGatewayRoute[] =
      "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\n"
      "metadata: {name: edge, namespace: demo}\n"
      "spec:\n  parentRefs: [{name: gateway}]\n  rules:\n  - filters: [{type: "
      "RequestMirror, requestMirror: {backendRef: {name: greeter, port: 50051}}}]\n";
  const fs::path dir = WriteDirectory("gateway-route", {{"objects.yaml", kGatewayRoute}});
  Outcome outcome = Validate({dir.string()});
  EXPECT_EQ(outcome.code, kValidateOk) << outcome.out;
  EXPECT_EQ(outcome.out, "");
  // What the CRD refuses is refused whoever the parent is.
  const fs::path broken =
      WriteDirectory("gateway-route-broken",
                     {{"objects.yaml", absl::StrCat(kGatewayRoute, "    name: Bad_Name\n")}});
  outcome = Validate({broken.string()});
  EXPECT_EQ(outcome.code, kValidateRejected) << outcome.out;
  EXPECT_THAT(outcome.out, HasSubstr("demo/edge: spec.rules[0].name: \"Bad_Name\" does not match"));
  fs::remove_all(dir);
  fs::remove_all(broken);
}

TEST(ValidateFixturesTest, AServiceDefinedInTwoFilesIsAWarningARouteAnError) {
  const fs::path services =
      WriteDirectory("service-twice", {{"a.yaml", kService}, {"b.yaml", kService}});
  Outcome outcome = Validate({services.string()});
  EXPECT_EQ(outcome.code, kValidateOk) << outcome.out;
  EXPECT_THAT(outcome.out, HasSubstr("b.yaml:1: warning: demo/greeter: defined again (first at "));
  const fs::path routes = WriteDirectory(
      "route-twice", {{"a.yaml", absl::StrCat(kService, "---\n", kRoute)}, {"b.yaml", kRoute}});
  outcome = Validate({routes.string()});
  EXPECT_EQ(outcome.code, kValidateRejected) << outcome.out;
  EXPECT_THAT(outcome.out, HasSubstr("b.yaml:1: demo/greeter: defined again (first at "));
  fs::remove_all(services);
  fs::remove_all(routes);
}

TEST(ValidateFixturesTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Validate({}).code, kValidateUnreadable);
  EXPECT_EQ(Validate({"--bogus", "x"}).code, kValidateUnreadable);
  EXPECT_EQ(Validate({"/nonexistent/path"}).code, kValidateUnreadable);
  EXPECT_EQ(Validate({"--help"}).code, kValidateOk);
}

TEST(ValidateFixturesTest, NoWarningsFlagHidesWarnings) {
  std::vector<fs::path> files = Fixtures("test/testdata/warnings");
  ASSERT_FALSE(files.empty());
  Outcome outcome = Validate({"--no-warnings", files[0].string()});
  EXPECT_EQ(outcome.code, kValidateOk);
  EXPECT_THAT(outcome.out, Not(HasSubstr("warning")));
}

}  // namespace
}  // namespace facet::controller
