// The xDS protocol state of one ADS stream (SotW or delta), independent of
// gRPC: subscriptions per type, what the client holds, ACK/NACK bookkeeping,
// and which response to send next (make-before-break order).
//
// Work is proportional to what changed for the stream: each type keeps the
// names whose answer may have changed (dirty names) and the answers due, so a
// snapshot change, a request or an ACK never re-examines every subscription.
//
// Written in three files: stream_state.cc holds what both protocols share
// (subscriptions, held variants, pending work, ACK/NACK, client status);
// stream_state_sotw.cc and stream_state_delta.cc each protocol's requests
// and responses.
#ifndef FACET_XDS_SERVER_ADS_STREAM_STATE_H_
#define FACET_XDS_SERVER_ADS_STREAM_STATE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/container/flat_map.hpp>
#include <boost/container/flat_set.hpp>
#include <boost/container/small_vector.hpp>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "xds_server/ads/client_status.h"
#include "xds_server/ads/name_set.h"
#include "xds_server/ads/parameter_mapping.h"
#include "xds_server/ads/serving_snapshot.h"
#include "xds_server/snapshot_store/demand_change.h"

namespace facet::xds {

enum class Protocol { kSotw, kDelta };

// A resource variant named in a response.
struct PushedItem {
  std::string name;
  std::string label;    // Variant label ("" for removals without a variant).
  std::string version;  // Variant version ("" for removals).
  bool removal = false;
};

// A SotW response as a stream decides it, ready to be encoded for the wire
// (EncodeSotwResponse) or turned into a DiscoveryResponse (ToMessage). The
// resources are the variants' shared, pre-encoded bytes, not copies.
struct SotwResponse {
  struct Resource {
    std::shared_ptr<const Variant> variant;  // Keeps the bytes valid.
    bool wrapped = false;  // In a TP2 Resource wrapper.
    bool locator = false;  // The wrapper names the variant by its constraints.
    // Returns the resource as a serialized google.protobuf.Any.
    const std::string& EncodedAny() const;
  };
  // The type URL, not copied per response: a served type's own, or the
  // stream state's copy of one it does not serve. Valid while the
  // StreamState lives.
  absl::string_view type_url;
  std::string version_info;
  std::string nonce;
  // Nearly always one (a push of the one name that changed): kept inline.
  boost::container::small_vector<Resource, 1> resources;

  // Returns the response as a message (the same bytes on the wire).
  envoy::service::discovery::v3::DiscoveryResponse ToMessage() const;
};

// A delta response as a stream decides it, ready to be encoded for the wire
// (EncodeDeltaResponse) or turned into a DeltaDiscoveryResponse (ToMessage).
// Each resource is its variant's shared, pre-encoded Resource wrapper.
struct DeltaResponse {
  struct Resource {
    std::shared_ptr<const Variant> variant;  // Keeps the bytes valid.
    bool locator = false;                    // Named by resource_name, with the constraints.
    // Returns the serialized envoy.service.discovery.v3.Resource.
    absl::string_view Encoded() const { return variant->EncodedWrapper(locator); }
  };
  absl::string_view type_url;  // As SotwResponse's.
  std::string system_version_info;
  std::string nonce;
  boost::container::small_vector<Resource, 1> resources;  // As SotwResponse's.
  std::vector<std::string> removed_resources;
  std::vector<envoy::service::discovery::v3::ResourceName> removed_resource_names;

