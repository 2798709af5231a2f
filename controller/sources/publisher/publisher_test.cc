#include "controller/sources/publisher/publisher.h"

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/objects/object_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/support/log_capture.h"

namespace facet::controller {
namespace {

using ::facet::testing::LogCapture;
using ::testing::HasSubstr;
using ::testing::Not;

// The endpoint object "web" in demo at `generation`, served at `port`, or
// with `variants` as written.
xds::ResourceObject Endpoints(int port, int64_t generation = 1, const std::string& variants = "") {
  const std::string yaml = absl::StrCat(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: web-endpoints, "
      "namespace: demo, generation: ",
      generation, "}, spec: {type: endpoint, name: web, variants: ",
      variants.empty()
          ? absl::StrCat("[{resource: {endpoints: [{lb_endpoints: [{endpoint: {address: "
                         "{socket_address: {address: 10.0.0.1, port_value: ",
                         port, "}}}}]}]}}]")
          : variants,
      "}}");
  ParsedDocument parsed = ParseDocument(YAML::Load(yaml), "test.yaml:1", kDefaultNamespace);
  return std::get<xds::ResourceObject>(std::move(parsed));
}

// The endpoint object "web" with a resource that is not a
// ClusterLoadAssignment (an unknown field): rejected.
xds::ResourceObject InvalidEndpoints(int64_t generation) {
  return Endpoints(0, generation, "[{resource: {bogus: 1}}]");
}

class PublisherTest : public ::testing::Test {
 protected:
  Publisher& Make(Publisher::Options options = {}) {
    options.now = [this] { return now_; };
    options.on_published = [this](const PublishTiming& timing) { timings_.push_back(timing); };
    publisher_ = std::make_unique<Publisher>(store_, std::move(options));
    return *publisher_;
  }

  xds::SnapshotStore store_;
  absl::Time now_ = absl::FromUnixSeconds(1'000'000);
  std::vector<PublishTiming> timings_;
  std::unique_ptr<Publisher> publisher_;
};

TEST_F(PublisherTest, PublishesTheFirstBuildThenOnlyWhatChangesWhatIsServed) {
  Publisher& publisher = Make();
  const auto empty = store_.Current();
  Publisher::Outcome first = publisher.BuildAndPublish(now_);
  EXPECT_TRUE(first.built);
  EXPECT_TRUE(first.published);  // Even with nothing to serve: the source is ready.
  EXPECT_NE(store_.Current(), empty);

  EXPECT_FALSE(publisher.BuildAndPublish(now_).built);  // Nothing pending.

  publisher.builder().Upsert(Endpoints(80));
  Publisher::Outcome added = publisher.BuildAndPublish(now_);
  EXPECT_TRUE(added.published);
  EXPECT_TRUE(added.statuses_changed());
  EXPECT_NE(store_.Current()->Find(xds::ClusterLoadAssignmentType(), "web"), nullptr);
  EXPECT_EQ(publisher.published(), store_.Current());

  // A rejected new generation changes a status, not what is served.
  const auto served = store_.Current();
  publisher.builder().Upsert(InvalidEndpoints(/*generation=*/2));
  Publisher::Outcome rejected = publisher.BuildAndPublish(now_);
  EXPECT_TRUE(rejected.built);
  EXPECT_FALSE(rejected.published);
  EXPECT_TRUE(rejected.statuses_changed());
  EXPECT_EQ(store_.Current(), served);

  const PublishStats stats = publisher.stats();
  EXPECT_EQ(stats.builds, 3);
  EXPECT_EQ(stats.published, 2);
  EXPECT_EQ(stats.validated_objects, 2);
  EXPECT_EQ(stats.rejected_objects, 1);
  ASSERT_EQ(publisher.statuses().size(), 1u);
  EXPECT_FALSE(publisher.statuses()[0]->accepted);
  EXPECT_TRUE(publisher.statuses()[0]->serving_previous);
}

TEST_F(PublisherTest, ReportsTheTimeFromTheFirstChangeToThePublication) {
  Publisher& publisher = Make();
  const absl::Time changed_at = now_;
  now_ += absl::Milliseconds(1500);  // Batching, reading, parsing.
  publisher.BuildAndPublish(changed_at);
  ASSERT_EQ(timings_.size(), 1u);
  EXPECT_EQ(timings_[0].since_change, absl::Milliseconds(1500));
  EXPECT_EQ(timings_[0].build, absl::ZeroDuration());  // The clock stood still meanwhile.

  // A build that publishes nothing reports nothing.
  publisher.builder().Upsert(InvalidEndpoints(/*generation=*/1));
  EXPECT_FALSE(publisher.BuildAndPublish(now_).published);
  EXPECT_EQ(timings_.size(), 1u);
}

TEST_F(PublisherTest, ReportsRejectionsWithTheTimeTheyBeganUntilAcceptedAgain) {
  std::vector<ReportEvent> reports;
  Publisher::Options options;
  options.on_report = [&](const ReportEvent& report) { reports.push_back(report); };
  Publisher& publisher = Make(std::move(options));
  const xds::ObjectRef ref = Endpoints(80).ref;
  publisher.builder().Upsert(Endpoints(80));
  publisher.BuildAndPublish(now_);
  EXPECT_TRUE(reports.empty());  // Accepted from the start: nothing to report.

  now_ += absl::Seconds(10);
  const absl::Time began = now_;
  publisher.builder().Upsert(InvalidEndpoints(/*generation=*/2));
  publisher.BuildAndPublish(now_);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kind, ReportEvent::Kind::kRejected);
  EXPECT_EQ(reports[0].subject, "demo/web-endpoints");
  EXPECT_THAT(reports[0].reason, HasSubstr("bogus"));
  EXPECT_TRUE(reports[0].serving_previous);
  EXPECT_EQ(reports[0].since, began);
  EXPECT_EQ(publisher.rejected_since().at(ref), began);

