#include "xds_server/ads/stream_state.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "xds_server/ads/parameter_pool.h"
#include "xds_server/ads/stream_state_internal.h"
#include "xds_server/common/digest.h"
#include "xds_server/common/log_text.h"
#include "xds_server/names/names.h"

namespace facet::xds {
namespace stream_state_internal {

std::string CanonicalName(const std::string& name) {
  absl::StatusOr<std::string> normalized = NormalizeResourceName(name);
  return normalized.ok() ? *normalized : name;
}

absl::Status CheckTypeUrl(const std::string& type_url, absl::string_view request) {
  if (type_url.empty()) return absl::InvalidArgumentError(absl::StrCat(request, " has no type_url"));
  if (type_url.size() <= StreamState::kMaxTypeUrlBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(request, " type_url ", SafeForLog(type_url, 64), " has ", type_url.size(),
                   " bytes; the limit is ", StreamState::kMaxTypeUrlBytes, " bytes"));
}

absl::Status CheckName(const std::string& name, const std::string& type_url,
                       absl::string_view field) {
  if (name.size() <= kMaxResourceNameLength) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, " of a request for ", SafeForLog(type_url), ": the name ", SafeForLog(name, 64),
      " has ", name.size(), " bytes; the limit is ", kMaxResourceNameLength, " bytes"));
}

void SetDigestVersion(uint64_t digest, std::string* version) {
  // Laid out by hand (one per response), not through absl::Hex.
  static constexpr char kDigits[] = "0123456789abcdef";
  version->resize(16);
  char* out = version->data();
  for (int i = 15; i >= 0; --i, digest >>= 4) out[i] = kDigits[digest & 0xf];
}

}  // namespace stream_state_internal

namespace {

using stream_state_internal::FormKey;
using stream_state_internal::HeldDigest;
using stream_state_internal::IsFullStateType;
using stream_state_internal::SetDigestVersion;
using stream_state_internal::SubscriptionBytes;

// Bytes a client's status adds besides its node and parameters.
constexpr size_t kStatusOverheadBytes = 64;

int RankOf(const ResourceType* type) { return type == nullptr ? -1 : type->push_rank(); }

// What a stream serves before its first snapshot: one empty snapshot for
// every stream (an empty Snapshot is some 20 KiB of shard pointers, which
// each stream would otherwise allocate, clear and free as it opens).
const std::shared_ptr<const ServingSnapshot>& EmptyServingSnapshot() {
  static const auto* const empty = new std::shared_ptr<const ServingSnapshot>(
      std::make_shared<ServingSnapshot>(std::make_shared<const Snapshot>()));
  return *empty;
}

}  // namespace

StreamState::StreamState(Protocol protocol, std::shared_ptr<const ParameterMapping> mapping,
                         Limits limits)
    : protocol_(protocol),
      snapshot_(EmptyServingSnapshot()),
      node_params_(ParameterPool::Shared().Intern({})),
      mapping_(std::move(mapping)),
      limits_(limits) {}

void StreamState::SetNode(const envoy::config::core::v3::Node& node) {
  node_bytes_ = node.SerializeAsString();
  has_node_ = true;
  node_params_ = ParameterPool::Shared().Intern(mapping_->ParametersFor(node));
  wrap_plain_ = std::find(node.client_features().begin(), node.client_features().end(),
                          kResourceInSotwFeature) != node.client_features().end();
}

envoy::config::core::v3::Node StreamState::node() const {
  envoy::config::core::v3::Node node;
  // The bytes are the serialization of a node this process parsed.
  (void)node.ParseFromString(node_bytes_);
  return node;
}

