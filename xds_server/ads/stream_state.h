// The xDS protocol state of one ADS stream (SotW or delta), independent of
// gRPC: subscriptions per type, what the client holds, ACK/NACK bookkeeping,
// and which response to send next (make-before-break order).
#ifndef FACET_XDS_SERVER_ADS_STREAM_STATE_H_
#define FACET_XDS_SERVER_ADS_STREAM_STATE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "xds_server/ads/parameter_mapping.h"
#include "xds_server/ads/serving_snapshot.h"

namespace facet::xds {

enum class Protocol { kSotw, kDelta };

// The client feature with which gRPC C++ says it reads Resource wrappers in
// SotW responses.
inline constexpr char kResourceInSotwFeature[] = "xds.config.resource-in-sotw";

// A resource variant named in a response.
struct PushedItem {
  std::string name;
  std::string label;    // Variant label ("" for removals without a variant).
  std::string version;  // Variant version ("" for removals).
  bool removal = false;
};

// What a response carried, for logs, stats and NACK attribution.
struct PushRecord {
  std::string type_url;
  std::string version_info;
  std::string nonce;
  std::vector<PushedItem> items;
};

// What a request said about the previous response of its type.
struct RequestOutcome {
  enum class Kind { kInitial, kAck, kNack, kStale, kSubscriptionOnly };
  Kind kind = Kind::kInitial;
  std::string type_url;
  std::string nonce;
  std::string error_detail;        // For kNack.
  std::vector<PushedItem> nacked;  // The items of the NACKed response.
};

// Not thread-safe: the owner serializes calls (one stream, one lock).
class StreamState {
 public:
  StreamState(Protocol protocol, std::shared_ptr<const ParameterMapping> mapping);

  // Applies a request. Returns InvalidArgument for requests that break the
  // protocol badly enough to end the stream (no type URL; oversized name
  // lists); unknown types and malformed names are answered as "does not exist".
  absl::Status OnRequest(const envoy::service::discovery::v3::DiscoveryRequest& request,
                         RequestOutcome* outcome);
  absl::Status OnRequest(const envoy::service::discovery::v3::DeltaDiscoveryRequest& request,
                         RequestOutcome* outcome);

  // Adopts a new snapshot; later responses bring the client up to date with it.
  void SetSnapshot(std::shared_ptr<const ServingSnapshot> snapshot);

  // Returns whether a change to (type URL, name) matters to this stream.
  bool Watches(const std::string& type_url, const std::string& name) const;

  // Builds the next response, if one is due. Within one snapshot change,
  // additions and updates go out first in push-rank order (endpoints,
  // clusters, routes, listeners), then removals in reverse order.
  bool NextResponse(envoy::service::discovery::v3::DiscoveryResponse* response, PushRecord* record);
  bool NextResponse(envoy::service::discovery::v3::DeltaDiscoveryResponse* response,
                    PushRecord* record);

  const envoy::config::core::v3::Node& node() const { return node_; }
  bool has_node() const { return has_node_; }
  // Returns (type URL, name, variant version) of everything the client holds.
  std::vector<std::tuple<std::string, std::string, std::string>> Holdings() const;

  // Upper bound on names or locators in one request.
  static constexpr int kMaxNamesPerRequest = 10000;

 private:
  struct Subscription {
    std::shared_ptr<const Parameters> params;
    bool locator = false;
  };
  struct NameState {
    // Subscriptions by canonical parameters.
    std::map<std::string, Subscription> subscriptions;
    // Variants the client holds, by version.
    std::map<std::string, std::shared_ptr<const Variant>> held;
    bool answered = false;  // The client has been told about it at least once.
    bool locator_mode() const;
  };
  struct TypeState {
    std::string type_url;
    const ResourceType* type = nullptr;  // Null: a type Facet does not serve.
    bool wildcard = false;
    // Wildcard by the legacy rule (first LDS/CDS request named nothing):
    // later requests that name nothing keep it.
    bool legacy_wildcard = false;
    bool seen_request = false;
    bool response_due = false;  // A request changed subscriptions: answer it.
    // SotW: the version_info a reconnecting client's first request carried
    // (what it holds from another stream, possibly to another replica).
    std::string resume_version;
    std::map<std::string, NameState> names;
    std::string last_nonce;
    std::string last_version;
    std::vector<PushedItem> last_items;
  };
  struct Diff {
    // name -> variants to send / to drop.
    std::map<std::string, std::vector<std::shared_ptr<const Variant>>> upserts;
    std::map<std::string, std::vector<std::shared_ptr<const Variant>>> drops;  // Swaps.
    std::set<std::string> removals;   // Names whose variants all go away.
    std::set<std::string> unanswered;  // Subscribed, never answered, nothing to send.
    bool empty() const { return upserts.empty() && removals.empty() && unanswered.empty(); }
  };

  TypeState& StateFor(const std::string& type_url);
  void SetNode(const envoy::config::core::v3::Node& node);
  void Subscribe(TypeState& state, const std::string& name, std::shared_ptr<const Parameters> params,
                 bool locator);
  std::map<std::string, std::shared_ptr<const Variant>> Desired(const TypeState& state,
                                                                const std::string& name,
                                                                const NameState& ns) const;
  Diff ComputeDiff(const TypeState& state) const;
  void ProcessAckOrNack(TypeState& state, const std::string& nonce, const std::string& error,
                        RequestOutcome* outcome);
  // Picks the type to answer next and whether it is the removal phase.
  TypeState* PickNext(bool* removal_phase, Diff* diff);
  std::string NextNonce();
  static void DropIdleNames(TypeState& state);
  // Returns the SotW version_info of a set of held variants (a content
  // digest, the same on every replica).
  static std::string HeldDigest(const std::map<std::string, NameState>& names);
  // SotW: when a reconnecting client already holds exactly the current state
  // of a type (its version_info matches), records that instead of resending.
  void ResumeFromClientVersions();
  bool wraps_plain_resources() const;

  Protocol protocol_;
  std::shared_ptr<const ParameterMapping> mapping_;
  std::shared_ptr<const ServingSnapshot> snapshot_;
  envoy::config::core::v3::Node node_;
  bool has_node_ = false;
  std::shared_ptr<const Parameters> node_params_;
  std::map<std::string, TypeState> types_;
  uint64_t nonce_counter_ = 0;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_STREAM_STATE_H_
