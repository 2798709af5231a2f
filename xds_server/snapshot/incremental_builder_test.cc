#include "xds_server/snapshot/incremental_builder.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/snapshot/test_objects.h"

namespace facet::xds {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

ResourceObject Object(const std::string& name, const std::string& type, const std::string& xds_name,
                      const std::vector<std::pair<std::string, std::string>>& variants) {
  std::string bad_match;
  ResourceObject object = testing::MakeObject("demo", name, type, xds_name, variants, &bad_match);
  EXPECT_EQ(bad_match, "") << "a test match does not compile";
  return object;
}

std::string RouteTo(const std::string& cluster) {
  return R"({virtual_hosts: [{name: v, domains: [greeter], routes: [{match: {prefix: ""}, route: {cluster: ")" +
         cluster + R"("}}]}]})";
}
std::string EdsCluster() { return "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}"; }
std::string Endpoints(int port) {
  return "{endpoints: [{locality: {}, load_balancing_weight: 1, lb_endpoints: [{endpoint: "
         "{address: {socket_address: {address: 127.0.0.1, port_value: " +
         std::to_string(port) + "}}}}]}]}";
}

// n services: a route per service over two clusters, each with endpoints.
std::vector<ResourceObject> World(int n) {
  std::vector<ResourceObject> out;
  for (int i = 0; i < n; ++i) {
    const std::string s = "s" + std::to_string(i);
    out.push_back(Object(s + "-route", "route", s,
                         {{"{env: prod}", RouteTo(s + "-a")}, {"{env: {not: prod}}", RouteTo(s + "-b")}}));
    for (const char* c : {"-a", "-b"}) {
      out.push_back(Object(s + c, "cluster", s + c, {{"", EdsCluster()}}));
      out.push_back(Object(s + c + "-eps", "endpoint", s + c, {{"", Endpoints(1000 + i)}}));
    }
  }
  return out;
}

IncrementalBuilder::Result BuildAll(IncrementalBuilder& builder,
                                    const std::vector<ResourceObject>& objects) {
  for (const auto& object : objects) builder.Upsert(object);
  return builder.Build();
}

TEST(IncrementalBuilderTest, OneEditValidatesOneObjectAndSharesTheRest) {
  IncrementalBuilder builder{BuildOptions{}};
  std::vector<ResourceObject> world = World(50);
  IncrementalBuilder::Result first = BuildAll(builder, world);
  EXPECT_EQ(first.validated_objects, 250);
  EXPECT_EQ(builder.rejected_count(), 0);
  const auto before = first.snapshot;

  // Re-sending every object unchanged costs nothing and publishes nothing.
  IncrementalBuilder::Result same = BuildAll(builder, world);
  EXPECT_EQ(same.validated_objects, 0);
  EXPECT_FALSE(same.snapshot_changed);
  EXPECT_THAT(same.changed_statuses, IsEmpty());

  builder.Upsert(Object("s7-a-eps", "endpoint", "s7-a", {{"", Endpoints(9999)}}));
  IncrementalBuilder::Result edit = builder.Build();
  EXPECT_EQ(edit.validated_objects, 1);
  EXPECT_LE(edit.reference_checks, 3);  // The endpoints and the cluster referring to them.
  ASSERT_TRUE(edit.snapshot_changed);
  const ChangeSet& changes = edit.snapshot->changes();
  EXPECT_FALSE(changes.all);
  EXPECT_EQ(edit.snapshot->base_version(), before->version());
  ASSERT_EQ(changes.by_type.size(), 1u);
  EXPECT_THAT(changes.by_type.at(&ClusterLoadAssignmentType()).changed, ElementsAre("s7-a"));
  // Unchanged resources are the very same objects.
  EXPECT_EQ(edit.snapshot->Find(RouteConfigurationType(), "s3")->variants[0],
            before->Find(RouteConfigurationType(), "s3")->variants[0]);
  ASSERT_EQ(edit.changed_statuses.size(), 1u);
  EXPECT_EQ(edit.changed_statuses[0]->ref.name, "s7-a-eps");
}

TEST(IncrementalBuilderTest, InvalidEditKeepsServingAndReferrersStayAccepted) {
  IncrementalBuilder builder{BuildOptions{}};
  IncrementalBuilder::Result first = BuildAll(builder, World(3));
  builder.Upsert(Object("s1-a", "cluster", "s1-a", {{"", "{type: EDS, bogus: 1}"}}));
  IncrementalBuilder::Result bad = builder.Build();
  EXPECT_FALSE(bad.snapshot_changed);
  auto status = builder.StatusOf({kXdsResourceKind, "demo", "s1-a"});
  ASSERT_NE(status, nullptr);
  EXPECT_FALSE(status->accepted);
  EXPECT_TRUE(status->serving_previous);
  EXPECT_TRUE(builder.StatusOf({kXdsResourceKind, "demo", "s1-route"})->accepted);
}

// An endpoint object with `n` variants {env: v0} ... {env: v<n-1>}; when
// `repeat` >= 0, variant `repeat` repeats the value of variant 0 (an overlap).
ResourceObject EnvPartition(const std::string& name, int n, int repeat, int port) {
  std::vector<std::pair<std::string, std::string>> variants;
  for (int i = 0; i < n; ++i) {
    variants.emplace_back("{env: v" + std::to_string(i == repeat ? 0 : i) + "}", Endpoints(port));
  }
  return Object(name, "endpoint", name, variants);
}

