// Hostile clients against the real processes. A hostile xDS client: `facet serve` and a
// `facet relay` in front of it. Its node id and NACK error detail carry a
// forged log line, terminal escapes, a right-to-left override and a C1
// control (invalid UTF-8 cannot reach the server: gRPC refuses to parse a
// proto3 string carrying it), and the detail is 4 MB and cut inside a
// character: each log line stays one line, and /status
// stays valid JSON (it used to show the raw bytes, and a detail cut in the
// middle of a character is not valid UTF-8).
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "test/ads_client/ads_test_client.h"
#include "test/e2e/e2e_harness.h"
#include "test/http_attack/http_attack.h"
#include "xds_server/common/status_matchers.h"

namespace facet::testing {
namespace {

using ::facet::e2e::E2eHarness;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr absl::Duration kWait = absl::Seconds(30);
const std::string kRds(kRouteConfigurationTypeUrl);
const std::string kForged = "\n[error] forged\r\x1b[2J\xE2\x80\xAE\xC2\x85";

class HostileClientE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<E2eHarness>> harness = E2eHarness::Create();
    ASSERT_THAT(harness, IsOk());
    harness_ = *std::move(harness);
  }

  void TearDown() override {
    if (harness_ != nullptr && HasFailure()) {
      harness_->KeepTempDir();
      std::cerr << "e2e: kept " << harness_->dir() << "\n" << harness_->ServerLogs() << "\n";
    }
  }

  // Subscribes to the route as a client named "client" + kForged and NACKs
  // it with a 4 MB detail whose cut (at 4,096 bytes) falls inside a
  // two-byte character; waits until server `name` counted the NACK.
  void AttackAndNack(const std::string& name, const std::string& xds_address) {
    auto client = AdsTestClient::Connect(xds_address);
    ASSERT_THAT(client, IsOk());
    auto stream = (*client)->OpenSotw();
    ASSERT_THAT(stream, IsOk());
    DiscoveryRequest request = MakeRequest(kRds, {"greeter"});
    *request.mutable_node() = MakeNode("client" + kForged, {{"env", "prod"}});
    ASSERT_THAT((*stream)->Send(request), IsOk());
    // The relay may answer before its upstream does (an empty response):
    // NACK the one that carries the route.
    auto response = (*stream)->Next(kWait);
    ASSERT_THAT(response, IsOk());
    while (response->resources_size() == 0) {
      response = (*stream)->Next(kWait);
      ASSERT_THAT(response, IsOk());
    }
    std::string detail = "bad" + kForged;
    detail.resize(4095, 'x');
    while (detail.size() < 4000000) detail += "\xC3\xBC";  // U+00FC, two bytes.
    ASSERT_THAT((*stream)->Send(Nack(*response, MakeRequest(kRds, {"greeter"}), "", detail)),
                IsOk());
    const absl::Time deadline = absl::Now() + kWait;
    while (true) {
      absl::StatusOr<double> nacks = harness_->Metric(name, "facet_xds_nacks_total");
      if (nacks.ok() && *nacks >= 1) break;
      ASSERT_LT(absl::Now(), deadline) << "no NACK counted by " << name;
      absl::SleepFor(absl::Milliseconds(20));
    }
    stream->reset();
  }

  // Checks that `name`'s /status is valid JSON naming the escaped client.
  void ExpectStatusIsValidJson(const std::string& name) {
    absl::StatusOr<std::string> body = harness_->AdminGet(name, "/status");
    ASSERT_THAT(body, IsOk());
    google::protobuf::Struct parsed;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*body, &parsed).ok()) << *body;
    EXPECT_THAT(*body, HasSubstr(R"(client\\n[error] forged\\r\\x1b[2J\\u202e\\u0085)"));
    EXPECT_THAT(*body, HasSubstr(R"(bad\\n[error] forged)"));
  }

  // Checks that no line of `name`'s log was started by the client.
  void ExpectNoForgedLine(const std::string& name) {
    const std::string log = harness_->LogOf(name);
    EXPECT_THAT(log, HasSubstr("client\\n[error] forged\\r\\x1b[2J\\u202e\\u0085"));
    for (absl::string_view line : absl::StrSplit(log, '\n')) {
      EXPECT_THAT(std::string(line), Not(StartsWith("[error] forged"))) << name;
      EXPECT_THAT(std::string(line), Not(HasSubstr("\x1b"))) << name;
      EXPECT_THAT(std::string(line), Not(HasSubstr("\xE2\x80\xAE"))) << name;
    }
  }

  // Starts the backends, `facet serve` on the greeter manifest, and a relay
  // named "relay" in front of it.
  void StartFacetAndRelay() {
    ASSERT_THAT(harness_->StartBackends({"prod", "test"}), IsOk());
    ASSERT_THAT(harness_->WriteManifest("greeter.yaml.tmpl", "greeter.yaml"), IsOk());
    ASSERT_THAT(harness_->StartFacet(), IsOk());
    e2e::RelayConfigOptions relay;
    relay.servers = {harness_->xds_address()};
    ASSERT_THAT(harness_->StartRelay("relay", relay), IsOk());
  }

  std::unique_ptr<E2eHarness> harness_;
};

TEST_F(HostileClientE2eTest, ForgedStringsStayOneLogLineAndStatusStaysValidJson) {
  ASSERT_NO_FATAL_FAILURE(StartFacetAndRelay());

  AttackAndNack(E2eHarness::kFacet, harness_->xds_address());
  ExpectStatusIsValidJson(E2eHarness::kFacet);
  ExpectNoForgedLine(E2eHarness::kFacet);

  AttackAndNack("relay", harness_->XdsAddressOf("relay"));
  ExpectStatusIsValidJson("relay");
  ExpectNoForgedLine("relay");

  EXPECT_THAT(harness_->Stop("relay"), IsOk());
  EXPECT_THAT(harness_->StopFacet(), IsOk());
}

// The kubelet's probe times out after 1 s: /healthz on every serving
// command's admin port answers within it beside 100 idle and 100 slowloris
// connections (before the admin port had its own HTTP server, 10 idle
// connections delayed it 3-5 s and 100 past 30 s), and the head deadline
// closes the slow ones.
TEST_F(HostileClientE2eTest, ProbesAnswerWithinASecondBesideIdleAndSlowPeersOnEveryAdminPort) {
  ASSERT_NO_FATAL_FAILURE(StartFacetAndRelay());

  for (const std::string name : {std::string(E2eHarness::kFacet), std::string("relay")}) {
    const std::string& address = harness_->AdminAddressOf(name);
    int port = 0;
    ASSERT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port)) << address;
    HostileConnections idle(port, 100, HostileConnections::Kind::kIdle);
    HostileConnections slow(port, 100, HostileConnections::Kind::kSlowHead);
    ASSERT_EQ(idle.opened() + slow.opened(), 200) << name;
    for (int probe = 0; probe < 5; ++probe) {
      absl::StatusOr<std::string> answer =
          Exchange(port, /*tls=*/false, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                   /*deadline=*/absl::Seconds(1));
      ASSERT_THAT(answer, IsOk()) << name << " probe " << probe;
      EXPECT_THAT(*answer, StartsWith("HTTP/1.1 200")) << name;
    }
    // The head deadline (5 s) closes the slowloris connections.
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (slow.Closed() < 100 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(100));
    EXPECT_EQ(slow.Closed(), 100) << name;
  }

  EXPECT_THAT(harness_->Stop("relay"), IsOk());
  EXPECT_THAT(harness_->StopFacet(), IsOk());
}

}  // namespace
}  // namespace facet::testing
