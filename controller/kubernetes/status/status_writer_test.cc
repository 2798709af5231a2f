#include "controller/kubernetes/status/status_writer.h"

#include "absl/strings/str_cat.h"

#include "controller/kubernetes/client/yaml_fields.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_client.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller {
namespace {

using ::facet::testing::FakeClock;
using ::facet::testing::FakeKubeClient;
using ::facet::testing::IsOk;
using ::facet::testing::IsOkAndHolds;
using ::testing::HasSubstr;

constexpr char kResources[] = "/apis/facet.dev/v1alpha1/xdsresources";

xds::ObjectStatus Accepted() {
  xds::ObjectStatus status;
  status.ref = {xds::kXdsResourceKind, "demo", "route"};
  status.generation = 1;
  status.served_name = "greeter";
  status.accepted = true;
  auto variant = std::make_shared<xds::Variant>();
  variant->label = "prod";
  variant->version = "v-prod";
  status.variants.push_back(variant);
  return status;
}

class StatusWriterTest : public ::testing::Test {
 protected:
  StatusWriterTest() : writer_(client_, [this] { return clock_.Now(); }) {
    client_.Put(kResources, YAML::Load("{apiVersion: facet.dev/v1alpha1, kind: XdsResource, "
                                       "metadata: {name: route, namespace: demo}, spec: {}}"));
  }
  YAML::Node Stored() { return client_.Objects(kResources)["demo/route"]; }
  std::string ConditionField(const std::string& type, const std::string& field) {
    for (const YAML::Node& c : kube::FieldAt(Stored(), {"status", "conditions"})) {
      if (kube::StringAt(c, {"type"}) == type) return kube::StringAt(c, {field});
    }
    return "<missing>";
  }