  // Returns the response as a message (the same fields as on the wire).
  envoy::service::discovery::v3::DeltaDiscoveryResponse ToMessage() const;
};

// What a response carried, for logs, stats and NACK attribution.
struct PushRecord {
  absl::string_view type_url;  // As SotwResponse's.
  std::string version_info;    // Set only with_items (empty otherwise).
  std::string nonce;
  // Whether NextResponse lists the items (each a copy of a name, a label and
  // a version) and copies the version: the server asks for them only while
  // it logs pushes.
  bool with_items = true;
  std::vector<PushedItem> items;
};

// What a request said about the previous response of its type.
struct RequestOutcome {
  enum class Kind { kInitial, kAck, kNack, kStale, kSubscriptionOnly };
  // The per-stream bound a rejected request exceeded.
  enum class Limit { kNone, kNames, kTypes, kBytes, kConnectionMemory, kServerMemory };
  Kind kind = Kind::kInitial;
  Limit limit = Limit::kNone;
  // The type URL, not copied per request: a served type's own, or the
  // stream state's copy of one it does not serve. Valid while the
  // StreamState lives.
  absl::string_view type_url;
  std::string nonce;
  std::string error_detail;        // For kNack.
  std::vector<PushedItem> nacked;  // The items of the NACKed response.
};

// A change to what a stream watches, for the server's (type, name) -> streams
// index. `name` is empty for a wildcard change.
struct WatchChange {
  std::string type_url;
  std::string name;
  bool wildcard = false;
  bool watched = true;  // False: no longer watched.
};

// Memory that the subscriptions of several streams share (a connection's,
// the server's). Called by the owner of one StreamState, under its lock.
class SubscriptionQuota {
 public:
  virtual ~SubscriptionQuota() = default;
  // Takes `bytes` more of the shared memory for this stream, or returns
  // ResourceExhausted naming the bound (and sets *limit) when they would go
  // beyond it. What is taken is settled by the owner after the request.
  virtual absl::Status Take(int64_t bytes, RequestOutcome::Limit* limit) = 0;
};

// Not thread-safe: the owner serializes calls (one stream, one lock).
class StreamState {
 public:
  // Per-stream bounds on what a client can make the server hold.
  struct Limits {
    // Names (and locators) subscribed at once, over every type, cumulative
    // across delta requests.
    int max_names = 100000;
    // Distinct type URLs subscribed to.
    int max_types = 16;
    // Bytes of subscribed names and locator parameters (keys and values),
    // cumulative across delta requests.
    int64_t max_bytes = int64_t{64} << 20;
  };

  StreamState(Protocol protocol, std::shared_ptr<const ParameterMapping> mapping)
      : StreamState(protocol, std::move(mapping), Limits()) {}
  StreamState(Protocol protocol, std::shared_ptr<const ParameterMapping> mapping, Limits limits);
  // Holds pointers into itself.
  StreamState(const StreamState&) = delete;
  StreamState& operator=(const StreamState&) = delete;

  // Applies a request. Returns InvalidArgument for requests that break the
  // protocol badly enough to end the stream (no type URL, or one longer than
  // kMaxTypeUrlBytes; oversized name lists; a name longer than
  // kMaxResourceNameLength) and ResourceExhausted when the request would exceed a Limits bound
  // (outcome->limit says which); unknown types and malformed names are
  // answered as "does not exist".
  absl::Status OnRequest(const envoy::service::discovery::v3::DiscoveryRequest& request,
                         RequestOutcome* outcome);
  absl::Status OnRequest(const envoy::service::discovery::v3::DeltaDiscoveryRequest& request,
                         RequestOutcome* outcome);

  // Adopts a new snapshot. When its changes() are relative to the snapshot
  // held so far, only the changed names are re-examined; otherwise every
  // subscription is.
  void SetSnapshot(std::shared_ptr<const ServingSnapshot> snapshot);
  // Adopts `snapshot` without re-examining anything: the caller marks what
  // changed with MarkDirty / MarkAllDirty.
  void AdoptSnapshot(std::shared_ptr<const ServingSnapshot> snapshot);
  // Re-examines (type, name) on the next NextResponse, if it is watched.
  void MarkDirty(const ResourceType& type, const std::string& name);
  // Re-examines every subscription of every type.
  void MarkAllDirty();

  // Returns and clears the changes to what this stream watches since the
  // last call.
  std::vector<WatchChange> TakeWatchChanges();
  // Returns everything this stream watches now (for unregistering).
  std::vector<WatchChange> Watches() const;

