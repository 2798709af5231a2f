#include "test/fakes/fake_ads_service.h"

namespace facet::testing {

grpc::Status FakeAdsService::StreamAggregatedResources(
    grpc::ServerContext* /*context*/,
    grpc::ServerReaderWriter<DiscoveryResponse, DiscoveryRequest>* stream) {
  return Serve(stream, &sotw_requests_, &sotw_stream_);
}

grpc::Status FakeAdsService::DeltaAggregatedResources(
    grpc::ServerContext* /*context*/,
    grpc::ServerReaderWriter<DeltaDiscoveryResponse, DeltaDiscoveryRequest>* stream) {
  return Serve(stream, &delta_requests_, &delta_stream_);
}

bool FakeAdsService::Send(const DeltaDiscoveryResponse& response) {
  absl::MutexLock lock(&mu_);
  return delta_stream_ != nullptr && delta_stream_->Write(response);
}

bool FakeAdsService::Send(const DiscoveryResponse& response) {
  absl::MutexLock lock(&mu_);
  return sotw_stream_ != nullptr && sotw_stream_->Write(response);
}

std::optional<FakeAdsService::DeltaDiscoveryRequest> FakeAdsService::DeltaRequest(size_t n) {
  return Nth(&delta_requests_, n);
}

std::optional<FakeAdsService::DiscoveryRequest> FakeAdsService::SotwRequest(size_t n) {
  return Nth(&sotw_requests_, n);
}

size_t FakeAdsService::streams() {
  absl::MutexLock lock(&mu_);
  return streams_;
}

template <typename Response, typename Request>
grpc::Status FakeAdsService::Serve(grpc::ServerReaderWriter<Response, Request>* stream,
                                   std::vector<Request>* requests,
                                   grpc::ServerReaderWriter<Response, Request>** current) {
  {
    absl::MutexLock lock(&mu_);
    ++streams_;
    *current = stream;
  }
  Request request;
  while (stream->Read(&request)) {
    absl::MutexLock lock(&mu_);
    requests->push_back(request);
  }
  absl::MutexLock lock(&mu_);
  if (*current == stream) *current = nullptr;
  return grpc::Status::OK;
}

template <typename Request>
std::optional<Request> FakeAdsService::Nth(const std::vector<Request>* requests, size_t n) {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return requests->size() > n; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout_)) return std::nullopt;
  return (*requests)[n];
}

}  // namespace facet::testing