// An endpoint object whose 2^bits variants are every combination of
// {k<i>: a} and {k<i>: {not: a}} over keys <prefix>0 ...: a gap-free
// partition that only the general search decides.
ResourceObject NegatedGrid(const std::string& name, const std::string& prefix, int bits) {
  std::vector<std::pair<std::string, std::string>> variants;
  for (int v = 0; v < (1 << bits); ++v) {
    std::string match = "{";
    for (int k = 0; k < bits; ++k) {
      match += (k > 0 ? ", " : "") + prefix + std::to_string(k);
      match += (v >> k) & 1 ? ": {not: a}" : ": a";
    }
    variants.emplace_back(match + "}", Endpoints(1));
  }
  return Object(name, "endpoint", name, variants);
}

TEST(IncrementalBuilderTest, AcceptsExactPartitionsUpToTheVariantLimit) {
  IncrementalBuilder builder{BuildOptions{}};
  builder.Upsert(EnvPartition("p768", 768, -1, 1));
  builder.Upsert(EnvPartition("p1024", 1024, -1, 1));
  builder.Upsert(EnvPartition("p1025", 1025, -1, 1));
  builder.Build();
  EXPECT_TRUE(builder.StatusOf({kXdsResourceKind, "demo", "p768"})->accepted);
  EXPECT_TRUE(builder.StatusOf({kXdsResourceKind, "demo", "p1024"})->accepted);
  auto over = builder.StatusOf({kXdsResourceKind, "demo", "p1025"});
  EXPECT_FALSE(over->accepted);
  ASSERT_FALSE(over->findings.empty());
  EXPECT_EQ(over->findings[0].reason, "TooComplex");
  EXPECT_THAT(over->findings[0].message, HasSubstr("1025 variants; the limit is 1024"));
}

TEST(IncrementalBuilderTest, RejectedVariantSetsAreNotSearchedAgain) {
  IncrementalBuilder builder{BuildOptions{}};
  std::vector<ResourceObject> world = World(20);
  for (int i = 0; i < 3; ++i) {
    world.push_back(EnvPartition("rejected-" + std::to_string(i), 1024, 1000 + i, 1));
  }
  IncrementalBuilder::Result first = BuildAll(builder, world);
  EXPECT_EQ(first.validated_objects, 103);
  // The routes share one set, the clusters and endpoints another.
  EXPECT_EQ(first.variant_set_searches, 2 + 3);
  for (int i = 0; i < 3; ++i) {
    auto status = builder.StatusOf({kXdsResourceKind, "demo", "rejected-" + std::to_string(i)});
    EXPECT_FALSE(status->accepted);
    ASSERT_FALSE(status->findings.empty());
    EXPECT_EQ(status->findings[0].reason, "OverlappingVariants");
    EXPECT_THAT(status->findings[0].message,
                HasSubstr("variants \"v0\" and \"v" + std::to_string(1000 + i) + "\" overlap"));
  }
  // Edits elsewhere do not touch the rejected objects.
  for (int edit = 0; edit < 10; ++edit) {
    builder.Upsert(Object("s7-a-eps", "endpoint", "s7-a", {{"", Endpoints(2000 + edit)}}));
    IncrementalBuilder::Result result = builder.Build();
    EXPECT_EQ(result.validated_objects, 1);
    EXPECT_EQ(result.variant_set_searches, 0);
  }
  // Nor does an edit of a rejected object that keeps its constraints: the
  // outcome for those is known.
  builder.Upsert(EnvPartition("rejected-1", 1024, 1001, 7));
  IncrementalBuilder::Result resource_edit = builder.Build();
  EXPECT_EQ(resource_edit.validated_objects, 1);
  EXPECT_EQ(resource_edit.variant_set_searches, 0);
  EXPECT_EQ(resource_edit.search_steps, 0);
  auto status = builder.StatusOf({kXdsResourceKind, "demo", "rejected-1"});
  EXPECT_FALSE(status->accepted);
  EXPECT_THAT(status->findings[0].message, HasSubstr("\"v1001\" overlap"));
}

TEST(IncrementalBuilderTest, ObjectOverItsSearchBudgetIsRejectedAndTheRestServes) {
  BuildOptions options;
  options.limits.object_search_steps = 100;
  IncrementalBuilder builder{options};
  std::vector<ResourceObject> world = World(5);
  world.push_back(NegatedGrid("hostile", "k", 4));
  IncrementalBuilder::Result result = BuildAll(builder, world);
  auto hostile = builder.StatusOf({kXdsResourceKind, "demo", "hostile"});
  EXPECT_FALSE(hostile->accepted);
  ASSERT_FALSE(hostile->findings.empty());
  EXPECT_EQ(hostile->findings[0].reason, "TooComplex");
  EXPECT_EQ(hostile->findings[0].field, "spec.variants");
  EXPECT_THAT(hostile->findings[0].message,
              HasSubstr("budget of 100 search steps (limit object_search_steps)"));
  EXPECT_EQ(builder.rejected_count(), 1);
  EXPECT_EQ(result.snapshot->size(), 25u);
  EXPECT_EQ(result.deferred_objects, 0);
}