  // Starts recording DemandChanges (off by default: only partial sources
  // need them).
  void RecordDemand() { record_demand_ = true; }
  // Returns and clears the subscriptions started and ended since the last
  // call, in order.
  std::vector<DemandChange> TakeDemandChanges();
  // Returns every subscription held now, as additions.
  std::vector<DemandChange> Demands() const;

  // Builds the next response, if one is due. Within one snapshot change,
  // additions and updates go out first in push-rank order (endpoints,
  // clusters, routes, listeners), then removals in reverse order.
  bool NextResponse(SotwResponse* response, PushRecord* record);
  // The same as a message.
  bool NextResponse(envoy::service::discovery::v3::DiscoveryResponse* response, PushRecord* record);
  bool NextResponse(DeltaResponse* response, PushRecord* record);
  bool NextResponse(envoy::service::discovery::v3::DeltaDiscoveryResponse* response,
                    PushRecord* record);
  // Whether NextResponse may have a response to build; false when it would
  // return false without re-examining anything (as after most ACKs and
  // writes). O(types).
  bool ResponseMayBeDue() const { return resume_pending_ || HasPendingWork(); }

  // Sets who the client is, from the certificate it presented (empty: no
  // identity). Resources of authorities it may not read (see
  // ClientAccess::MayRead) are, for this stream, resources that do not exist.
  // Call before the first request.
  void SetIdentity(ClientIdentity identity) { identity_ = std::move(identity); }
  const ClientIdentity& identity() const { return identity_; }

  // Returns the node of the stream's first request that named one (empty
  // until then). Parsed on each call from the bytes the stream keeps: for
  // reports, not for every request.
  envoy::config::core::v3::Node node() const;
  bool has_node() const { return has_node_; }
  // The parameters every subscription of this stream selects with (its
  // node's), or null when they may differ by subscription (a locator, or a
  // subscription made before the node was known).
  // A reference (to a null pointer in the second case): the read path
  // compares it on every request without touching the pointer's count,
  // which thousands of streams share.
  const std::shared_ptr<const Parameters>& uniform_params() const {
    static const std::shared_ptr<const Parameters> kNone;
    return has_node_ && !mixed_params_ ? node_params_ : kNone;
  }
  // Returns (type URL, name, variant version) of everything the client holds.
  std::vector<std::tuple<std::string, std::string, std::string>> Holdings() const;
  // Returns and clears the changes, since the last call, to the authorities
  // ("" for old-style names) the client holds at least one resource of: +1
  // for one it holds now and did not, -1 for one it no longer holds (none
  // for one it held, dropped and holds again). Kept up at O(1) per name that
  // came to hold something or to hold nothing.
  std::vector<std::pair<std::string, int>> TakeAuthorityChanges();
  // Returns the authorities the client holds at least one resource of.
  std::vector<std::string> HeldAuthorities() const;
  // Returns the names currently subscribed (over every type).
  int64_t subscribed_names() const { return subscribed_names_; }
  // Returns the bytes Limits::max_bytes counts now.
  int64_t subscribed_bytes() const { return subscribed_bytes_; }
  // Returns the memory the server holds for this stream's subscriptions, as
  // estimated by SubscriptionMemory.
  int64_t subscription_memory() const {
    return SubscriptionMemory(subscribed_names_, subscribed_bytes_);
  }
  // Returns the memory `names` subscriptions with `bytes` of names and
  // locator parameters cost: each name is kept about four times (the type's
  // name map, its pending-work sets, the server's watch index) with a few
  // hundred bytes of map nodes and per-name state. Measured against the heap
  // in stream_state_test.
  static int64_t SubscriptionMemory(int64_t names, int64_t bytes) {
    return names * kSubscriptionOverheadBytes + bytes * kSubscriptionBytesFactor;
  }
  static constexpr int64_t kSubscriptionOverheadBytes = 640;
  static constexpr int64_t kSubscriptionBytesFactor = 4;
  // Asks `quota` (not owned; null: none) before a request adds
  // subscriptions. Call before the first request.
  void SetQuota(SubscriptionQuota* quota) { quota_ = quota; }
  // Sets out's node and parameters and appends the status of every resource
  // subscribed or held to `out->resources` (with the object serving it in the
  // current snapshot, the held variant's label and constraints, and since
  // when the client is stale), while `*budget` lasts: the node
  // costs its encoded size, each resource EstimatedBytes, and resources that
  // no longer fit are counted in out->omitted_resources. Returns false, with
  // nothing charged, when the node alone does not fit. O(names held or
  // subscribed). With a `query` whose access is set, names its reader may
  // not read are left out.
  bool DescribeClient(ClientStatus* out, size_t* budget,
                      const ClientStatusQuery* query = nullptr) const;

