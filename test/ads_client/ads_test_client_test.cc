// Checks AdsTestClient against a scripted in-process ADS server, so that a
// failure of an end-to-end test points at Facet, not at its test client.
#include "test/ads_client/ads_test_client.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::testing {
namespace {

using ::envoy::config::cluster::v3::Cluster;
using ::envoy::config::listener::v3::Listener;
using ::envoy::service::discovery::v3::AggregatedDiscoveryService;
using ::envoy::service::discovery::v3::Resource;
using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Answers every SotW subscription with one Listener per resource name
// (unwrapped) and one per locator (wrapped, constraint env=<the locator's
// env>), then a Cluster response; ends the stream with PERMISSION_DENIED when
// asked for type "end". Answers every delta subscription with one wrapped
// Cluster per name. Records every request.
class ScriptedAdsService : public AggregatedDiscoveryService::Service {
 public:
  grpc::Status StreamAggregatedResources(
      grpc::ServerContext* /*context*/,
      grpc::ServerReaderWriter<DiscoveryResponse, DiscoveryRequest>* stream) override {
    DiscoveryRequest request;
    int nonce = 0;
    while (stream->Read(&request)) {
      Record(request);
      if (request.type_url() == "end") return grpc::Status(grpc::PERMISSION_DENIED, "bye");
      if (!request.response_nonce().empty()) continue;  // ACK or NACK.
      DiscoveryResponse listeners;
      listeners.set_type_url(std::string(kListenerTypeUrl));
      listeners.set_version_info("1");
      listeners.set_nonce(absl::StrCat(++nonce));
      for (const std::string& name : request.resource_names()) {
        Listener listener;
        listener.set_name(name);
        listeners.add_resources()->PackFrom(listener);
      }
      for (const auto& locator : request.resource_locators()) {
        Resource wrapper;
        wrapper.set_version("v-wrapped");
        wrapper.mutable_resource_name()->set_name(locator.name());
        auto* constraint = wrapper.mutable_resource_name()
                               ->mutable_dynamic_parameter_constraints()
                               ->mutable_constraint();
        constraint->set_key("env");
        constraint->set_value(locator.dynamic_parameters().at("env"));
        Listener listener;
        listener.set_name(locator.name());
        wrapper.mutable_resource()->PackFrom(listener);
        listeners.add_resources()->PackFrom(wrapper);
      }
      DiscoveryResponse clusters;
      clusters.set_type_url(std::string(kClusterTypeUrl));
      clusters.set_nonce(absl::StrCat(++nonce));
      Cluster cluster;
      cluster.set_name("some-cluster");
      clusters.add_resources()->PackFrom(cluster);
      stream->Write(listeners);
      stream->Write(clusters);
    }
    return grpc::Status::OK;
  }

  grpc::Status DeltaAggregatedResources(
      grpc::ServerContext* /*context*/,
      grpc::ServerReaderWriter<DeltaDiscoveryResponse, DeltaDiscoveryRequest>* stream) override {
    DeltaDiscoveryRequest request;
    while (stream->Read(&request)) {
      Record(request);
      if (!request.response_nonce().empty()) continue;
      DeltaDiscoveryResponse response;
      response.set_type_url(request.type_url());
      response.set_nonce("d1");
      for (const std::string& name : request.resource_names_subscribe()) {
        Resource* resource = response.add_resources();
        resource->set_name(name);
        resource->set_version("7");
        Cluster cluster;
        cluster.set_name(name);
        resource->mutable_resource()->PackFrom(cluster);
      }
      for (const std::string& name : request.resource_names_unsubscribe()) {
        response.add_removed_resources(name);
      }
      stream->Write(response);
    }
    return grpc::Status::OK;
  }

  std::vector<std::string> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

 private:
  template <typename Request>
  void Record(const Request& request) {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request.ShortDebugString());
  }

  absl::Mutex mu_;
  std::vector<std::string> requests_ ABSL_GUARDED_BY(mu_);
};

class AdsTestClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    absl::StatusOr<std::unique_ptr<AdsTestClient>> client =
        AdsTestClient::Connect(absl::StrCat("127.0.0.1:", port));
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
  }

  void TearDown() override {
    client_.reset();
    if (server_ != nullptr) server_->Shutdown();
  }

  ScriptedAdsService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<AdsTestClient> client_;
};