  FakeKubeClient client_;
  FakeClock clock_;
  StatusWriter writer_;
};

TEST_F(StatusWriterTest, WritesConditionsAndFeedbackOnceThenNothing) {
  ClientFeedback feedback;
  feedback.clients[{"type.googleapis.com/envoy.config.route.v3.RouteConfiguration", "greeter", "v-prod"}] = 3;
  feedback.nacks[{"t", "greeter", "v-prod"}].push_back({"t", "greeter", "v-prod", "prod", "client-7", "bad route", 1});
  EXPECT_THAT(writer_.Sync(Accepted(), feedback), IsOkAndHolds(true));
  EXPECT_EQ(kube::StringAt(Stored(), {"status", "observedGeneration"}), "1");
  EXPECT_EQ(kube::StringAt(Stored(), {"status", "servedName"}), "greeter");
  EXPECT_EQ(ConditionField("Accepted", "status"), "True");
  EXPECT_EQ(ConditionField("ResolvedRefs", "status"), "True");
  EXPECT_EQ(ConditionField("Programmed", "status"), "True");
  YAML::Node variant = kube::FieldAt(Stored(), {"status", "variants"})[0];
  EXPECT_EQ(kube::StringAt(variant, {"clients"}), "3");
  EXPECT_EQ(kube::StringAt(variant["nacks"][0], {"detail"}), "bad route");
  // Nothing changed: no write, even later.
  const std::string rv = client_.resource_version();
  clock_.Advance(absl::Minutes(5));
  EXPECT_THAT(writer_.Sync(Accepted(), feedback), IsOkAndHolds(false));
  EXPECT_EQ(client_.resource_version(), rv);
}

TEST_F(StatusWriterTest, RejectionSetsReasonsAndKeepsTransitionTimesOfUnchangedConditions) {
  ASSERT_THAT(writer_.Sync(Accepted(), {}), IsOkAndHolds(true));
  const std::string accepted_since = ConditionField("Accepted", "lastTransitionTime");
  clock_.Advance(absl::Hours(1));
  xds::ObjectStatus rejected = Accepted();
  rejected.generation = 2;
  rejected.accepted = false;
  rejected.serving_previous = true;
  rejected.variants.clear();
  rejected.findings.push_back({xds::Severity::kError, "OverlappingVariants", "spec.variants[1]", "variants overlap"});
  ASSERT_THAT(writer_.Sync(rejected, {}), IsOkAndHolds(true));
  EXPECT_EQ(ConditionField("Accepted", "status"), "False");
  EXPECT_EQ(ConditionField("Accepted", "reason"), "OverlappingVariants");
  EXPECT_THAT(ConditionField("Accepted", "message"), HasSubstr("spec.variants[1]: variants overlap"));
  EXPECT_EQ(ConditionField("Accepted", "observedGeneration"), "2");
  EXPECT_NE(ConditionField("Accepted", "lastTransitionTime"), accepted_since);
  EXPECT_EQ(ConditionField("ResolvedRefs", "status"), "Unknown");
  EXPECT_EQ(ConditionField("Programmed", "reason"), "ServingPreviousRevision");
  // Fixed again: Accepted flips back (new time); Programmed too.
  clock_.Advance(absl::Hours(1));
  const std::string rejected_since = ConditionField("Accepted", "lastTransitionTime");
  xds::ObjectStatus fixed = Accepted();
  fixed.generation = 3;
  ASSERT_THAT(writer_.Sync(fixed, {}), IsOkAndHolds(true));
  EXPECT_EQ(ConditionField("Accepted", "status"), "True");
  EXPECT_NE(ConditionField("Accepted", "lastTransitionTime"), rejected_since);
}

TEST_F(StatusWriterTest, DanglingReferencesAreResolvedRefsFalse) {
  xds::ObjectStatus status = Accepted();
  status.accepted = false;
  status.variants.clear();
  status.findings.push_back({xds::Severity::kError, "DanglingReference", "spec.variants[0].resource.x", "cluster \"c\" is not served"});
  status.findings.push_back({xds::Severity::kWarning, "VariantGap", "spec.variants", "gap: no variant matches {}"});
  ASSERT_THAT(writer_.Sync(status, {}), IsOkAndHolds(true));
  EXPECT_EQ(ConditionField("Accepted", "status"), "True");
  EXPECT_EQ(ConditionField("ResolvedRefs", "status"), "False");
  EXPECT_EQ(ConditionField("ResolvedRefs", "reason"), "DanglingReference");
  EXPECT_EQ(ConditionField("Programmed", "reason"), "NotServing");
  EXPECT_THAT(kube::StringAt(kube::FieldAt(Stored(), {"status", "warnings"})[0], {}), HasSubstr("gap"));
}

TEST_F(StatusWriterTest, StatusWritesNeverBumpGenerationAndGoneObjectsAreSkipped) {
  ASSERT_THAT(writer_.Sync(Accepted(), {}), IsOkAndHolds(true));
  EXPECT_EQ(kube::StringAt(Stored(), {"metadata", "generation"}), "1");
  client_.Delete(kResources, "demo", "route");
  EXPECT_THAT(writer_.Sync(Accepted(), {}), IsOkAndHolds(false));
}

// The fake, counting GETs and (with `conflict_once`) changing the object
// between the writer's GET and its first PUT.
class ProbingClient final : public kube::KubeClient {
 public:
  ProbingClient(FakeKubeClient& inner, bool conflict_once)
      : inner_(inner), conflict_once_(conflict_once) {}
  absl::StatusOr<kube::ListResult> List(const std::string& p, const kube::ListOptions& o) override { return inner_.List(p, o); }
  absl::StatusOr<std::unique_ptr<kube::WatchHandle>> Watch(const std::string& p, const kube::WatchOptions& o,
                                                           std::function<void(kube::WatchEvent)> e,
                                                           std::function<void(absl::Status)> d) override {
    return inner_.Watch(p, o, std::move(e), std::move(d));
  }
  absl::StatusOr<YAML::Node> Get(const std::string& p) override {
    ++gets;
    return inner_.Get(p);
  }
  absl::StatusOr<YAML::Node> Create(const std::string& p, const std::string& j) override { return inner_.Create(p, j); }
  absl::StatusOr<YAML::Node> Update(const std::string& p, const std::string& j) override {
    if (conflict_once_ && updates_++ == 0) {
      YAML::Node object = YAML::Clone(inner_.Objects(kResources)["demo/route"]);
      object["metadata"]["labels"]["touched"] = "yes";
      inner_.Put(kResources, object);
    }
    return inner_.Update(p, j);
  }
  absl::Status Delete(const std::string& p) override { return inner_.Delete(p); }
  int gets = 0;
  int updates_ = 0;