  // Sets the time of the responses built from now on (NextResponse), which
  // DescribeClient reports as when a client became stale. The owner sets it
  // before each NextResponse; the Unix epoch until then.
  void set_now(absl::Time now) { now_ = now; }

  // Bytes of a NACK's error detail kept for DescribeClient (cut at a UTF-8
  // character boundary).
  static constexpr size_t kMaxStatusDetailBytes = 1024;

  // Upper bound on names or locators in one request.
  static constexpr int kMaxNamesPerRequest = 10000;
  // Longest type URL accepted (the served ones have under 100 bytes).
  static constexpr size_t kMaxTypeUrlBytes = 512;

 private:
  struct Subscription {
    std::shared_ptr<const Parameters> params;
    bool locator = false;
    // The client has been told about it. Not part of the key.
    mutable bool answered = false;
  };
  // One variant as the client holds it: sent by name, or (locator form) with
  // its constraints. Removal must use the same form.
  struct Held {
    std::shared_ptr<const Variant> variant;
    bool locator = false;
  };
  // The key of a subscription (its form and canonical parameters) or of a
  // held variant (its form and version), read from the entry rather than
  // stored beside it; ordered as the strings FormKey makes of them.
  struct FormKeyView {
    bool locator = false;
    absl::string_view rest;
  };
  static FormKeyView KeyOf(const FormKeyView& key) { return key; }
  static FormKeyView KeyOf(const Subscription& sub) { return {sub.locator, sub.params->canonical}; }
  static FormKeyView KeyOf(const Held& held) { return {held.locator, held.variant->version}; }
  struct ByKey {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      const FormKeyView x = KeyOf(a);
      const FormKeyView y = KeyOf(b);
      if (x.locator != y.locator) return x.locator;  // "L" before "P".
      return x.rest < y.rest;
    }
  };
  // Sorted by key, in a vector with room for one entry inline: a name has
  // nearly always one subscription and one held variant, and every stream
  // keeps a few names, so a tree of heap nodes per name would cost more
  // than the state itself (see BM_PushToClientStream's bytes_per_stream).
  template <typename T>
  using SmallSet = boost::container::flat_set<T, ByKey, boost::container::small_vector<T, 1>>;
  using HeldSet = SmallSet<Held>;
  using SubscriptionSet = SmallSet<Subscription>;
  using NameSet = facet::xds::NameSet;
  // The last NACKed response that carried a name.
  struct NackNote {
    uint64_t response = 0;  // Its number.
    std::string version;    // The rejected version.
    std::shared_ptr<const std::string> detail;
  };
  struct NameState {
    SubscriptionSet subscriptions;
    HeldSet held;
    // Delta: the client claimed a version (initial_resource_versions) this
    // server cannot match to a variant it serves for it.
    bool stale_claim = false;
    // Keys of variants the client rejected (full-state SotW): not offered
    // again until the snapshot changes them.
    NameSet rejected;
    // For DescribeClient: the number of the last response that carried the
    // name, and the last NACKed one that did (null: none; rare, so kept
    // out of line).
    uint64_t sent_in = 0;
    std::unique_ptr<NackNote> nack;
    // When the first response carrying the name that the client has not
    // ACKed since was sent (meaningful while one is in flight or NACKed).
    absl::Time unacked_since;
  };
  // An item of a response as the stream keeps it for the client's ACK or
  // NACK: the variant itself (shared with the snapshot), not copies of its
  // label and version.
  struct SentItem {
    std::string name;
    std::shared_ptr<const Variant> variant;  // Null: a removal without a variant.
    bool removal = false;
    PushedItem ToPushed() const;
  };
  // The items of a response being decided: nearly always one, kept inline.
  // (A type keeps its last response's in a vector: inline there, they made
  // every type state longer and the push walk of BM_PushToClientStream a
  // quarter slower.)
  using SentItems = boost::container::small_vector<SentItem, 1>;
  // Appends the item to what `record` carries and to `sent`.
  static void AddItem(const std::string& name, const std::shared_ptr<const Variant>& variant,
                      bool removal, PushRecord* record, SentItems* sent);
  // Aligned to a cache line: what HasPendingWork reads of every type on
  // every push and ACK (the type, the flags and the pending-work sets, one
  // pointer each while empty: 48 bytes) comes first, in one line per type;
  // what a push to the type reads follows it, within the next two lines,
  // and what a reconnection reads comes last.
  struct alignas(64) TypeState {
    const ResourceType* type = nullptr;  // Null: a type Facet does not serve.
    bool wildcard = false;
    // Wildcard by the legacy rule (first LDS/CDS request named nothing):
    // later requests that name nothing keep it.
    bool legacy_wildcard = false;
    bool seen_request = false;
    bool response_due = false;  // A request changed subscriptions: answer it.
    bool all_dirty = false;     // Every name is to be re-examined.
    // SotW fast path: the last request had locators (its names are not kept).
    bool last_had_locators = true;
    // Pending work: names to re-examine, and the answers they need.
    NameSet dirty;
    NameSet upserts;
    NameSet removals;
    NameSet unanswered;
    std::map<std::string, NameState> names;
    // Sum of Digest64OfParts({name, key}) over held variants: the SotW version_info.
    uint64_t held_digest = 0;
    // Full-state SotW: the held variants of names changed since the last ACK,
    // as they were at that ACK.
    absl::btree_map<std::string, HeldSet> unacked_prior;
    // SotW fast path: the last request's names, when it had no locators.
    std::vector<std::string> last_names;
    std::vector<SentItem> last_items;
    // The number of the last response sent (0: none), whose nonce is that
    // number in decimal, and of the last one the client answered (ACK or
    // NACK): names sent in it or before are no longer in flight.
    uint64_t last_sent = 0;
    uint64_t answered = 0;
    // Read on a reconnection or for a type Facet does not serve: last.
    // The URL of a type Facet does not serve (a served type's is its
    // ResourceType's, which no stream copies); out of line, so that it stays
    // put while types_ grows.
    std::unique_ptr<const std::string> unserved_url;
    const std::string& type_url() const {
      return type != nullptr ? type->type_url() : *unserved_url;
    }
    // SotW: the version_info a reconnecting client's first request carried
    // (null: none; kept only until the first response is decided).
    std::unique_ptr<std::string> resume_version;
  };
  enum class Pending { kNone, kUpsert, kRemoval, kUnanswered };

