// A scripted ADS server for tests of xDS clients (the relay's upstream
// client): it records every request and sends what the test scripts,
// including what Facet's own server never sends (bytes that do not parse,
// resources past the bounds, constraints that overlap).
#ifndef FACET_TEST_FAKES_FAKE_ADS_SERVICE_H_
#define FACET_TEST_FAKES_FAKE_ADS_SERVICE_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "grpcpp/grpcpp.h"

namespace facet::testing {

// Records every request and sends what the test scripts, on the newest
// stream of each protocol. Register it with a grpc::ServerBuilder; it must
// outlive the server. Thread-safe.
class FakeAdsService final
    : public envoy::service::discovery::v3::AggregatedDiscoveryService::Service {
 public:
  using DeltaDiscoveryRequest = envoy::service::discovery::v3::DeltaDiscoveryRequest;
  using DeltaDiscoveryResponse = envoy::service::discovery::v3::DeltaDiscoveryResponse;
  using DiscoveryRequest = envoy::service::discovery::v3::DiscoveryRequest;
  using DiscoveryResponse = envoy::service::discovery::v3::DiscoveryResponse;

  // Request waits give up after `timeout`.
  explicit FakeAdsService(absl::Duration timeout = absl::Seconds(20)) : timeout_(timeout) {}

  grpc::Status StreamAggregatedResources(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<DiscoveryResponse, DiscoveryRequest>* stream) override;
  grpc::Status DeltaAggregatedResources(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<DeltaDiscoveryResponse, DeltaDiscoveryRequest>* stream) override;

  // Writes `response` on the open stream of its protocol. Returns false when
  // there is none or the write fails.
  bool Send(const DeltaDiscoveryResponse& response);
  bool Send(const DiscoveryResponse& response);

  // Returns the n-th request (0-based, over every stream) of the protocol,
  // waiting for it up to the timeout; nullopt if it does not come.
  std::optional<DeltaDiscoveryRequest> DeltaRequest(size_t n);
  std::optional<DiscoveryRequest> SotwRequest(size_t n);
  // Returns how many streams have been opened.
  size_t streams();

 private:
  template <typename Response, typename Request>
  grpc::Status Serve(grpc::ServerReaderWriter<Response, Request>* stream,
                     std::vector<Request>* requests,
                     grpc::ServerReaderWriter<Response, Request>** current);
  template <typename Request>
  std::optional<Request> Nth(const std::vector<Request>* requests, size_t n);

  const absl::Duration timeout_;
  absl::Mutex mu_;
  size_t streams_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<DeltaDiscoveryRequest> delta_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<DiscoveryRequest> sotw_requests_ ABSL_GUARDED_BY(mu_);
  grpc::ServerReaderWriter<DeltaDiscoveryResponse, DeltaDiscoveryRequest>* delta_stream_
      ABSL_GUARDED_BY(mu_) = nullptr;
  grpc::ServerReaderWriter<DiscoveryResponse, DiscoveryRequest>* sotw_stream_ ABSL_GUARDED_BY(mu_) =
      nullptr;
};

}  // namespace facet::testing

#endif  // FACET_TEST_FAKES_FAKE_ADS_SERVICE_H_