TEST(IncrementalBuilderTest, BuildSearchBudgetDefersExpensiveObjectsToTheNextBuild) {
  // What one expensive object's checks cost.
  int64_t cost = 0;
  {
    IncrementalBuilder alone{BuildOptions{}};
    alone.Upsert(NegatedGrid("g", "k", 7));
    cost = alone.Build().search_steps;
  }
  ASSERT_GT(cost, 4096);  // More than an object gets once the build's budget is spent.
  BuildOptions options;
  options.limits.object_search_steps = cost;
  options.limits.build_search_steps = cost;  // One such object per build.
  IncrementalBuilder builder{options};
  std::vector<ResourceObject> world = World(5);
  // Different keys, so that no two share an outcome.
  for (const char* prefix : {"a", "b", "c"}) {
    world.push_back(NegatedGrid(std::string("grid-") + prefix, prefix, 7));
  }
  IncrementalBuilder::Result first = BuildAll(builder, world);
  EXPECT_EQ(first.deferred_objects, 2);
  EXPECT_TRUE(builder.has_pending());
  EXPECT_EQ(first.validated_objects, 26);
  // The cheap objects are all served; a deferred object has no status yet.
  EXPECT_EQ(first.snapshot->size(), 26u);
  EXPECT_NE(builder.StatusOf({kXdsResourceKind, "demo", "grid-a"}), nullptr);
  EXPECT_EQ(builder.StatusOf({kXdsResourceKind, "demo", "grid-b"}), nullptr);
  EXPECT_EQ(builder.rejected_count(), 0);

  IncrementalBuilder::Result second = builder.Build();
  EXPECT_EQ(second.validated_objects, 1);
  EXPECT_EQ(second.deferred_objects, 1);
  IncrementalBuilder::Result third = builder.Build();
  EXPECT_EQ(third.validated_objects, 1);
  EXPECT_EQ(third.deferred_objects, 0);
  EXPECT_FALSE(builder.has_pending());
  for (const char* name : {"grid-a", "grid-b", "grid-c"}) {
    EXPECT_TRUE(builder.StatusOf({kXdsResourceKind, "demo", name})->accepted) << name;
  }
  EXPECT_EQ(builder.rejected_count(), 0);
}

TEST(IncrementalBuilderTest, ALargeFirstBuildRejectsWhatRefersToARejectedObject) {
  // Enough objects that references are checked over the cores first: the
  // route was fine when that happened, and is rejected once its cluster is.
  std::vector<ResourceObject> world = World(120);
  ASSERT_GE(world.size(), 512u);
  world.erase(std::remove_if(world.begin(), world.end(),
                             [](const ResourceObject& object) {
                               return object.ref.name == "s7-a-eps";
                             }),
              world.end());
  IncrementalBuilder builder{BuildOptions{}};
  IncrementalBuilder::Result result = BuildAll(builder, world);
  EXPECT_EQ(result.snapshot->size(), world.size() - 2);
  const auto cluster = builder.StatusOf({kXdsResourceKind, "demo", "s7-a"});
  ASSERT_NE(cluster, nullptr);
  EXPECT_FALSE(cluster->accepted);
  const auto route = builder.StatusOf({kXdsResourceKind, "demo", "s7-route"});
  ASSERT_NE(route, nullptr);
  EXPECT_FALSE(route->accepted);
  ASSERT_EQ(route->findings.size(), 1u);
  EXPECT_THAT(route->findings[0].message, HasSubstr("which is rejected"));
  EXPECT_EQ(route->findings[0].cause, cluster->ref);
  EXPECT_TRUE(builder.StatusOf({kXdsResourceKind, "demo", "s8-route"})->accepted);
  EXPECT_EQ(builder.rejected_count(), 2);
}

TEST(IncrementalBuilderTest, BuildUntilDecidedChecksEveryDeferredObject) {
  int64_t cost = 0;
  {
    IncrementalBuilder alone{BuildOptions{}};
    alone.Upsert(NegatedGrid("g", "k", 7));
    cost = alone.Build().search_steps;
  }
  BuildOptions options;
  options.limits.object_search_steps = cost;
  options.limits.build_search_steps = cost;  // One such object per build.
  IncrementalBuilder builder{options};
  for (const char* prefix : {"a", "b", "c"}) {
    builder.Upsert(NegatedGrid(std::string("grid-") + prefix, prefix, 7));
  }
  IncrementalBuilder::Result last = builder.BuildUntilDecided();
  EXPECT_EQ(last.deferred_objects, 0);
  EXPECT_EQ(last.validated_objects, 1);  // The last build checked the last one.
  EXPECT_FALSE(builder.has_pending());
  for (const char* name : {"grid-a", "grid-b", "grid-c"}) {
    EXPECT_TRUE(builder.StatusOf({kXdsResourceKind, "demo", name})->accepted) << name;
  }
}

