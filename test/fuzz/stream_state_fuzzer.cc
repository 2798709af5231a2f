// Fuzzes the ADS stream state machine (xds_server/ads/stream_state) with
// sequences of SotW or delta requests, snapshot changes and response drains,
// over the snapshot of examples/ and of a part of it. Checks after every step:
// the stream's subscriptions stay within its Limits, draining responses ends,
// and every response is well formed: a type the client asked for, a fresh
// nonce, a version, and only names the client subscribed to (or a wildcard).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "controller/sources/manifest/manifest_loader.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "xds_server/ads/client_status.h"
#include "xds_server/ads/parameter_mapping.h"
#include "xds_server/ads/serving_snapshot.h"
#include "xds_server/ads/stream_state.h"
#include "xds_server/names/names.h"
#include "xds_server/resources/resource_type.h"
#include "xds_server/snapshot/builder.h"
#include "test/fuzz/fuzz_support.h"

namespace {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DeltaDiscoveryResponse;
using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryResponse;
using envoy::service::discovery::v3::ResourceLocator;
using facet::xds::Protocol;
using facet::xds::PushRecord;
using facet::xds::StreamState;

using facet::fuzz::Check;

constexpr int kMaxOps = 64;
constexpr StreamState::Limits kLimits = {/*max_names=*/64, /*max_types=*/4};

// The snapshots requests are served from, and the names they serve.
struct World {
  std::shared_ptr<const facet::xds::ServingSnapshot> full;
  std::shared_ptr<const facet::xds::ServingSnapshot> part;
  std::vector<std::string> type_urls;
  std::vector<std::string> names;
};

std::shared_ptr<const facet::xds::ServingSnapshot> Serve(
    const std::vector<facet::xds::ResourceObject>& resources,
    const std::vector<facet::xds::AuthorityObject>& authorities) {
  facet::xds::BuildResult result =
      facet::xds::BuildSnapshot(resources, authorities, nullptr, facet::xds::BuildOptions());
  return std::make_shared<facet::xds::ServingSnapshot>(result.snapshot);
}

const World& TheWorld() {
  static const World* world = [] {
    auto* w = new World;
    facet::controller::ManifestSet set = facet::controller::LoadManifests({FACET_EXAMPLES_DIR});
    Check(!set.resources.empty());
    w->full = Serve(set.resources, set.authorities);
    std::vector<facet::xds::ResourceObject> half;
    for (size_t i = 0; i < set.resources.size(); i += 2) half.push_back(set.resources[i]);
    w->part = Serve(half, set.authorities);
    for (const facet::xds::ResourceType* type : facet::xds::AllResourceTypes()) {
      w->type_urls.push_back(type->type_url());
      for (const auto& [name, resource] : w->full->snapshot().resources(*type)) {
        w->names.push_back(name);
      }
    }
    Check(!w->names.empty());
    w->type_urls.push_back("type.googleapis.com/envoy.config.core.v3.Unknown");
    w->names.insert(w->names.end(),
                    {"*", "missing", "xdstp://a.example/envoy.config.route.v3.RouteConfiguration/x",
                     "xdstp://b.example/envoy.config.endpoint.v3.ClusterLoadAssignment/"
                     "greeter-prod?region=local&project=demo",
                     "xdstp:bad", "xdstp://a.example/envoy.config.listener.v3.Listener/*"});
    return w;
  }();
  return *world;
}

// What the client has asked for so far, per type URL.
struct Asked {
  std::set<std::string> names;  // As sent and normalised.
  bool wildcard = false;
};

class Driver {
 public:
  Driver(FuzzedDataProvider& in, Protocol protocol)
      : in_(in),
        world_(TheWorld()),
        state_(protocol, std::make_shared<facet::xds::ParameterMapping>(), kLimits),
        protocol_(protocol) {
    state_.SetSnapshot(world_.full);
  }

  void Run() {
    for (int op = 0; op < kMaxOps && in_.remaining_bytes() > 0; ++op) {
      switch (in_.ConsumeIntegralInRange(0, 4)) {
        case 0:
        case 1:
          if (!Request()) return;  // The server would end the stream.
          break;
        case 2:
          state_.SetSnapshot(in_.ConsumeBool() ? world_.full : world_.part);
          break;
        case 3:
          Drain();
          break;
        default:
          Inspect();
          break;
      }
      Check(state_.subscribed_names() >= 0 && state_.subscribed_names() <= kLimits.max_names);
    }
    Drain();
  }