  // Returns the resource of `state`'s type named `name` (normalised), or null
  // when there is none or this client may not read it.
  const ServedResource* Lookup(const TypeState& state, const std::string& name) const;
  TypeState* StateFor(const std::string& type_url, RequestOutcome* outcome, absl::Status* status);
  // Returns types_ in type URL order (that of the stream's reports).
  boost::container::small_vector<const TypeState*, 4> TypesByUrl() const;
  // Begins applying `request` (a DiscoveryRequest or DeltaDiscoveryRequest
  // whose names were checked): takes the node of the stream's first request
  // that names one, finds or adds its type's state (null, with *status, past
  // Limits::max_types) and says in *outcome what the request makes of the
  // type's last response.
  template <typename Request>
  TypeState* BeginRequest(const Request& request, RequestOutcome* outcome, absl::Status* status) {
    if (request.has_node() && !has_node_) SetNode(request.node());
    TypeState* state = StateFor(request.type_url(), outcome, status);
    if (state == nullptr) return nullptr;
    // A request with error_detail is a NACK, whatever its message says (an
    // empty message included); one without it an ACK.
    const std::optional<std::string> error =
        request.has_error_detail()
            ? std::optional<std::string>(request.error_detail().message().empty()
                                             ? "(NACK without a message)"
                                             : request.error_detail().message())
            : std::nullopt;
    ProcessAckOrNack(*state, request.response_nonce(), error, outcome);
    return state;
  }
  void SetNode(const envoy::config::core::v3::Node& node);
  NameState& Track(TypeState& state, const std::string& name);
  void Untrack(TypeState& state, const std::string& name);
  void SetWildcard(TypeState& state, bool wildcard);
  void AddSubscription(const TypeState& state, const std::string& name, NameState& ns,
                       std::shared_ptr<const Parameters> params, bool locator);
  // Replaces a name's subscriptions, recording the difference as demand.
  void ReplaceSubscriptions(const TypeState& state, const std::string& name, NameState& ns,
                            SubscriptionSet next);
  void NoteDemand(const TypeState& state, const std::string& name, const Subscription& sub,
                  bool added);
  // Notes a subscription's parameters for uniform_params().
  void NoteParams(bool locator, const std::shared_ptr<const Parameters>& params);
  // True when a subscription of `ns` is unknown to a partial snapshot.
  bool HasUnknown(const TypeState& state, const NameState& ns, const std::string& name) const;
  // True when a full-state SotW response of `state` would omit a name whose
  // answer is not known yet (the client would take it as deleted).
  bool OmitsUnknown(const TypeState& state) const;
  void SetHeld(TypeState& state, const std::string& name, NameState& ns, HeldSet held);
  // Counts `name` as holding something (or, !held, nothing any more) under
  // its authority.
  void NoteHeldName(const std::string& name, bool held);
  HeldSet Desired(const TypeState& state, const NameState& ns, const std::string& name) const;
  HeldSet Effective(const TypeState& state, NameState& ns, const std::string& name) const;
  // What Refresh found for the one name of a type it re-examined, when that
  // name is an upsert (a push), for the response PickNext's caller builds
  // next: the pushed name's variants are selected once, not twice. At most
  // one per type; nearly always one, kept inline. Decisions for the types
  // that response does not answer are dropped (their next response decides
  // again).
  struct Decision {
    const TypeState* state = nullptr;
    std::string name;
    HeldSet held;
  };
  using Decisions = boost::container::small_vector<Decision, 1>;
  // Returns what the response being built gives `name` of `state`: what
  // `decisions` says (taken out of it), or else Effective.
  HeldSet Decided(const TypeState& state, NameState& ns, const std::string& name,
                  Decisions* decisions) const;
  // Classifies `name`; *desired gets what its client should hold when the
  // answer is an upsert.
  Pending Classify(TypeState& state, const std::string& name, HeldSet* desired);
  // Re-examines the names of `state` to re-examine, adding what it decided
  // for a lone dirty name that is an upsert to `decisions`.
  void Refresh(TypeState& state, Decisions* decisions);
  // `error`: the NACK's text; nullopt for an ACK.
  void ProcessAckOrNack(TypeState& state, const std::string& nonce,
                        const std::optional<std::string>& error, RequestOutcome* outcome);
  // Records, for DescribeClient, a NACK of the last response of `state`:
  // the `suspects` (or, when none, every resource it carried) are NACKED.
  static void NoteNack(TypeState& state, const std::vector<std::string>& suspects,
                       const std::string& error);
  // Gives the response of `state` that carries `record->items` (`sent`) and
  // settles `names` (every name, when `full_state`) its nonce, in `record`,
  // and remembers what it sent for the client's ACK or NACK. Sets *version
  // to the response's version (of what the stream holds of the type), which
  // `record` gets a copy of only when it lists items.
  void NumberResponse(TypeState& state, const NameSet& names, bool full_state, SentItems sent,
                      PushRecord* record, std::string* version);
  // Records, for DescribeClient, that the response `state` just sent carried
  // `names` (at now_).
  void NoteSent(TypeState& state, uint64_t number, const NameSet& names,
                bool full_state);
  // Whether some type has names to re-examine or answers due.
  bool HasPendingWork() const;
  // Called by whatever can give a type work (see may_have_work_).
  void NoteMayHaveWork() { may_have_work_ = true; }
  // Called once a response is decided, while the types are in cache: the
  // check after the write's completion then finds the answer kept.
  void SettleMayHaveWork() const { static_cast<void>(HasPendingWork()); }
  // Returns the type whose response is due next (null: none); `decisions`
  // gets what Refresh decided for the types it re-examined (see Decision).
  TypeState* PickNext(bool* removal_phase, Decisions* decisions);
  // Returns (and clears) the names the next response of `state` settles.
  static NameSet TakeDue(TypeState& state, bool removal_phase);
  std::string NextNonce();
  void DropIdleName(TypeState& state, const std::string& name);
  void ResumeFromClientVersions();
  bool wraps_plain_resources() const;
  absl::Status CheckNameLimit(int64_t added, int64_t added_bytes, const std::string& type_url,
                              RequestOutcome* outcome);