TEST(IncrementalBuilderTest, DeletionCascadesAndRestoringItHeals) {
  IncrementalBuilder builder{BuildOptions{}};
  std::vector<ResourceObject> world = World(3);
  BuildAll(builder, world);
  builder.Remove({kXdsResourceKind, "demo", "s2-b-eps"});
  IncrementalBuilder::Result removed = builder.Build();
  EXPECT_EQ(removed.snapshot->Find(ClusterLoadAssignmentType(), "s2-b"), nullptr);
  EXPECT_EQ(removed.snapshot->Find(ClusterType(), "s2-b"), nullptr);
  // The route's earlier revision refers to the cluster as well: it stops.
  EXPECT_EQ(removed.snapshot->Find(RouteConfigurationType(), "s2"), nullptr);
  EXPECT_NE(removed.snapshot->Find(RouteConfigurationType(), "s1"), nullptr);
  EXPECT_THAT(removed.removed_statuses, ElementsAre(ObjectRef{kXdsResourceKind, "demo", "s2-b-eps"}));
  const auto& changes = removed.snapshot->changes();
  EXPECT_THAT(changes.by_type.at(&RouteConfigurationType()).removed, ElementsAre("s2"));

  builder.Upsert(world[14]);  // s2-b-eps again.
  ASSERT_EQ(world[14].ref.name, "s2-b-eps");
  IncrementalBuilder::Result back = builder.Build();
  EXPECT_NE(back.snapshot->Find(RouteConfigurationType(), "s2"), nullptr);
  EXPECT_NE(back.snapshot->Find(ClusterType(), "s2-b"), nullptr);
  EXPECT_TRUE(builder.StatusOf({kXdsResourceKind, "demo", "s2-route"})->accepted);
}

TEST(IncrementalBuilderTest, ReferrersPointAtARejectedObjectWhileItIsRejected) {
  IncrementalBuilder builder{BuildOptions{}};
  std::vector<ResourceObject> world = World(2);
  BuildAll(builder, world);
  const ObjectRef route{kXdsResourceKind, "demo", "s1-route"};
  const ObjectRef cluster{kXdsResourceKind, "demo", "s1-a"};
  auto route_errors = [&] {
    std::vector<std::string> out;
    for (const Finding& finding : builder.StatusOf(route)->findings) out.push_back(finding.message);
    return out;
  };
  builder.Remove(cluster);
  builder.Build();
  EXPECT_THAT(route_errors(), ElementsAre(HasSubstr("cluster \"s1-a\" is not served")));

  // Declared again, but rejected (no earlier revision to fall back on).
  builder.Upsert(Object("s1-a", "cluster", "s1-a", {{"", "{type: EDS, bogus: 1}"}}));
  builder.Build();
  EXPECT_THAT(route_errors(), ElementsAre(HasSubstr(
                                  "references cluster \"s1-a\", which is rejected (see demo/s1-a)")));
  EXPECT_EQ(builder.StatusOf(route)->findings[0].cause, cluster);

  // Renamed: the route's name is no longer declared at all.
  builder.Upsert(Object("s1-a", "cluster", "s1-z", {{"", "{type: EDS, bogus: 1}"}}));
  builder.Build();
  EXPECT_THAT(route_errors(), ElementsAre(HasSubstr("cluster \"s1-a\" is not served")));

  builder.Upsert(Object("s1-a", "cluster", "s1-a", {{"", "{type: EDS, bogus: 1}"}}));
  builder.Build();
  EXPECT_THAT(route_errors(), ElementsAre(HasSubstr("which is rejected (see demo/s1-a)")));
  builder.Remove(cluster);
  builder.Build();
  EXPECT_THAT(route_errors(), ElementsAre(HasSubstr("cluster \"s1-a\" is not served")));

  builder.Upsert(world[6]);  // s1-a, valid.
  ASSERT_EQ(world[6].ref, cluster);
  builder.Build();
  EXPECT_TRUE(builder.StatusOf(route)->accepted);
}

TEST(IncrementalBuilderTest, DuplicateLoserTakesOverWhenTheWinnerIsDeleted) {
  IncrementalBuilder builder{BuildOptions{}};
  builder.Upsert(Object("b-eps", "endpoint", "x", {{"", Endpoints(1)}}));
  builder.Build();
  builder.Upsert(Object("a-eps", "endpoint", "x", {{"", Endpoints(2)}}));
  builder.Build();
  EXPECT_THAT(builder.StatusOf({kXdsResourceKind, "demo", "a-eps"})->findings[0].message,
              HasSubstr("is already declared by demo/b-eps"));
  builder.Remove({kXdsResourceKind, "demo", "b-eps"});
  IncrementalBuilder::Result result = builder.Build();
  EXPECT_TRUE(builder.StatusOf({kXdsResourceKind, "demo", "a-eps"})->accepted);
  EXPECT_EQ(result.snapshot->Find(ClusterLoadAssignmentType(), "x")->owner.name, "a-eps");
}

// Returns `object` with a fresh copy of its documents and the first
// variant's resource replaced (YAML::Node copies share their node, and
// assigning to one would change every copy).
ResourceObject WithResource(const ResourceObject& object, const std::string& resource) {
  ResourceObject out = object;
  for (VariantSpec& variant : out.spec->variants) variant.resource = YAML::Clone(variant.resource);
  out.spec->variants[0].resource = YAML::Load(resource);
  return out;
}

// A ClusterLoadAssignment a source generated for `from`.
ResourceObject GeneratedEndpoints(const std::string& name, const std::string& xds_name, int port,
                                  const std::string& from) {
  ResourceObject object = Object(name, "endpoint", xds_name, {{"", Endpoints(port)}});
  object.ref.kind = kGeneratedKind;
  object.generated_from = from;
  return object;
}

