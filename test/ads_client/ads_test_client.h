// A project-owned xDS wire client for tests. The real gRPC clients send
// neither resource_locators nor delta requests, so tests that exercise those
// (and tests that need to see exactly what the server sends) use this: one
// channel, any number of SotW or delta ADS streams on it, each with a reader
// thread feeding a queue that tests pull from with a timeout.
#ifndef FACET_TEST_ADS_CLIENT_ADS_TEST_CLIENT_H_
#define FACET_TEST_ADS_CLIENT_ADS_TEST_CLIENT_H_

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "envoy/config/core/v3/base.pb.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/any.pb.h"
#include "grpcpp/grpcpp.h"

namespace facet::testing {

using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;

inline constexpr absl::string_view kListenerTypeUrl =
    "type.googleapis.com/envoy.config.listener.v3.Listener";
inline constexpr absl::string_view kRouteConfigurationTypeUrl =
    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
inline constexpr absl::string_view kClusterTypeUrl =
    "type.googleapis.com/envoy.config.cluster.v3.Cluster";
inline constexpr absl::string_view kClusterLoadAssignmentTypeUrl =
    "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
inline constexpr absl::string_view kResourceWrapperTypeUrl =
    "type.googleapis.com/envoy.service.discovery.v3.Resource";

// One ADS stream: SotW (AdsStream<DiscoveryRequest, DiscoveryResponse>) or
// delta (AdsStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>). A reader
// thread queues every response; Send may be called from any thread while
// Next* waits. Thread-safe. Destroying the stream cancels it.
template <typename Request, typename Response>
class AdsStream {
 public:
  using Stream = grpc::ClientReaderWriter<Request, Response>;

  AdsStream(const AdsStream&) = delete;
  AdsStream& operator=(const AdsStream&) = delete;
  ~AdsStream();

  // Writes one request. FailedPrecondition after the stream ended or was
  // half-closed; Unavailable if the write fails (the stream is broken; its
  // status comes from Next).
  absl::Status Send(const Request& request);

  // Returns the oldest queued response, waiting up to `timeout` for one.
  // DeadlineExceeded if none arrives; once the stream has ended and the queue
  // is empty, the stream's final status (OK becomes Unavailable, since the
  // server should never end an ADS stream by itself).
  absl::StatusOr<Response> Next(absl::Duration timeout);

  // Like Next, but returns the oldest queued response whose type_url is
  // `type_url`, leaving responses of other types queued in order.
  absl::StatusOr<Response> NextOfType(absl::string_view type_url, absl::Duration timeout);

  // Returns how many responses are queued.
  size_t queued() const;

  // Half-closes the stream and waits for the server to end it. Returns the
  // final status: DeadlineExceeded if the server has not ended it after
  // `timeout`.
  absl::Status CloseAndWait(absl::Duration timeout);

  // Cancels the stream from the client side (as a client that goes away
  // would); later Next calls drain the queue, then return Cancelled.
  void Cancel();

 private:
  friend class AdsTestClient;
  AdsStream(std::unique_ptr<grpc::ClientContext> context, std::unique_ptr<Stream> stream);
  void ReadLoop();
  absl::StatusOr<Response> Pop(absl::string_view type_url, absl::Duration timeout);

  const std::unique_ptr<grpc::ClientContext> context_;
  const std::unique_ptr<Stream> stream_;
  absl::Mutex write_mu_;
  bool writes_done_ ABSL_GUARDED_BY(write_mu_) = false;
  mutable absl::Mutex mu_;
  std::deque<Response> queue_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> final_status_ ABSL_GUARDED_BY(mu_);
  std::thread reader_;
};

using SotwStream = AdsStream<DiscoveryRequest, DiscoveryResponse>;
using DeltaStream = AdsStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;

// A connection to an ADS server. Thread-safe. Streams may outlive neither the
// client nor each other's use of the channel: destroy streams first.
class AdsTestClient {
 public:
  // Connects an insecure channel to `address` (host:port) and waits until it
  // is ready. Unavailable if it is not ready within `timeout`.
  static absl::StatusOr<std::unique_ptr<AdsTestClient>> Connect(
      absl::string_view address, absl::Duration timeout = absl::Seconds(10));

  // Like Connect, with `credentials` (e.g. TLS) and channel `args` (e.g.
  // GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, so that clients do not share a
  // connection).
  static absl::StatusOr<std::unique_ptr<AdsTestClient>> Connect(
      absl::string_view address, std::shared_ptr<grpc::ChannelCredentials> credentials,
      const grpc::ChannelArguments& args, absl::Duration timeout = absl::Seconds(10));

  // Opens a StreamAggregatedResources / DeltaAggregatedResources stream.
  // Fails with the stream's status if the server refuses it at once.
  absl::StatusOr<std::unique_ptr<SotwStream>> OpenSotw();
  absl::StatusOr<std::unique_ptr<DeltaStream>> OpenDelta();