StreamState::TypeState* StreamState::StateFor(const std::string& type_url,
                                              RequestOutcome* outcome, absl::Status* status) {
  // A stream holds a few types: a scan beats a tree.
  for (TypeState& state : types_) {
    if (state.type_url() == type_url) return &state;
  }
  if (static_cast<int>(types_.size()) >= limits_.max_types) {
    outcome->limit = RequestOutcome::Limit::kTypes;
    *status = absl::ResourceExhaustedError(absl::StrCat(
        "request for ", SafeForLog(type_url), " would subscribe the stream to more than ",
        limits_.max_types, " type URLs"));
    return nullptr;
  }
  TypeState added;
  added.type = FindResourceType(type_url);
  if (added.type != nullptr && added.type->type_url() != type_url) {
    added.type = nullptr;  // Only full type URLs are served.
  }
  if (added.type == nullptr) added.unserved_url = std::make_unique<const std::string>(type_url);
  const auto after = std::upper_bound(
      types_.begin(), types_.end(), added, [](const TypeState& a, const TypeState& b) {
        return std::make_pair(RankOf(a.type), std::cref(a.type_url())) <
               std::make_pair(RankOf(b.type), std::cref(b.type_url()));
      });
  return &*types_.insert(after, std::move(added));
}

boost::container::small_vector<const StreamState::TypeState*, 4> StreamState::TypesByUrl() const {
  boost::container::small_vector<const TypeState*, 4> out;
  for (const TypeState& state : types_) out.push_back(&state);
  std::sort(out.begin(), out.end(),
            [](const TypeState* a, const TypeState* b) { return a->type_url() < b->type_url(); });
  return out;
}

absl::Status StreamState::CheckNameLimit(int64_t added, int64_t added_bytes,
                                         const std::string& type_url, RequestOutcome* outcome) {
  if (subscribed_names_ + added > limits_.max_names) {
    outcome->limit = RequestOutcome::Limit::kNames;
    return absl::ResourceExhaustedError(absl::StrCat("request for ", SafeForLog(type_url),
                                                     " would subscribe the stream to more than ",
                                                     limits_.max_names, " names"));
  }
  if (subscribed_bytes_ + added_bytes > limits_.max_bytes) {
    outcome->limit = RequestOutcome::Limit::kBytes;
    return absl::ResourceExhaustedError(
        absl::StrCat("request for ", SafeForLog(type_url),
                     " would take the stream's subscribed names and locator parameters beyond ",
                     limits_.max_bytes, " bytes"));
  }
  if (quota_ != nullptr && (added > 0 || added_bytes > 0)) {
    return quota_->Take(
        SubscriptionMemory(std::max<int64_t>(added, 0), std::max<int64_t>(added_bytes, 0)),
        &outcome->limit);
  }
  return absl::OkStatus();
}

StreamState::NameState& StreamState::Track(TypeState& state, const std::string& name) {
  auto [it, inserted] = state.names.try_emplace(name);
  // Names of a wildcard type are watched through the wildcard.
  if (inserted && !state.wildcard) watch_changes_.push_back({state.type_url(), name, false, true});
  return it->second;
}

void StreamState::Untrack(TypeState& state, const std::string& name) {
  auto it = state.names.find(name);
  if (it == state.names.end()) return;
  subscribed_names_ -= static_cast<int64_t>(it->second.subscriptions.size());
  for (const Subscription& sub : it->second.subscriptions) {
    subscribed_bytes_ -= SubscriptionBytes(name.size(), sub.locator, sub.params->params);
    NoteDemand(state, name, sub, false);
  }
  SetHeld(state, name, it->second, {});
  state.names.erase(it);
  state.unacked_prior.erase(name);
  watch_changes_.push_back({state.type_url(), name, false, false});
  // Wildcard-covered names stay watched through the wildcard.
  state.upserts.erase(name);
  state.removals.erase(name);
  state.unanswered.erase(name);
  if (state.wildcard) state.dirty.insert(name);
}

void StreamState::SetWildcard(TypeState& state, bool wildcard) {
  if (state.wildcard == wildcard) return;
  state.wildcard = wildcard;
  state.all_dirty = true;
  watch_changes_.push_back({state.type_url(), "", true, wildcard});
  if (!wildcard) {
    for (const auto& [name, ns] : state.names) {
      watch_changes_.push_back({state.type_url(), name, false, true});
    }
  }
}