 private:
  std::string PickTypeUrl() {
    if (in_.ConsumeIntegralInRange(0, 15) == 0) return in_.ConsumeRandomLengthString(64);
    return world_.type_urls[in_.ConsumeIntegralInRange<size_t>(0, world_.type_urls.size() - 1)];
  }
  std::string PickName() {
    if (in_.ConsumeIntegralInRange(0, 7) == 0) return in_.ConsumeRandomLengthString(64);
    return world_.names[in_.ConsumeIntegralInRange<size_t>(0, world_.names.size() - 1)];
  }
  std::string PickNonce(const std::string& type_url) {
    switch (in_.ConsumeIntegralInRange(0, 3)) {
      case 0:
        return "";
      case 1:
        return in_.ConsumeRandomLengthString(16);
      default:
        return last_nonce_[type_url];
    }
  }
  void FillLocator(ResourceLocator* locator) {
    locator->set_name(PickName());
    int params = in_.ConsumeIntegralInRange(0, 2);
    for (int i = 0; i < params; ++i) {
      static const char* const kKeys[] = {"env", "version", "zone"};
      static const char* const kValues[] = {"prod", "test", "v2", ""};
      (*locator->mutable_dynamic_parameters())[kKeys[in_.ConsumeIntegralInRange(0, 2)]] =
          kValues[in_.ConsumeIntegralInRange(0, 3)];
    }
  }
  void NoteAsked(const std::string& type_url, const std::string& name) {
    Asked& asked = asked_[type_url];
    if (name == "*") asked.wildcard = true;
    asked.names.insert(name);
    if (absl::StatusOr<std::string> normal = facet::xds::NormalizeResourceName(name); normal.ok()) {
      asked.names.insert(*normal);
    }
  }
  void SetNode(envoy::config::core::v3::Node* node) {
    node->set_id(in_.ConsumeRandomLengthString(16));
    if (in_.ConsumeBool()) {
      (*node->mutable_metadata()->mutable_fields())["env"].set_string_value(
          in_.ConsumeBool() ? "prod" : "test");
    }
    if (in_.ConsumeBool()) node->add_client_features(facet::xds::kResourceInSotwFeature);
  }

  // Sends one request; returns false when the state machine ends the stream.
  bool Request() {
    const std::string type_url = PickTypeUrl();
    requested_types_.insert(type_url);
    const bool nack = in_.ConsumeIntegralInRange(0, 5) == 0;
    facet::xds::RequestOutcome outcome;
    absl::Status status;
    if (protocol_ == Protocol::kSotw) {
      DiscoveryRequest request;
      request.set_type_url(type_url);
      if (first_request_) SetNode(request.mutable_node());
      int names = in_.ConsumeIntegralInRange(0, 6);
      for (int i = 0; i < names; ++i) request.add_resource_names(PickName());
      int locators = in_.ConsumeIntegralInRange(0, 2);
      for (int i = 0; i < locators; ++i) FillLocator(request.add_resource_locators());
      if (names == 0 && locators == 0) asked_[type_url].wildcard = true;
      for (const auto& name : request.resource_names()) NoteAsked(type_url, name);
      for (const auto& locator : request.resource_locators()) NoteAsked(type_url, locator.name());
      request.set_response_nonce(PickNonce(type_url));
      if (in_.ConsumeBool()) request.set_version_info(in_.ConsumeRandomLengthString(16));
      if (nack) request.mutable_error_detail()->set_message(in_.ConsumeRandomLengthString(64));
      status = state_.OnRequest(request, &outcome);
    } else {
      DeltaDiscoveryRequest request;
      request.set_type_url(type_url);
      if (first_request_) SetNode(request.mutable_node());
      int subscribe = in_.ConsumeIntegralInRange(0, 6);
      for (int i = 0; i < subscribe; ++i) request.add_resource_names_subscribe(PickName());
      int unsubscribe = in_.ConsumeIntegralInRange(0, 3);
      for (int i = 0; i < unsubscribe; ++i) request.add_resource_names_unsubscribe(PickName());
      int locators = in_.ConsumeIntegralInRange(0, 2);
      for (int i = 0; i < locators; ++i) FillLocator(request.add_resource_locators_subscribe());
      int unlocators = in_.ConsumeIntegralInRange(0, 1);
      for (int i = 0; i < unlocators; ++i) FillLocator(request.add_resource_locators_unsubscribe());
      if (!delta_started_.count(type_url)) {
        if (subscribe == 0 && locators == 0) asked_[type_url].wildcard = true;
        int versions = in_.ConsumeIntegralInRange(0, 2);
        for (int i = 0; i < versions; ++i) {
          (*request.mutable_initial_resource_versions())[PickName()] =
              in_.ConsumeRandomLengthString(16);
        }
        for (const auto& [name, version] : request.initial_resource_versions()) {
          NoteAsked(type_url, name);
        }
      }
      for (const auto& name : request.resource_names_subscribe()) NoteAsked(type_url, name);
      for (const auto& l : request.resource_locators_subscribe()) NoteAsked(type_url, l.name());
      // Unsubscribing may still be answered with a removal.
      for (const auto& name : request.resource_names_unsubscribe()) NoteAsked(type_url, name);
      for (const auto& l : request.resource_locators_unsubscribe()) NoteAsked(type_url, l.name());
      request.set_response_nonce(PickNonce(type_url));
      if (nack) request.mutable_error_detail()->set_message(in_.ConsumeRandomLengthString(64));
      status = state_.OnRequest(request, &outcome);
      delta_started_.insert(type_url);
    }
    first_request_ = false;
    if (status.code() == absl::StatusCode::kResourceExhausted) {
      Check(outcome.limit != facet::xds::RequestOutcome::Limit::kNone);
    }
    Check(status.ok() || !status.message().empty());
    return status.ok();
  }