  // Rejected again for the same reason: no news, and the rejection began
  // when it did.
  now_ += absl::Seconds(10);
  publisher.builder().Upsert(InvalidEndpoints(/*generation=*/3));
  publisher.BuildAndPublish(now_);
  EXPECT_EQ(reports.size(), 1u);
  EXPECT_EQ(publisher.rejected_since().at(ref), began);

  // Rejected for another reason: reported, still since it began.
  now_ += absl::Seconds(10);
  publisher.builder().Upsert(Endpoints(0, /*generation=*/4, "[{resource: {unknown_too: 1}}]"));
  publisher.BuildAndPublish(now_);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_THAT(reports[1].reason, HasSubstr("unknown_too"));
  EXPECT_EQ(reports[1].since, began);

  publisher.builder().Upsert(Endpoints(81, /*generation=*/5));
  publisher.BuildAndPublish(now_);
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[2].kind, ReportEvent::Kind::kAccepted);
  EXPECT_EQ(reports[2].subject, "demo/web-endpoints");
  EXPECT_TRUE(publisher.rejected_since().empty());

  // A rejection that begins again begins anew.
  now_ += absl::Seconds(10);
  publisher.builder().Upsert(InvalidEndpoints(/*generation=*/6));
  publisher.BuildAndPublish(now_);
  ASSERT_EQ(reports.size(), 4u);
  EXPECT_EQ(reports[3].since, now_);
}

TEST_F(PublisherTest, ReportsAFileThatStopsParsingAndParsesAgain) {
  std::vector<ReportEvent> reports;
  Publisher::Options options;
  options.on_report = [&](const ReportEvent& report) { reports.push_back(report); };
  Publisher& publisher = Make(std::move(options));
  publisher.ReportFile("/m/a.yaml", "3:7: did not find expected key");
  publisher.ReportFile("/m/a.yaml", "");
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].kind, ReportEvent::Kind::kUnparsed);
  EXPECT_EQ(reports[0].subject, "/m/a.yaml");
  EXPECT_EQ(reports[0].reason, "3:7: did not find expected key");
  EXPECT_EQ(reports[1].kind, ReportEvent::Kind::kParsed);
}