std::vector<std::string> Messages(const ObjectStatus& status, Severity severity) {
  std::vector<std::string> out;
  for (const Finding& finding : status.findings) {
    if (finding.severity == severity) out.push_back(finding.reason + ": " + finding.message);
  }
  return out;
}

constexpr char kGreeterPort[] = "Service demo/greeter port 50051";

TEST(IncrementalBuilderTest, XdsResourceBeatsGeneratedWhateverTheOrder) {
  // The generated object's reference sorts first (kind "Generated"), so
  // neither the lowest reference nor, when it came first, the current owner
  // decides.
  const ResourceObject written = Object("greeter-eps", "endpoint", "x", {{"", Endpoints(1)}});
  const ResourceObject generated = GeneratedEndpoints("endpoint/x", "x", 2, kGreeterPort);
  ASSERT_LT(generated.ref, written.ref);
  for (bool generated_first : {true, false}) {
    for (bool one_build : {true, false}) {
      SCOPED_TRACE(absl::StrCat("generated first: ", generated_first, ", one build: ", one_build));
      IncrementalBuilder builder{BuildOptions{}};
      builder.Upsert(generated_first ? generated : written);
      if (!one_build) builder.Build();
      builder.Upsert(generated_first ? written : generated);
      IncrementalBuilder::Result result = builder.Build();
      EXPECT_EQ(result.snapshot->Find(ClusterLoadAssignmentType(), "x")->owner, written.ref);
      EXPECT_TRUE(builder.StatusOf(written.ref)->accepted);
      auto loser = builder.StatusOf(generated.ref);
      EXPECT_FALSE(loser->accepted);
      EXPECT_FALSE(loser->serving_previous);
      EXPECT_THAT(Messages(*loser, Severity::kError),
                  ElementsAre("DuplicateName: duplicate: endpoint \"x\" is already declared by "
                              "XdsResource demo/greeter-eps, which serves it instead"));
    }
  }
}

TEST(IncrementalBuilderTest, WinnerGetsDuplicateWarning) {
  IncrementalBuilder builder{BuildOptions{}};
  const ResourceObject written = Object("greeter-eps", "endpoint", "x", {{"", Endpoints(1)}});
  builder.Upsert(written);
  builder.Build();
  builder.Upsert(GeneratedEndpoints("endpoint/x", "x", 2, kGreeterPort));
  IncrementalBuilder::Result result = builder.Build();
  // The winner is re-statused though its own claim did not move.
  ASSERT_EQ(result.changed_statuses.size(), 2u);
  auto winner = builder.StatusOf(written.ref);
  EXPECT_TRUE(winner->accepted);
  EXPECT_THAT(Messages(*winner, Severity::kWarning),
              ElementsAre("DuplicateName: endpoint \"x\" is also generated for Service "
                          "demo/greeter port 50051; this XdsResource serves it"));
  EXPECT_THAT(Messages(*winner, Severity::kError), IsEmpty());

  // A new description alone re-validates nothing and reaches the winner.
  builder.Upsert(
      GeneratedEndpoints("endpoint/x", "x", 2, absl::StrCat(kGreeterPort, " (GRPCRoutes demo/a)")));
  IncrementalBuilder::Result renamed = builder.Build();
  EXPECT_EQ(renamed.validated_objects, 0);
  EXPECT_THAT(Messages(*builder.StatusOf(written.ref), Severity::kWarning),
              ElementsAre(HasSubstr("also generated for Service demo/greeter port 50051 "
                                    "(GRPCRoutes demo/a); this XdsResource serves it")));
}

TEST(IncrementalBuilderTest, RemovingTheGeneratedClaimantClearsTheWarning) {
  IncrementalBuilder builder{BuildOptions{}};
  const ResourceObject written = Object("greeter-eps", "endpoint", "x", {{"", Endpoints(1)}});
  const ResourceObject generated = GeneratedEndpoints("endpoint/x", "x", 2, kGreeterPort);
  builder.Upsert(written);
  builder.Upsert(generated);
  builder.Build();
  ASSERT_THAT(Messages(*builder.StatusOf(written.ref), Severity::kWarning), SizeIs(1));
  builder.Remove(generated.ref);
  IncrementalBuilder::Result removed = builder.Build();
  EXPECT_FALSE(removed.snapshot_changed);
  ASSERT_EQ(removed.changed_statuses.size(), 1u);
  EXPECT_EQ(removed.changed_statuses[0]->ref, written.ref);
  EXPECT_THAT(removed.changed_statuses[0]->findings, IsEmpty());

  // Back, then the XdsResource goes: the generated object takes the name over.
  builder.Upsert(generated);
  builder.Build();
  builder.Remove(written.ref);
  IncrementalBuilder::Result taken = builder.Build();
  EXPECT_TRUE(builder.StatusOf(generated.ref)->accepted);
  EXPECT_THAT(builder.StatusOf(generated.ref)->findings, IsEmpty());
  EXPECT_EQ(taken.snapshot->Find(ClusterLoadAssignmentType(), "x")->owner, generated.ref);
}