void StreamState::AddSubscription(const TypeState& state, const std::string& name, NameState& ns,
                                  std::shared_ptr<const Parameters> params, bool locator) {
  NoteParams(locator, params);
  auto it = ns.subscriptions.find(FormKeyView{locator, params->canonical});
  if (it != ns.subscriptions.end()) {
    // The same subscription again: it takes the new parameters (equal ones)
    // and is answered again.
    it = ns.subscriptions.erase(it);
    ns.subscriptions.insert(it, Subscription{std::move(params), locator, false});
    return;
  }
  it = ns.subscriptions.insert(Subscription{std::move(params), locator, false}).first;
  ++subscribed_names_;
  subscribed_bytes_ += SubscriptionBytes(name.size(), locator, it->params->params);
  NoteDemand(state, name, *it, true);
}

void StreamState::NoteParams(bool locator, const std::shared_ptr<const Parameters>& params) {
  if (locator || !has_node_ || params != node_params_) mixed_params_ = true;
}

void StreamState::ReplaceSubscriptions(const TypeState& state, const std::string& name,
                                       NameState& ns, SubscriptionSet next) {
  subscribed_names_ +=
      static_cast<int64_t>(next.size()) - static_cast<int64_t>(ns.subscriptions.size());
  for (const Subscription& sub : ns.subscriptions) {
    subscribed_bytes_ -= SubscriptionBytes(name.size(), sub.locator, sub.params->params);
  }
  for (const Subscription& sub : next) {
    subscribed_bytes_ += SubscriptionBytes(name.size(), sub.locator, sub.params->params);
  }
  for (const Subscription& sub : next) NoteParams(sub.locator, sub.params);
  if (record_demand_) {
    for (const Subscription& sub : ns.subscriptions) {
      if (next.count(sub) == 0) NoteDemand(state, name, sub, false);
    }
    for (const Subscription& sub : next) {
      if (ns.subscriptions.count(sub) == 0) NoteDemand(state, name, sub, true);
    }
  }
  ns.subscriptions = std::move(next);
}

void StreamState::NoteDemand(const TypeState& state, const std::string& name,
                             const Subscription& sub, bool added) {
  if (!record_demand_ || state.type == nullptr) return;
  demand_changes_.push_back({state.type_url(), name, sub.params, added});
}

std::vector<DemandChange> StreamState::TakeDemandChanges() {
  return std::exchange(demand_changes_, {});
}

std::vector<DemandChange> StreamState::Demands() const {
  std::vector<DemandChange> out;
  if (!record_demand_) return out;
  for (const TypeState* state : TypesByUrl()) {
    if (state->type == nullptr) continue;
    const std::string& url = state->type_url();
    for (const auto& [name, ns] : state->names) {
      for (const Subscription& sub : ns.subscriptions) out.push_back({url, name, sub.params, true});
    }
  }
  return out;
}

const ServedResource* StreamState::Lookup(const TypeState& state, const std::string& name) const {
  if (state.type == nullptr) return nullptr;
  const ServedResource* resource = snapshot_->snapshot().Find(*state.type, name);
  // A resource this client may not read is, for it, one that does not exist.
  if (resource != nullptr && snapshot_->snapshot().access() != nullptr &&
      !snapshot_->snapshot().access()->MayRead(name, identity_)) {
    return nullptr;
  }
  return resource;
}

bool StreamState::HasUnknown(const TypeState& state, const NameState& ns,
                             const std::string& name) const {
  if (state.type == nullptr || !snapshot_->snapshot().partial()) return false;
  const ServedResource* resource = Lookup(state, name);
  for (const Subscription& sub : ns.subscriptions) {
    if (snapshot_->Unknown(resource, *sub.params)) return true;
  }
  return false;
}

bool StreamState::OmitsUnknown(const TypeState& state) const {
  if (protocol_ != Protocol::kSotw || !IsFullStateType(state.type) ||
      !snapshot_->snapshot().partial()) {
    return false;
  }
  for (const auto& [name, ns] : state.names) {
    if (ns.held.empty() && HasUnknown(state, ns, name)) return true;
  }
  return false;
}