TEST_F(AdsTestClientTest, SotwRoundTripDecodesPlainAndWrappedResources) {
  absl::StatusOr<std::unique_ptr<SotwStream>> stream = client_->OpenSotw();
  ASSERT_THAT(stream, IsOk());
  DiscoveryRequest subscription =
      MakeRequest(kListenerTypeUrl, {"greeter"},
                  {MakeLocator("xdstp://a.example/envoy.config.listener.v3.Listener/greeter",
                               {{"env", "prod"}})});
  DiscoveryRequest first = subscription;
  *first.mutable_node() = MakeNode("client-1", {{"env", "prod"}});
  ASSERT_THAT((*stream)->Send(first), IsOk());

  // The Cluster response is queued behind the Listener one; take it first.
  absl::StatusOr<DiscoveryResponse> clusters =
      (*stream)->NextOfType(kClusterTypeUrl, absl::Seconds(10));
  ASSERT_THAT(clusters, IsOk());
  absl::StatusOr<std::vector<std::string>> cluster_names = ResourceNames(*clusters);
  ASSERT_THAT(cluster_names, IsOk());
  EXPECT_THAT(*cluster_names, ElementsAre("some-cluster"));
  absl::StatusOr<DiscoveryResponse> listeners = (*stream)->Next(absl::Seconds(10));
  ASSERT_THAT(listeners, IsOk());
  EXPECT_EQ(listeners->type_url(), kListenerTypeUrl);

  absl::StatusOr<std::vector<DecodedResource>> decoded = DecodeResources(*listeners);
  ASSERT_THAT(decoded, IsOk());
  ASSERT_EQ(decoded->size(), 2u);
  const DecodedResource& plain = (*decoded)[0];
  EXPECT_EQ(plain.name, "greeter");
  EXPECT_FALSE(plain.wrapped);
  EXPECT_FALSE(plain.has_constraints);
  EXPECT_THAT(plain.As<Listener>(), IsOk());
  EXPECT_THAT(plain.As<Cluster>(), StatusIs(absl::StatusCode::kInvalidArgument));
  const DecodedResource& wrapped = (*decoded)[1];
  EXPECT_EQ(wrapped.name, "xdstp://a.example/envoy.config.listener.v3.Listener/greeter");
  EXPECT_TRUE(wrapped.wrapped);
  EXPECT_EQ(wrapped.resource_name, wrapped.name);
  EXPECT_EQ(wrapped.version, "v-wrapped");
  ASSERT_TRUE(wrapped.has_constraints);
  EXPECT_EQ(wrapped.constraints.constraint().key(), "env");
  EXPECT_EQ(wrapped.constraints.constraint().value(), "prod");
  EXPECT_EQ(wrapped.As<Listener>()->name(), wrapped.name);

  ASSERT_THAT((*stream)->Send(Ack(*listeners, subscription)), IsOk());
  ASSERT_THAT((*stream)->Send(Nack(*clusters, MakeRequest(kClusterTypeUrl, {"some-cluster"}), "",
                                   "bad cluster")),
              IsOk());
  EXPECT_THAT((*stream)->Next(absl::Milliseconds(100)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT((*stream)->CloseAndWait(absl::Seconds(10)), IsOk());

  std::vector<std::string> requests = service_.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_THAT(requests[0], HasSubstr("id: \"client-1\""));
  EXPECT_THAT(requests[0], HasSubstr("dynamic_parameters { key: \"env\" value: \"prod\" }"));
  EXPECT_THAT(requests[1], HasSubstr("version_info: \"1\""));
  EXPECT_THAT(requests[1], HasSubstr("resource_names: \"greeter\""));
  EXPECT_THAT(requests[1], HasSubstr("response_nonce: \"1\""));
  EXPECT_THAT(requests[2], HasSubstr("error_detail { code: 3 message: \"bad cluster\" }"));
}

TEST_F(AdsTestClientTest, DeltaRoundTripDecodesWrappers) {
  absl::StatusOr<std::unique_ptr<DeltaStream>> stream = client_->OpenDelta();
  ASSERT_THAT(stream, IsOk());
  DeltaDiscoveryRequest subscribe = MakeDeltaRequest(kClusterTypeUrl, {"a", "b"}, {"c"});
  *subscribe.mutable_node() = MakeNode("client-2");
  ASSERT_THAT((*stream)->Send(subscribe), IsOk());
  absl::StatusOr<DeltaDiscoveryResponse> response = (*stream)->Next(absl::Seconds(10));
  ASSERT_THAT(response, IsOk());
  absl::StatusOr<std::vector<std::string>> names = ResourceNames(*response);
  ASSERT_THAT(names, IsOk());
  EXPECT_THAT(*names, ElementsAre("a", "b"));
  EXPECT_THAT(response->removed_resources(), ElementsAre("c"));
  absl::StatusOr<std::vector<DecodedResource>> decoded = DecodeResources(*response);
  ASSERT_THAT(decoded, IsOk());
  EXPECT_TRUE((*decoded)[0].wrapped);
  EXPECT_EQ((*decoded)[0].version, "7");
  EXPECT_EQ((*decoded)[0].As<Cluster>()->name(), "a");
  ASSERT_THAT((*stream)->Send(DeltaNack(*response, "no")), IsOk());
  EXPECT_THAT((*stream)->CloseAndWait(absl::Seconds(10)), IsOk());
  std::vector<std::string> requests = service_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_THAT(requests[1], HasSubstr("response_nonce: \"d1\""));
  EXPECT_THAT(requests[1], HasSubstr("message: \"no\""));
}

TEST_F(AdsTestClientTest, NextReturnsServerStatusAfterStreamEnds) {
  absl::StatusOr<std::unique_ptr<SotwStream>> stream = client_->OpenSotw();
  ASSERT_THAT(stream, IsOk());
  ASSERT_THAT((*stream)->Send(MakeRequest("end", {})), IsOk());
  EXPECT_THAT((*stream)->Next(absl::Seconds(10)),
              StatusIs(absl::StatusCode::kPermissionDenied, "bye"));
  EXPECT_THAT((*stream)->Send(MakeRequest(kListenerTypeUrl, {"x"})),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(DecodeResourceTest, RejectsUnknownTypes) {
  google::protobuf::Any any;
  any.set_type_url("type.googleapis.com/some.Other");
  EXPECT_THAT(DecodeResource(any),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("some.Other")));
  Resource wrapper;
  wrapper.set_name("w");
  *wrapper.mutable_resource() = any;
  EXPECT_THAT(DecodeResource(wrapper),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wrapper of \"w\"")));
}

}  // namespace
}  // namespace facet::testing