TEST(IncrementalBuilderTest, GeneratedLoserToGeneratedNamesWhatTheWinnerWasGeneratedFor) {
  IncrementalBuilder builder{BuildOptions{}};
  builder.Upsert(GeneratedEndpoints("endpoint/x", "x", 1, kGreeterPort));
  builder.Upsert(GeneratedEndpoints("endpoint/y", "x", 2, "Service demo/other port 80"));
  builder.Build();
  auto winner = builder.StatusOf({kGeneratedKind, "demo", "endpoint/x"});
  EXPECT_TRUE(winner->accepted);
  EXPECT_THAT(winner->findings, IsEmpty());
  EXPECT_THAT(Messages(*builder.StatusOf({kGeneratedKind, "demo", "endpoint/y"}), Severity::kError),
              ElementsAre("DuplicateName: duplicate: endpoint \"x\" is already generated for "
                          "Service demo/greeter port 50051"));
}

TEST(IncrementalBuilderTest, XdsResourceInAnotherNamespaceDoesNotTakeGeneratedNames) {
  // Only the generated object's own namespace overrides it; a claimant from
  // elsewhere competes as between written objects: the current owner keeps
  // the name, else the first by reference (the generated one here).
  const ResourceObject generated = GeneratedEndpoints("endpoint/x", "x", 1, kGreeterPort);
  const ResourceObject elsewhere =
      testing::MakeObject("attacker", "greeter-eps", "endpoint", "x", {{"", Endpoints(2)}});
  for (bool one_build : {true, false}) {
    SCOPED_TRACE(absl::StrCat("one build: ", one_build));
    IncrementalBuilder builder{BuildOptions{}};
    builder.Upsert(generated);
    if (!one_build) builder.Build();
    builder.Upsert(elsewhere);
    IncrementalBuilder::Result result = builder.Build();
    EXPECT_EQ(result.snapshot->Find(ClusterLoadAssignmentType(), "x")->owner, generated.ref);
    EXPECT_TRUE(builder.StatusOf(generated.ref)->accepted);
    EXPECT_THAT(builder.StatusOf(generated.ref)->findings, IsEmpty());
    EXPECT_THAT(Messages(*builder.StatusOf(elsewhere.ref), Severity::kError),
                ElementsAre("DuplicateName: duplicate: endpoint \"x\" is already generated for "
                            "Service demo/greeter port 50051"));
  }
  // Serving the name first, it keeps it: nothing is taken from anyone.
  IncrementalBuilder builder{BuildOptions{}};
  builder.Upsert(elsewhere);
  builder.Build();
  builder.Upsert(generated);
  IncrementalBuilder::Result result = builder.Build();
  EXPECT_EQ(result.snapshot->Find(ClusterLoadAssignmentType(), "x")->owner, elsewhere.ref);
  EXPECT_FALSE(builder.StatusOf(generated.ref)->accepted);
}

TEST(IncrementalBuilderTest, OwnNamespaceXdsResourceOverridesGeneratedAndAnotherNamespaces) {
  // attacker/greeter-eps serves the name before the Service exists; then the
  // Service's generated object and demo's own XdsResource arrive: demo's
  // wins, though the other one was serving it and sorts first.
  const ResourceObject elsewhere =
      testing::MakeObject("attacker", "greeter-eps", "endpoint", "x", {{"", Endpoints(1)}});
  const ResourceObject generated = GeneratedEndpoints("endpoint/x", "x", 2, kGreeterPort);
  const ResourceObject own = Object("greeter-eps", "endpoint", "x", {{"", Endpoints(3)}});
  ASSERT_LT(elsewhere.ref, own.ref);
  IncrementalBuilder builder{BuildOptions{}};
  builder.Upsert(elsewhere);
  builder.Build();
  builder.Upsert(generated);
  builder.Upsert(own);
  IncrementalBuilder::Result result = builder.Build();
  EXPECT_EQ(result.snapshot->Find(ClusterLoadAssignmentType(), "x")->owner, own.ref);
  EXPECT_FALSE(builder.StatusOf(elsewhere.ref)->accepted);
  EXPECT_FALSE(builder.StatusOf(generated.ref)->accepted);
}

TEST(IncrementalBuilderTest, OwnNamespaceXdsResourceServingItsLastGoodRevisionKeepsTheName) {
  const ResourceObject own = Object("greeter-eps", "endpoint", "x", {{"", Endpoints(1)}});
  const ResourceObject generated = GeneratedEndpoints("endpoint/x", "x", 2, kGreeterPort);
  IncrementalBuilder builder{BuildOptions{}};
  builder.Upsert(own);
  builder.Upsert(generated);
  builder.Build();
  // A rejected edit: the XdsResource serves its last good revision, and
  // keeps the name from the generated object.
  builder.Upsert(WithResource(own, "{bogus: 1}"));
  IncrementalBuilder::Result result = builder.Build();
  auto status = builder.StatusOf(own.ref);
  EXPECT_FALSE(status->accepted);
  EXPECT_TRUE(status->serving_previous);
  EXPECT_EQ(result.snapshot->Find(ClusterLoadAssignmentType(), "x")->owner, own.ref);
  EXPECT_FALSE(builder.StatusOf(generated.ref)->accepted);
  EXPECT_THAT(Messages(*builder.StatusOf(generated.ref), Severity::kError),
              ElementsAre(HasSubstr("already declared by XdsResource demo/greeter-eps")));
}