void StreamState::SetHeld(TypeState& state, const std::string& name, NameState& ns,
                          HeldSet held) {
  if (protocol_ == Protocol::kSotw && IsFullStateType(state.type)) {
    state.unacked_prior.try_emplace(name, ns.held);
  }
  for (const Held& entry : ns.held) {
    state.held_digest -= HeldDigest(name, entry.locator, *entry.variant);
  }
  for (const Held& entry : held) {
    state.held_digest += HeldDigest(name, entry.locator, *entry.variant);
  }
  if (ns.held.empty() != held.empty()) NoteHeldName(name, !held.empty());
  ns.held = std::move(held);
}

void StreamState::NoteHeldName(const std::string& name, bool held) {
  std::string authority;
  if (IsXdstpName(name)) {
    absl::StatusOr<XdstpName> parsed = ParseXdstpName(name);
    if (parsed.ok()) authority = std::move(parsed->authority);
  }
  auto [it, inserted] = held_names_by_authority_.try_emplace(authority, 0);
  it->second += held ? 1 : -1;
  if (it->second == (held ? 1 : 0)) {
    // The stream came to hold the authority, or no longer does.
    auto [change, added] = authority_changes_.try_emplace(authority, 0);
    change->second += held ? 1 : -1;
    if (change->second == 0) authority_changes_.erase(change);
  }
  if (it->second == 0) held_names_by_authority_.erase(it);
}

std::vector<std::pair<std::string, int>> StreamState::TakeAuthorityChanges() {
  if (authority_changes_.empty()) return {};  // Nearly always: asked after every decision.
  std::vector<std::pair<std::string, int>> out(authority_changes_.begin(),
                                               authority_changes_.end());
  // Frees the table (clear keeps it): a stream's authorities change rarely.
  authority_changes_ = {};
  return out;
}

std::vector<std::string> StreamState::HeldAuthorities() const {
  std::vector<std::string> out;
  out.reserve(held_names_by_authority_.size());
  for (const auto& [authority, names] : held_names_by_authority_) out.push_back(authority);
  return out;
}

void StreamState::ProcessAckOrNack(TypeState& state, const std::string& nonce,
                                   const std::optional<std::string>& error,
                                   RequestOutcome* outcome) {
  outcome->type_url = state.type_url();
  outcome->nonce = nonce;
  if (nonce.empty()) {
    outcome->kind = RequestOutcome::Kind::kInitial;
  } else if (state.last_sent == 0 || nonce != absl::AlphaNum(state.last_sent).Piece()) {
    outcome->kind = RequestOutcome::Kind::kStale;
  } else if (error.has_value()) {
    outcome->kind = RequestOutcome::Kind::kNack;
    outcome->error_detail = *error;
    outcome->nacked.reserve(state.last_items.size());
    for (const SentItem& item : state.last_items) outcome->nacked.push_back(item.ToPushed());
    // Full-state SotW: when the NACKed response changed exactly one resource
    // since the last ACK, that resource is the one rejected, and the client
    // keeps the version it last ACKed (gRPC keeps the previous version of an
    // invalid resource and applies the valid ones). Later complete-set
    // responses carry that version instead of the rejected one. When several
    // changed, the rejected one is unknown and nothing is assumed.
    std::vector<std::string> suspects;
    for (const auto& [name, prior] : state.unacked_prior) {
      auto it = state.names.find(name);
      HeldSet empty;
      const HeldSet& held = it == state.names.end() ? empty : it->second.held;
      bool same = held.size() == prior.size();
      for (auto a = held.begin(), b = prior.begin(); same && a != held.end(); ++a, ++b) {
        same = !ByKey()(*a, *b) && !ByKey()(*b, *a);
      }
      if (!same) suspects.push_back(name);
    }
    NoteNack(state, suspects, outcome->error_detail);
    state.answered = state.last_sent;
    if (suspects.size() == 1) {
      auto it = state.names.find(suspects[0]);
      if (it != state.names.end()) {
        NameState& ns = it->second;
        HeldSet prior = std::move(state.unacked_prior[suspects[0]]);
        for (const Held& entry : ns.held) {
          if (prior.count(entry) == 0) {
            ns.rejected.insert(FormKey(entry.locator, entry.variant->version));
          }
        }
        SetHeld(state, suspects[0], ns, std::move(prior));
        state.dirty.insert(suspects[0]);
      }
    }
    state.unacked_prior.clear();
  } else {
    outcome->kind = RequestOutcome::Kind::kAck;
    state.unacked_prior.clear();
    state.answered = state.last_sent;
  }
}