  void CheckName(const std::string& type_url, const std::string& name) {
    // An empty name only where the client asked for one (a wildcard does not
    // cover it).
    const Asked& asked = asked_[type_url];
    if ((name.empty() || !asked.wildcard) && asked.names.count(name) == 0) {
      std::fprintf(stderr, "a response names %s \"%s\", which the client never asked for\n",
                   type_url.c_str(), name.c_str());
      std::abort();
    }
  }
  void CheckCommon(const std::string& type_url, const std::string& nonce,
                   const PushRecord& record) {
    Check(requested_types_.count(type_url) > 0);
    Check(!nonce.empty() && nonces_.insert(nonce).second);
    Check(record.type_url == type_url && record.nonce == nonce);
    Check(record.with_items || record.items.empty());
    // The version is copied into the record only with its items.
    Check(record.with_items || record.version_info.empty());
    for (const auto& item : record.items) CheckName(type_url, item.name);
    last_nonce_[type_url] = nonce;
  }

  void Drain() {
    // Every response settles at least one name or a type's pending answer.
    const int bound = 4 * (kLimits.max_names + kLimits.max_types + 4) *
                      static_cast<int>(world_.type_urls.size() + 1);
    PushRecord record;
    // Every other drain as the server decides at info level: no items listed.
    record.with_items = drains_++ % 2 == 0;
    for (int i = 0;; ++i) {
      Check(i < bound);
      if (protocol_ == Protocol::kSotw) {
        DiscoveryResponse response;
        if (!state_.NextResponse(&response, &record)) return;
        CheckCommon(response.type_url(), response.nonce(), record);
        Check(!response.version_info().empty());
        for (const auto& any : response.resources()) Check(!any.type_url().empty());
      } else {
        DeltaDiscoveryResponse response;
        if (!state_.NextResponse(&response, &record)) return;
        CheckCommon(response.type_url(), response.nonce(), record);
        Check(!response.system_version_info().empty());
        for (const auto& resource : response.resources()) {
          Check(resource.name().empty() != resource.resource_name().name().empty());
          CheckName(response.type_url(), resource.name().empty() ? resource.resource_name().name()
                                                                   : resource.name());
          Check(!resource.version().empty() && resource.has_resource());
        }
        for (const auto& name : response.removed_resources()) {
          CheckName(response.type_url(), name);
        }
        for (const auto& name : response.removed_resource_names()) {
          CheckName(response.type_url(), name.name());
        }
      }
    }
  }

  void Inspect() {
    std::set<std::string> types;
    for (const auto& watch : state_.Watches()) types.insert(watch.type_url);
    Check(types.size() <= static_cast<size_t>(kLimits.max_types));
    state_.TakeWatchChanges();
    facet::xds::ClientStatus status;
    size_t budget = in_.ConsumeIntegralInRange<size_t>(0, 1 << 16);
    state_.DescribeClient(&status, &budget);
    for (const auto& [type_url, name, version] : state_.Holdings()) CheckName(type_url, name);
  }

  FuzzedDataProvider& in_;
  const World& world_;
  StreamState state_;
  Protocol protocol_;
  bool first_request_ = true;
  std::set<std::string> requested_types_;
  std::set<std::string> delta_started_;
  std::map<std::string, Asked> asked_;
  std::map<std::string, std::string> last_nonce_;
  std::set<std::string> nonces_;
  int drains_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Driver driver(in, in.ConsumeBool() ? Protocol::kSotw : Protocol::kDelta);
  driver.Run();
  return 0;
}