  // What every push, ACK and write's completion reads comes first (see
  // Core in ads_service.cc, which puts its own hot part before this): the
  // flags, the snapshot, the types and the per-request change lists; then
  // what requests that change subscriptions read (the node's parameters,
  // the subscription counts and quota, the mapping and limits, the held
  // names by authority); last what only reports read.
  Protocol protocol_;
  bool has_node_ = false;
  bool wrap_plain_ = false;
  bool mixed_params_ = false;  // See uniform_params().
  bool record_demand_ = false;
  // A type's first request carried a version_info to resume from.
  bool resume_pending_ = false;
  // False once HasPendingWork found no type with work (it also looks as a
  // response is decided, see SettleMayHaveWork), until something that can
  // give one work runs (a request, a change, a snapshot, a resumption; see
  // NoteMayHaveWork): the check after a write's completion then reads no
  // type's state.
  mutable bool may_have_work_ = true;
  std::shared_ptr<const ServingSnapshot> snapshot_;
  // In the order responses go out (push rank, then type URL), by value: a
  // stream holds a few types, and a tree of them (a node and a copy of the
  // URL each) cost more than their state. Read on every push.
  std::vector<TypeState> types_;
  uint64_t nonce_counter_ = 0;
  absl::Time now_ = absl::UnixEpoch();  // See set_now.
  std::vector<WatchChange> watch_changes_;
  std::vector<DemandChange> demand_changes_;
  absl::flat_hash_map<std::string, int> authority_changes_;
  std::shared_ptr<const Parameters> node_params_;
  int64_t subscribed_names_ = 0;
  int64_t subscribed_bytes_ = 0;
  SubscriptionQuota* quota_ = nullptr;
  std::shared_ptr<const ParameterMapping> mapping_;
  Limits limits_;
  // Names holding a variant, by authority, and the changes
  // TakeAuthorityChanges returns (no entry is zero in either).
  // Sorted, with room for one authority inline: a stream nearly always
  // holds names of one authority (most often "").
  boost::container::flat_map<std::string, int64_t, std::less<>,
                             boost::container::small_vector<std::pair<std::string, int64_t>, 1>>
      held_names_by_authority_;
  // The node, serialized: a stream keeps it only for reports (node()).
  std::string node_bytes_;
  ClientIdentity identity_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_STREAM_STATE_H_