void StreamState::AdoptSnapshot(std::shared_ptr<const ServingSnapshot> snapshot) {
  NoteMayHaveWork();
  snapshot_ = std::move(snapshot);
}

void StreamState::SetSnapshot(std::shared_ptr<const ServingSnapshot> snapshot) {
  NoteMayHaveWork();
  const Snapshot& next = snapshot->snapshot();
  const bool incremental =
      !next.changes().all && next.base_version() == snapshot_->snapshot().version();
  snapshot_ = std::move(snapshot);
  if (!incremental) {
    MarkAllDirty();
    return;
  }
  for (const auto& [type, changes] : snapshot_->snapshot().changes().by_type) {
    for (const auto* list : {&changes.added, &changes.changed, &changes.removed}) {
      for (const std::string& name : *list) MarkDirty(*type, name);
    }
  }
}

void StreamState::MarkDirty(const ResourceType& type, const std::string& name) {
  NoteMayHaveWork();
  // A stream holds a few types: a scan of a vector by pointer beats
  // comparing type URLs (long and alike) down the map.
  for (TypeState& state : types_) {
    if (state.type != &type) continue;
    if (state.wildcard || state.names.count(name) > 0) state.dirty.insert(name);
    return;
  }
}

void StreamState::MarkAllDirty() {
  NoteMayHaveWork();
  for (TypeState& state : types_) state.all_dirty = true;
}

std::vector<WatchChange> StreamState::TakeWatchChanges() { return std::exchange(watch_changes_, {}); }

std::vector<WatchChange> StreamState::Watches() const {
  std::vector<WatchChange> out;
  for (const TypeState* state : TypesByUrl()) {
    const std::string& url = state->type_url();
    if (state->wildcard) out.push_back({url, "", true, true});
    for (const auto& [name, ns] : state->names) out.push_back({url, name, false, true});
  }
  return out;
}

StreamState::HeldSet StreamState::Desired(const TypeState& state, const NameState& ns,
                                          const std::string& name) const {
  HeldSet desired;
  if (state.type == nullptr) return desired;
  const ServedResource* resource = Lookup(state, name);
  if (resource == nullptr) return desired;
  bool plain = false;
  for (const Subscription& subscription : ns.subscriptions) {
    plain = plain || !subscription.locator;
    if (auto variant = snapshot_->Select(*resource, *subscription.params)) {
      desired.insert(Held{std::move(variant), subscription.locator});
    }
  }
  if (state.wildcard && !plain) {
    if (auto variant = snapshot_->Select(*resource, *node_params_)) {
      desired.insert(Held{std::move(variant), false});
    }
  }
  return desired;
}

StreamState::HeldSet StreamState::Effective(const TypeState& state, NameState& ns,
                                            const std::string& name) const {
  HeldSet desired = Desired(state, ns, name);
  if (ns.rejected.empty()) return desired;
  // A rejected variant stays rejected until the snapshot stops selecting it.
  // Keys of FormKey's making: the form's letter, then the version.
  auto key_of = [](const std::string& key) {
    return FormKeyView{key[0] == 'L', absl::string_view(key).substr(1)};
  };
  ns.rejected.EraseIf([&](const std::string& key) { return desired.count(key_of(key)) == 0; });
  for (const std::string& key : ns.rejected) {
    const auto found = desired.find(key_of(key));
    const Held rejected = *found;
    desired.erase(found);
    // In its place, what the client kept: the held variant of the same form
    // and constraints.
    for (const Held& held : ns.held) {
      if (held.locator == rejected.locator &&
          held.variant->constraints.ToString() == rejected.variant->constraints.ToString()) {
        desired.insert(held);
      }
    }
  }
  return desired;
}