TEST(IncrementalBuilderTest, LabelChangedAndChangedBackInOneBatchKeepsTheLabel) {
  IncrementalBuilder builder{BuildOptions{}};
  const ResourceObject object = GeneratedEndpoints("endpoint/x", "x", 1, kGreeterPort);
  builder.Upsert(object);
  builder.Build();
  ResourceObject relabelled = object;
  relabelled.generation = 7;
  relabelled.location = "elsewhere";
  relabelled.generated_from = "Service demo/other port 80";
  builder.Upsert(relabelled);
  builder.Upsert(object);
  EXPECT_FALSE(builder.has_pending());
  IncrementalBuilder::Result result = builder.Build();
  EXPECT_THAT(result.changed_statuses, IsEmpty());
  EXPECT_EQ(builder.StatusOf(object.ref)->generation, object.generation);
  EXPECT_EQ(builder.StatusOf(object.ref)->location, object.location);
  // And what the name is generated for is the original description.
  builder.Upsert(Object("greeter-eps", "endpoint", "x", {{"", Endpoints(2)}}));
  builder.Build();
  EXPECT_THAT(
      Messages(*builder.StatusOf({kXdsResourceKind, "demo", "greeter-eps"}), Severity::kWarning),
      ElementsAre(HasSubstr("also generated for Service demo/greeter port 50051;")));
}

TEST(IncrementalBuilderTest, MatchByNameOnlyIsPartOfTheSpec) {
  IncrementalBuilder builder{BuildOptions{}};
  ResourceObject endpoints = Object("eps", "endpoint", "web", {{"", "{}"}});
  endpoints.spec->variants[0].endpoints_from = EndpointsFrom{"web", "grpc", 0};
  builder.Upsert(endpoints);
  builder.Build();
  endpoints.spec->variants[0].endpoints_from->match_name_only = true;
  builder.Upsert(endpoints);
  EXPECT_TRUE(builder.has_pending());
  EXPECT_EQ(builder.Build().validated_objects, 1);
}

TEST(IncrementalBuilderTest, AuthorityChangesReadmitObjects) {
  BuildOptions options;
  options.authority_policy = BuildOptions::AuthorityPolicy::kEnforce;
  IncrementalBuilder builder(options);
  ResourceObject object = Object("e", "endpoint", "x", {{"", Endpoints(1)}});
  object.spec->authority = "a.example";
  builder.Upsert(object);
  builder.Build();
  EXPECT_FALSE(builder.StatusOf(object.ref)->accepted);
  AuthorityObject authority;
  authority.ref = {kXdsAuthorityKind, "", "a"};
  authority.authority = "a.example";
  authority.allowed_namespaces = {"demo"};
  builder.Upsert(authority);
  IncrementalBuilder::Result result = builder.Build();
  EXPECT_TRUE(builder.StatusOf(object.ref)->accepted);
  EXPECT_EQ(result.snapshot->size(), 1u);
  builder.Remove(authority.ref);
  result = builder.Build();
  EXPECT_EQ(result.snapshot->size(), 0u);
}

TEST(IncrementalBuilderTest, FreshBuilderServesTheLastGoodRevisionRecordedElsewhere) {
  std::vector<ResourceObject> world = World(2);
  // A long-running replica: saw the route valid, then an overlapping edit.
  IncrementalBuilder old_replica{BuildOptions{}};
  BuildAll(old_replica, world);
  ResourceObject overlapping = Object("s1-route", "route", "s1",
                                      {{"{env: prod}", RouteTo("s1-a")}, {"{env: prod}", RouteTo("s1-b")}});
  old_replica.Upsert(overlapping);
  IncrementalBuilder::Result old_result = old_replica.Build();
  const ObjectRef route{kXdsResourceKind, "demo", "s1-route"};
  ASSERT_TRUE(old_replica.StatusOf(route)->serving_previous);

  // A replica started now sees only the invalid revision, and the last good
  // one recorded by the other.
  IncrementalBuilder new_replica{BuildOptions{}};
  int lookups = 0;
  new_replica.SetLastGoodLookup([&](const ObjectRef& ref) -> std::optional<ResourceObject> {
    ++lookups;
    if (ref == route) return world[5];
    return std::nullopt;
  });
  ASSERT_EQ(world[5].ref, route);
  for (const auto& object : world) {
    if (!(object.ref == route)) new_replica.Upsert(object);
  }
  new_replica.Upsert(overlapping);
  IncrementalBuilder::Result new_result = new_replica.Build();
  EXPECT_TRUE(new_replica.StatusOf(route)->serving_previous);
  EXPECT_EQ(new_result.snapshot->version(), old_result.snapshot->version());
  EXPECT_EQ(lookups, 1);  // Asked only for the object that needed it.

  // Without it, the route (and whatever refers to it) would not be served.
  IncrementalBuilder bare{BuildOptions{}};
  for (const auto& object : world) {
    if (!(object.ref == route)) bare.Upsert(object);
  }
  bare.Upsert(overlapping);
  EXPECT_EQ(bare.Build().snapshot->Find(RouteConfigurationType(), "s1"), nullptr);
}