 private:
  FakeKubeClient& inner_;
  const bool conflict_once_;
};

TEST_F(StatusWriterTest, ComparesWithTheCachedObjectAndReadsOnlyAfterAConflict) {
  ProbingClient client(client_, /*conflict_once=*/false);
  StatusWriter writer(client, [this] { return clock_.Now(); });
  YAML::Node cached = YAML::Clone(Stored());
  EXPECT_THAT(writer.Sync(Accepted(), {}, 0, &cached), IsOkAndHolds(true));
  EXPECT_EQ(client.gets, 0);
  // Unchanged against the cache: no request at all.
  cached = YAML::Clone(Stored());
  EXPECT_THAT(writer.Sync(Accepted(), {}, 0, &cached), IsOkAndHolds(false));
  EXPECT_EQ(client.gets, 0);
  // A stale cache (older resourceVersion) conflicts once, then re-reads.
  YAML::Node stale = YAML::Clone(Stored());
  xds::ObjectStatus rejected = Accepted();
  rejected.accepted = false;
  rejected.findings.push_back({xds::Severity::kError, "InvalidResource", "spec", "bad"});
  client_.Put(kResources, YAML::Clone(Stored()));  // Bumps the resourceVersion.
  EXPECT_THAT(writer.Sync(rejected, {}, 0, &stale), IsOkAndHolds(true));
  EXPECT_EQ(client.gets, 1);
}

TEST_F(StatusWriterTest, BoundsVariantAndNackListsAndSaysWhatItLeftOut) {
  xds::ObjectStatus status = Accepted();
  ClientFeedback feedback;
  for (int i = 0; i < 300; ++i) {
    auto variant = std::make_shared<xds::Variant>();
    variant->label = absl::StrCat("v", i);
    variant->version = absl::StrCat("version-", i);
    status.variants.push_back(variant);
    feedback.nacks[{"t", "greeter", variant->version}].push_back(
        {"t", "greeter", variant->version, variant->label, "client", std::string(10000, 'x'), 1});
  }
  YAML::Node desired = DesiredStatus(status, YAML::Node(), feedback, 0, absl::Now());
  EXPECT_EQ(desired["variants"].size(), 256u);
  EXPECT_EQ(desired["variantsOmitted"].as<int>(), 301 - 256);
  size_t nacks = 0;
  for (const YAML::Node& v : desired["variants"]) {
    if (v["nacks"]) {
      nacks += v["nacks"].size();
      EXPECT_LE(v["nacks"][0]["detail"].as<std::string>().size(), 4096u);
    }
  }
  EXPECT_EQ(nacks, 32u);
  EXPECT_EQ(desired["nacksOmitted"].as<int>(), 300 - 32);  // Listed variants' and the rest's.
}

TEST_F(StatusWriterTest, CompiledVariantsListTheConditionalElementsTheyInclude) {
  xds::CompiledResource compiled = xds::CompileConditions(
      YAML::Load("{routes: [{'@when': {env: prod}, name: a}, {'@when': {version: v1}, name: b}]}"),
      0, "routes");
  ASSERT_EQ(compiled.variants.size(), 4u);
  xds::ObjectStatus status = Accepted();
  status.variants.clear();
  for (const xds::CompiledVariant& compiled_variant : compiled.variants) {
    auto variant = std::make_shared<xds::Variant>();
    variant->label = compiled_variant.label;
    variant->version = compiled_variant.label;
    variant->origin = compiled.origin;
    variant->included = compiled_variant.included;
    status.variants.push_back(variant);
  }
  YAML::Node desired = DesiredStatus(status, YAML::Node(), ClientFeedback(), 0, absl::Now());
  ASSERT_EQ(desired["variants"].size(), 4u);
  EXPECT_EQ(desired["variants"][0]["name"].as<std::string>(), "routes/0");
  EXPECT_TRUE(desired["variants"][0]["includes"].IsSequence());
  EXPECT_EQ(desired["variants"][0]["includes"].size(), 0u);
  ASSERT_EQ(desired["variants"][3]["includes"].size(), 2u);
  EXPECT_EQ(desired["variants"][3]["includes"][0].as<std::string>(), "routes[0]");
  EXPECT_EQ(desired["variants"][3]["includes"][1].as<std::string>(), "routes[1]");
  EXPECT_FALSE(desired["variants"][3]["includesOmitted"]);
  // A written variant lists nothing.
  EXPECT_FALSE(DesiredStatus(Accepted(), YAML::Node(), ClientFeedback(), 0,
                             absl::Now())["variants"][0]["includes"]);
}

TEST_F(StatusWriterTest, RetriesConflicts) {
  ProbingClient client(client_, /*conflict_once=*/true);
  StatusWriter writer(client, [this] { return clock_.Now(); });
  EXPECT_THAT(writer.Sync(Accepted(), {}), IsOkAndHolds(true));
  EXPECT_EQ(client.updates_, 2);
  EXPECT_EQ(ConditionField("Accepted", "status"), "True");
}

}  // namespace
}  // namespace facet::controller