StreamState::HeldSet StreamState::Decided(const TypeState& state, NameState& ns,
                                          const std::string& name, Decisions* decisions) const {
  for (Decision& decision : *decisions) {
    if (decision.state == &state && decision.name == name) {
      decision.state = nullptr;  // Taken.
      return std::move(decision.held);
    }
  }
  return Effective(state, ns, name);
}

StreamState::Pending StreamState::Classify(TypeState& state, const std::string& name,
                                          HeldSet* desired_out) {
  auto it = state.names.find(name);
  NameState empty_copy;
  NameState& ns = it == state.names.end() ? empty_copy : it->second;
  // A partial source that does not know yet what a subscription selects:
  // keep what the client holds and answer once it does.
  if (HasUnknown(state, ns, name)) return Pending::kNone;
  HeldSet desired = Effective(state, ns, name);
  bool send = false;
  bool drop = ns.stale_claim;
  for (const Held& entry : desired) send = send || ns.held.count(entry) == 0;
  for (const Held& entry : ns.held) drop = drop || desired.count(entry) == 0;
  if (send) {
    *desired_out = std::move(desired);
    return Pending::kUpsert;
  }
  if (drop) return Pending::kRemoval;
  // Subscriptions not yet answered: in delta, those the held variants already
  // answer need nothing more; those that select nothing hear "does not exist".
  bool unanswered = false;
  for (const Subscription& sub : ns.subscriptions) {
    if (sub.answered) continue;
    if (protocol_ == Protocol::kDelta && !desired.empty()) {
      const ServedResource* resource =
          Lookup(state, name);
      if (resource != nullptr && snapshot_->Select(*resource, *sub.params) != nullptr) {
        sub.answered = true;
        continue;
      }
    }
    unanswered = true;
  }
  return unanswered ? Pending::kUnanswered : Pending::kNone;
}

void StreamState::Refresh(TypeState& state, Decisions* decisions) {
  if (state.all_dirty) {
    state.all_dirty = false;
    for (const auto& [name, ns] : state.names) state.dirty.insert(name);
    if (state.wildcard && state.type != nullptr) {
      for (const auto& [name, resource] : snapshot_->snapshot().resources(*state.type)) {
        state.dirty.insert(name);
      }
    }
  }
  NameSet dirty = std::exchange(state.dirty, {});
  for (const std::string& name : dirty) {
    state.upserts.erase(name);
    state.removals.erase(name);
    state.unanswered.erase(name);
    HeldSet desired;
    switch (Classify(state, name, &desired)) {
      case Pending::kUpsert:
        if (dirty.size() == 1) {
          // A push: one name to re-examine. What it decided goes to the
          // response (at most one decision per type, so that taking one is
          // O(types), never O(names)), and when it is the one upsert, its
          // set becomes the upserts' instead of a copy. (Nothing follows the
          // loop.)
          decisions->push_back({&state, name, std::move(desired)});
          if (state.upserts.empty()) {
            state.upserts = std::move(dirty);
            return;
          }
        }
        state.upserts.insert(name);
        break;
      case Pending::kRemoval:
        state.removals.insert(name);
        break;
      case Pending::kUnanswered:
        state.unanswered.insert(name);
        break;
      case Pending::kNone:
        DropIdleName(state, name);
        break;
    }
  }
}

bool StreamState::HasPendingWork() const {
  if (!may_have_work_) return false;
  for (const TypeState& state : types_) {
    if (state.all_dirty || state.response_due || !state.dirty.empty() || !state.upserts.empty() ||
        !state.removals.empty() || !state.unanswered.empty()) {
      return true;
    }
  }
  may_have_work_ = false;
  return false;
}