 private:
  explicit AdsTestClient(std::shared_ptr<grpc::Channel> channel);

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<envoy::service::discovery::v3::AggregatedDiscoveryService::Stub> stub_;
};

// --- Building requests -------------------------------------------------------

// Returns a Node with `id`, an empty locality (grpc-js requires one), the
// given metadata as string values, a user agent naming this client, and
// `client_features` (e.g. "xds.config.resource-in-sotw").
envoy::config::core::v3::Node MakeNode(absl::string_view id,
                                       const std::map<std::string, std::string>& metadata = {},
                                       const std::vector<std::string>& client_features = {});

// Returns a ResourceLocator for `name` with dynamic parameters `parameters`.
envoy::service::discovery::v3::ResourceLocator MakeLocator(
    absl::string_view name, const std::map<std::string, std::string>& parameters = {});

// Returns a SotW subscription request of `type_url` to `resource_names` and
// `locators`. Set the node on the first request of a stream.
DiscoveryRequest MakeRequest(
    absl::string_view type_url, const std::vector<std::string>& resource_names,
    const std::vector<envoy::service::discovery::v3::ResourceLocator>& locators = {});

// Returns the ACK of `response`: `subscription` (whose resource names and
// locators SotW must repeat, since an empty list unsubscribes everything) with
// the response's version and nonce.
DiscoveryRequest Ack(const DiscoveryResponse& response, const DiscoveryRequest& subscription);

// Returns the NACK of `response`: `subscription` with the response's nonce,
// `previous_version` (the last accepted version, "" if none) and an
// error_detail (INVALID_ARGUMENT, `message`).
DiscoveryRequest Nack(const DiscoveryResponse& response, const DiscoveryRequest& subscription,
                      absl::string_view previous_version, absl::string_view message);

// Returns a delta request of `type_url` subscribing / unsubscribing names and
// locators. Set the node on the first request of a stream.
DeltaDiscoveryRequest MakeDeltaRequest(
    absl::string_view type_url, const std::vector<std::string>& subscribe,
    const std::vector<std::string>& unsubscribe = {},
    const std::vector<envoy::service::discovery::v3::ResourceLocator>& locators_subscribe = {},
    const std::vector<envoy::service::discovery::v3::ResourceLocator>& locators_unsubscribe = {});

// Returns the delta ACK / NACK of `response` (type and nonce, plus the error).
DeltaDiscoveryRequest DeltaAck(const DeltaDiscoveryResponse& response);
DeltaDiscoveryRequest DeltaNack(const DeltaDiscoveryResponse& response, absl::string_view message);

// --- Decoding responses ------------------------------------------------------

// One resource of a response, with the envoy.service.discovery.v3.Resource
// wrapper (if any) taken off.
struct DecodedResource {
  // The name the client should file the resource under: the wrapper's
  // resource_name.name, else the wrapper's name, else the inner resource's own
  // name field.
  std::string name;
  // Whether the resource came in a Resource wrapper (always true for delta).
  bool wrapped = false;
  // The wrapper's fields; empty when absent.
  std::string wrapper_name;      // Resource.name
  std::string resource_name;     // Resource.resource_name.name
  bool has_constraints = false;  // Resource.resource_name has dynamic_parameter_constraints
  envoy::service::discovery::v3::DynamicParameterConstraints constraints;
  std::string version;  // Resource.version
  // The inner resource; empty (no type_url) for a wrapper without one.
  google::protobuf::Any resource;

  // Unpacks the inner resource as `Message`. InvalidArgument if it holds
  // another type or does not parse.
  template <typename Message>
  absl::StatusOr<Message> As() const {
    Message message;
    if (!resource.UnpackTo(&message)) {
      return absl::InvalidArgumentError("resource " + name + " of type " + resource.type_url() +
                                        " is not a " + Message::descriptor()->full_name());
    }
    return message;
  }
};

// Decodes one entry of DiscoveryResponse.resources (wrapped or not).
// InvalidArgument for a wrapper or resource that does not parse, or an inner
// type that is not one of the four served xDS types.
absl::StatusOr<DecodedResource> DecodeResource(const google::protobuf::Any& any);

// Decodes one entry of DeltaDiscoveryResponse.resources.
absl::StatusOr<DecodedResource> DecodeResource(
    const envoy::service::discovery::v3::Resource& resource);

// Decodes every resource of a response, in order; fails on the first error.
absl::StatusOr<std::vector<DecodedResource>> DecodeResources(const DiscoveryResponse& response);
absl::StatusOr<std::vector<DecodedResource>> DecodeResources(
    const DeltaDiscoveryResponse& response);

// Returns the names of every resource of a response, in order (see
// DecodedResource::name); fails like DecodeResources.
absl::StatusOr<std::vector<std::string>> ResourceNames(const DiscoveryResponse& response);
absl::StatusOr<std::vector<std::string>> ResourceNames(const DeltaDiscoveryResponse& response);

}  // namespace facet::testing

#endif  // FACET_TEST_ADS_CLIENT_ADS_TEST_CLIENT_H_