TEST(IncrementalBuilderTest, EndpointsFromIsForEndpointsAndOfflineServesNone) {
  IncrementalBuilder builder{BuildOptions{}};
  ResourceObject endpoints = Object("eps", "endpoint", "web", {{"", "{}"}});
  endpoints.spec->variants[0].resource = YAML::Node();  // Not resolved by any source.
  endpoints.spec->variants[0].endpoints_from = EndpointsFrom{"web", "grpc", 0};
  ResourceObject cluster = Object("c", "cluster", "c", {{"", EdsCluster()}});
  cluster.spec->variants[0].endpoints_from = EndpointsFrom{"web", "grpc", 0};
  builder.Upsert(endpoints);
  builder.Upsert(cluster);
  IncrementalBuilder::Result result = builder.Build();
  auto served = builder.StatusOf(endpoints.ref);
  ASSERT_NE(served, nullptr);
  EXPECT_TRUE(served->accepted);
  ASSERT_EQ(served->findings.size(), 1u);
  EXPECT_EQ(served->findings[0].reason, "EndpointsFromService");
  EXPECT_EQ(served->findings[0].severity, Severity::kWarning);
  EXPECT_NE(result.snapshot->Find(ClusterLoadAssignmentType(), "web"), nullptr);
  auto rejected = builder.StatusOf(cluster.ref);
  EXPECT_FALSE(rejected->accepted);
  EXPECT_THAT(rejected->findings[0].message, HasSubstr("use type: endpoint"));
}

// Returns the findings about references inside the resource, as text. (The
// note that an earlier revision stopped serving depends on history that a
// whole build, given only the previous snapshot, does not have.)
std::vector<std::string> ReferenceProblems(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& finding : findings) {
    if (finding.reason != "DanglingReference" || finding.field == "spec") continue;
    out.push_back(absl::StrCat(finding.reason, " ", finding.field, ": ", finding.message,
                               finding.cause ? " (caused by " + finding.cause->ToString() + ")"
                                             : ""));
  }
  return out;
}

// Random edits, deletions and invalid revisions: every incremental build
// serves what a whole build of the same objects serves, given the same
// previous snapshot.
TEST(IncrementalBuilderTest, MatchesWholeBuildsUnderRandomEdits) {
  std::mt19937 random(42);
  IncrementalBuilder builder{BuildOptions{}};
  std::vector<ResourceObject> world = World(6);
  std::map<ObjectRef, ResourceObject> live;
  for (const auto& object : world) live[object.ref] = object;
  BuildAll(builder, world);
  for (int step = 0; step < 300; ++step) {
    const ResourceObject& pick = world[random() % world.size()];
    const std::shared_ptr<const Snapshot> previous = builder.snapshot();
    switch (random() % 5) {
      case 0:
        builder.Remove(pick.ref);
        live.erase(pick.ref);
        break;
      case 1: {
        ResourceObject broken = WithResource(pick, "{bogus: 1}");
        builder.Upsert(broken);
        live[pick.ref] = broken;
        break;
      }
      case 2: {
        ResourceObject changed = pick;
        if (changed.spec->type == "route") {
          changed = WithResource(pick, RouteTo("s" + std::to_string(random() % 8) + "-a"));
        } else if (changed.spec->type == "endpoint") {
          changed = WithResource(pick, Endpoints(static_cast<int>(random() % 5)));
        }
        builder.Upsert(changed);
        live[pick.ref] = changed;
        break;
      }
      default:
        builder.Upsert(pick);
        live[pick.ref] = pick;
        break;
    }
    IncrementalBuilder::Result result = builder.Build();
    std::vector<ResourceObject> objects;
    for (const auto& [ref, object] : live) objects.push_back(object);
    BuildResult whole = BuildSnapshot(objects, {}, previous.get(), BuildOptions{});
    if (result.snapshot->version() != whole.snapshot->version()) {
      for (const ResourceType* type : AllResourceTypes()) {
        for (const auto& [name, r] : result.snapshot->resources(*type)) {
          if (!whole.snapshot->Find(*type, name)) ADD_FAILURE() << "only incremental: " << name;
          else if (whole.snapshot->Find(*type, name)->variants[0]->version != r->variants[0]->version) ADD_FAILURE() << "differs: " << name << " owner " << r->owner.name << " vs " << whole.snapshot->Find(*type, name)->owner.name;
        }
        for (const auto& [name, r] : whole.snapshot->resources(*type)) {
          if (!result.snapshot->Find(*type, name)) ADD_FAILURE() << "only whole: " << name;
        }
      }
    }
    ASSERT_EQ(result.snapshot->version(), whole.snapshot->version()) << "step " << step;
    for (const ObjectStatus& status : whole.statuses) {
      auto mine = builder.StatusOf(status.ref);
      ASSERT_NE(mine, nullptr);
      EXPECT_EQ(mine->accepted, status.accepted) << status.ref.ToString() << " step " << step;
      EXPECT_EQ(mine->serving_previous, status.serving_previous)
          << status.ref.ToString() << " step " << step;
      EXPECT_EQ(ReferenceProblems(mine->findings), ReferenceProblems(status.findings))
          << status.ref.ToString() << " step " << step;
    }
  }
}

}  // namespace
}  // namespace facet::xds