StreamState::TypeState* StreamState::PickNext(bool* removal_phase, Decisions* decisions) {
  // Most calls (after an ACK, after a write) find nothing to do: say so
  // without re-examining anything.
  if (!HasPendingWork()) return nullptr;
  decisions->clear();
  for (TypeState& state : types_) Refresh(state, decisions);
  // Full-state SotW responses wait while they would omit an unknown name.
  auto ready = [this](const TypeState& state) { return !OmitsUnknown(state); };
  *removal_phase = false;
  // Additions and updates, referenced types first.
  for (TypeState& state : types_) {
    if (!state.upserts.empty() && ready(state)) return &state;
  }
  // Answers to subscription changes that bring nothing new.
  for (TypeState& state : types_) {
    if ((state.response_due || !state.unanswered.empty()) && ready(state)) return &state;
  }
  // Removals, referencing types first.
  *removal_phase = true;
  for (auto state = types_.rbegin(); state != types_.rend(); ++state) {
    if (!state->removals.empty() && ready(*state)) return &*state;
  }
  return nullptr;
}

void StreamState::DropIdleName(TypeState& state, const std::string& name) {
  // Wildcard-covered names that no longer hold anything need no state.
  auto it = state.names.find(name);
  if (it != state.names.end() && it->second.subscriptions.empty() && it->second.held.empty() &&
      !it->second.stale_claim && it->second.rejected.empty()) {
    Untrack(state, name);
    state.dirty.erase(name);
  }
}

StreamState::NameSet StreamState::TakeDue(TypeState& state, bool removal_phase) {
  if (removal_phase) return std::exchange(state.removals, {});
  NameSet names = std::exchange(state.upserts, {});
  names.merge(state.unanswered);
  return names;
}

// The nonce of response number n is n in decimal (ProcessAckOrNack reads it
// back from TypeState::last_sent).
std::string StreamState::NextNonce() { return absl::StrCat(++nonce_counter_); }

PushedItem StreamState::SentItem::ToPushed() const {
  if (variant == nullptr) return {name, "", "", removal};
  return {name, variant->label, variant->version, removal};
}

void StreamState::AddItem(const std::string& name, const std::shared_ptr<const Variant>& variant,
                          bool removal, PushRecord* record, SentItems* sent) {
  sent->push_back({name, variant, removal});
  if (record->with_items) record->items.push_back(sent->back().ToPushed());
}

void StreamState::NumberResponse(TypeState& state, const NameSet& names, bool full_state,
                                 SentItems sent, PushRecord* record, std::string* version) {
  SetDigestVersion(state.held_digest, version);
  record->type_url = state.type_url();
  if (record->with_items) {
    record->version_info = *version;
  } else {
    record->version_info.clear();
  }
  record->nonce = NextNonce();
  state.response_due = false;
  // Into the room the type's last items had (nearly always the same size).
  state.last_items.assign(std::make_move_iterator(sent.begin()),
                          std::make_move_iterator(sent.end()));
  state.last_items.shrink_to_fit();
  NoteSent(state, nonce_counter_, names, full_state);
}

std::vector<std::tuple<std::string, std::string, std::string>> StreamState::Holdings() const {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const TypeState* state : TypesByUrl()) {
    for (const auto& [name, ns] : state->names) {
      for (const Held& entry : ns.held) {
        out.emplace_back(state->type_url(), name, entry.variant->version);
      }
    }
  }
  return out;
}

void StreamState::NoteNack(TypeState& state, const std::vector<std::string>& suspects,
                           const std::string& error) {
  auto detail = std::make_shared<const std::string>(
      error.substr(0, Utf8PrefixLength(error, kMaxStatusDetailBytes)));
  std::map<std::string, std::string> carried;  // name -> version
  for (const SentItem& item : state.last_items) {
    if (!item.removal) carried[item.name] = item.variant->version;
  }
  auto mark = [&](const std::string& name) {
    auto it = state.names.find(name);
    auto version = carried.find(name);
    if (it == state.names.end() || version == carried.end()) return;
    it->second.nack = std::make_unique<NackNote>(NackNote{state.last_sent, version->second, detail});
  };
  if (suspects.empty()) {
    for (const auto& [name, version] : carried) mark(name);
  } else {
    for (const std::string& name : suspects) mark(name);
  }
}