TEST_F(PublisherTest, AReviewDiscardsABuildAndTheRebuildIsWhatIsPublished) {
  Publisher& publisher = Make();
  publisher.builder().Upsert(Endpoints(80));
  publisher.BuildAndPublish(now_);
  const auto served = store_.Current();

  publisher.builder().Remove(Endpoints(80).ref);
  int reviews = 0;
  Publisher::Outcome outcome =
      publisher.BuildAndPublish(now_, [&](const xds::IncrementalBuilder::Result& result) {
        ++reviews;
        EXPECT_EQ(result.removed_statuses.size(), 1u);
        // The status before this build is still the one reported.
        EXPECT_NE(publisher.ReportedStatus(Endpoints(80).ref), nullptr);
        publisher.builder().Upsert(Endpoints(80));  // Undone.
        return true;
      });
  EXPECT_EQ(reviews, 1);
  EXPECT_FALSE(outcome.published);
  EXPECT_EQ(store_.Current(), served);
  EXPECT_NE(publisher.ReportedStatus(Endpoints(80).ref), nullptr);
}

TEST_F(PublisherTest, LogsFindingsAtTheirSeverityWithAuthorsTextEscaped) {
  Publisher& publisher = Make();
  publisher.builder().Upsert(Endpoints(80));
  publisher.BuildAndPublish(now_);
  LogCapture log;
  // An error in a field whose name the author chose, and a warning quoting
  // a Service name the author chose.
  xds::ResourceObject hostile =
      Endpoints(0, /*generation=*/2, "[{resource: {\"bad\\n[error] forged\": 1}}]");
  publisher.builder().Upsert(std::move(hostile));
  xds::ResourceObject warned = Endpoints(
      0, /*generation=*/1, "[{endpointsFrom: {service: \"svc\\n[warning] forged\", port: grpc}}]");
  warned.ref.name = "other-endpoints";
  warned.spec->name = "other";
  publisher.builder().Upsert(std::move(warned));
  publisher.BuildAndPublish(now_);

  const std::string text = log.text();
  EXPECT_THAT(text, HasSubstr("[error] demo/web-endpoints: "));
  EXPECT_THAT(text, HasSubstr("bad\\n[error] forged"));
  EXPECT_THAT(text, HasSubstr("[warning] demo/other-endpoints: "));
  EXPECT_THAT(text, HasSubstr(": warning: "));
  EXPECT_THAT(text, HasSubstr("svc\\n[warning] forged"));
  EXPECT_THAT(text, HasSubstr("demo/web-endpoints: rejected; its previous revision keeps serving"));
  EXPECT_THAT(text, Not(HasSubstr("\n[error] forged")));
  EXPECT_THAT(text, Not(HasSubstr("\n[warning] forged")));
  EXPECT_THAT(text, HasSubstr("snapshot built in "));
}

TEST_F(PublisherTest, LogsAFindingOfTheWholeObjectWithoutAnEmptyField) {
  Publisher& publisher = Make();
  xds::ResourceObject object = Endpoints(80);
  object.findings.push_back({.severity = xds::Severity::kWarning,
                             .reason = "NoEndpoints",
                             .field = "",
                             .message = "Service web has no ready endpoints"});
  publisher.builder().Upsert(std::move(object));
  LogCapture log;
  publisher.BuildAndPublish(now_);

  EXPECT_THAT(log.text(), HasSubstr("demo/web-endpoints: warning: Service web has no ready endpoints"));
  EXPECT_THAT(log.text(), Not(HasSubstr(": : ")));
}

}  // namespace
}  // namespace facet::controller