void StreamState::NoteSent(TypeState& state, uint64_t number, const NameSet& names,
                           bool full_state) {
  state.last_sent = number;
  const uint64_t answered = state.answered;
  auto sent = [&](NameState& ns) {
    // Stale already: a response carrying it is in flight, or was NACKED.
    const bool stale =
        ns.sent_in > answered || (ns.nack != nullptr && ns.nack->response >= ns.sent_in);
    if (!stale) ns.unacked_since = now_;
    ns.sent_in = number;
  };
  if (full_state) {
    for (auto& [name, ns] : state.names) sent(ns);
    return;
  }
  for (const std::string& name : names) {
    auto it = state.names.find(name);
    if (it != state.names.end()) sent(it->second);
  }
}

bool StreamState::DescribeClient(ClientStatus* out, size_t* budget,
                                 const ClientStatusQuery* query) const {
  const ClientAccess* access = query == nullptr ? nullptr : query->access.get();
  size_t node_cost = node_bytes_.size() + kStatusOverheadBytes;
  for (const auto& [key, value] : node_params_->params) node_cost += key.size() + value.size();
  if (node_cost > *budget) return false;
  *budget -= node_cost;
  out->delta = protocol_ == Protocol::kDelta;
  if (has_node_) out->node = node();
  out->parameters = node_params_->params;
  auto add = [&](ResourceStatus status) {
    const size_t cost = EstimatedBytes(status);
    if (cost > *budget) {
      ++out->omitted_resources;
      return;
    }
    *budget -= cost;
    out->resources.push_back(std::move(status));
  };
  for (const TypeState* type_state : TypesByUrl()) {
    const TypeState& state = *type_state;
    const std::string& url = state.type_url();
    for (const auto& [name, ns] : state.names) {
      if (access != nullptr && !access->MayRead(name, query->reader)) continue;
      const ServedResource* resource = snapshot_ == nullptr ? nullptr : Lookup(state, name);
      if (resource != nullptr && resource->owner.name.empty()) resource = nullptr;  // A relay's.
      if (ns.held.empty()) {
        if (ns.subscriptions.empty()) continue;  // Wildcard-covered, nothing held.
        bool answered = !HasUnknown(state, ns, name);
        for (const Subscription& sub : ns.subscriptions) answered = answered && sub.answered;
        ResourceStatus status;
        status.type_url = url;
        status.name = name;
        if (resource != nullptr) status.object = resource->owner.ToString();
        status.state =
            answered ? ResourceStatus::State::kDoesNotExist : ResourceStatus::State::kRequested;
        add(std::move(status));
        continue;
      }
      for (const Held& held : ns.held) {
        ResourceStatus status;
        status.type_url = url;
        status.name = name;
        status.version = held.variant->version;
        if (resource != nullptr) status.object = resource->owner.ToString();
        status.variant = held.variant->label;
        if (!held.variant->constraints.unconstrained()) {
          status.constraints = held.variant->constraints.ToString();
        }
        if (ns.nack != nullptr && ns.nack->response >= ns.sent_in) {
          status.state = ResourceStatus::State::kNacked;
          status.nacked_version = ns.nack->version;
          status.error_detail = ns.nack->detail;
          status.stale_since = ns.unacked_since;
        } else if (ns.sent_in <= state.answered) {
          status.state = ResourceStatus::State::kAcked;
        } else {
          status.state = ResourceStatus::State::kRequested;
          status.stale_since = ns.unacked_since;
        }
        add(std::move(status));
      }
    }
  }
  return true;
}

}  // namespace facet::xds
