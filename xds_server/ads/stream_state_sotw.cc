// StreamState's SotW half: requests that carry the whole subscription set,
// and responses that carry every resource of a full-state type.
#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "xds_server/ads/stream_state.h"
#include "xds_server/ads/stream_state_internal.h"
#include "xds_server/common/digest.h"
#include "xds_server/common/log_text.h"

namespace facet::xds {

using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;
using stream_state_internal::CanonicalName;
using stream_state_internal::CheckName;
using stream_state_internal::CheckTypeUrl;
using stream_state_internal::DigestVersion;
using stream_state_internal::HeldDigest;
using stream_state_internal::IsFullStateType;
using stream_state_internal::kWildcard;
using stream_state_internal::SubscriptionBytes;

bool StreamState::wraps_plain_resources() const { return wrap_plain_; }

absl::Status StreamState::OnRequest(const DiscoveryRequest& request, RequestOutcome* outcome) {
  NoteMayHaveWork();
  if (absl::Status s = CheckTypeUrl(request.type_url(), "DiscoveryRequest"); !s.ok()) return s;
  if (request.resource_names_size() + request.resource_locators_size() > kMaxNamesPerRequest) {
    return absl::InvalidArgumentError(
        absl::StrCat("DiscoveryRequest for ", SafeForLog(request.type_url()), " names more than ",
                     kMaxNamesPerRequest, " resources"));
  }
  for (const std::string& name : request.resource_names()) {
    if (absl::Status s = CheckName(name, request.type_url(), "resource_names"); !s.ok()) return s;
  }
  for (const auto& locator : request.resource_locators()) {
    if (absl::Status s = CheckName(locator.name(), request.type_url(), "resource_locators");
        !s.ok()) {
      return s;
    }
  }
  absl::Status status;
  TypeState* found = BeginRequest(request, outcome, &status);
  if (found == nullptr) return status;
  TypeState& state = *found;

  // Fast path: the same names as last time (every ACK repeats them) change
  // nothing.
  if (state.seen_request && !state.last_had_locators && request.resource_locators_size() == 0 &&
      std::equal(request.resource_names().begin(), request.resource_names().end(),
                 state.last_names.begin(), state.last_names.end())) {
    return absl::OkStatus();
  }

  // SotW requests carry the complete subscription set.
  std::map<std::string, SubscriptionSet> next;
  bool wildcard = false;
  for (const std::string& name : request.resource_names()) {
    if (name == kWildcard) {
      wildcard = true;
      continue;
    }
    next[CanonicalName(name)].insert(Subscription{node_params_, false, false});
  }
  for (const auto& locator : request.resource_locators()) {
    if (locator.name() == kWildcard) {
      wildcard = true;
      continue;
    }
    auto params = std::make_shared<Parameters>(
        ParameterSet(locator.dynamic_parameters().begin(), locator.dynamic_parameters().end()));
    next[CanonicalName(locator.name())].insert(Subscription{std::move(params), true, false});
  }
  if (next.empty() && !wildcard && IsFullStateType(state.type) &&
      (!state.seen_request || state.legacy_wildcard)) {
    // Legacy wildcard: the first LDS/CDS request names nothing, and so do the
    // ACKs that follow it. (After explicit names, an empty list unsubscribes.)
    wildcard = true;
    state.legacy_wildcard = true;
  } else {
    state.legacy_wildcard = false;
  }
  int64_t added = 0;
  int64_t added_bytes = 0;
  for (const auto& [name, subs] : next) {
    auto it = state.names.find(name);
    added += static_cast<int64_t>(subs.size()) -
             (it == state.names.end() ? 0 : static_cast<int64_t>(it->second.subscriptions.size()));
    for (const Subscription& sub : subs) {
      added_bytes += SubscriptionBytes(name.size(), sub.locator, sub.params->params);
    }
    if (it == state.names.end()) continue;
    for (const Subscription& sub : it->second.subscriptions) {
      added_bytes -= SubscriptionBytes(name.size(), sub.locator, sub.params->params);
    }
  }
  // Names the request no longer lists lose their subscriptions: the request
  // is checked against what the stream will hold, not the sum of both.
  for (const auto& [name, ns] : state.names) {
    if (ns.subscriptions.empty() || next.count(name) > 0) continue;
    added -= static_cast<int64_t>(ns.subscriptions.size());
    for (const Subscription& sub : ns.subscriptions) {
      added_bytes -= SubscriptionBytes(name.size(), sub.locator, sub.params->params);
    }
  }
  if (added > 0 || added_bytes > 0) {
    if (absl::Status limit = CheckNameLimit(added, added_bytes, state.type_url(), outcome);
        !limit.ok()) {
      return limit;
    }
  }

  if (!state.seen_request && request.response_nonce().empty() && !request.version_info().empty()) {
    state.resume_version = std::make_unique<std::string>(request.version_info());
    resume_pending_ = true;
  }
  bool changed = !state.seen_request || wildcard != state.wildcard;
  SetWildcard(state, wildcard);
  // Keep what the client holds for names still subscribed (or still covered
  // by the wildcard); forget the rest, so a resubscription sends it again.
  std::vector<std::string> gone;
  for (auto& [name, ns] : state.names) {
    auto found_next = next.find(name);
    if (found_next == next.end()) {
      if (ns.subscriptions.empty()) continue;  // Wildcard-covered only.
      if (state.wildcard) {
        ReplaceSubscriptions(state, name, ns, {});
        state.dirty.insert(name);
      } else {
        gone.push_back(name);
      }
      changed = true;
      continue;
    }
    SubscriptionSet& subs = found_next->second;
    bool same = subs.size() == ns.subscriptions.size();
    for (const Subscription& sub : subs) {
      auto old = ns.subscriptions.find(sub);
      if (old == ns.subscriptions.end()) {
        same = false;
      } else {
        sub.answered = old->answered;
      }
    }
    if (!same) {
      ReplaceSubscriptions(state, name, ns, std::move(subs));
      state.dirty.insert(name);
      changed = true;
    }
    next.erase(found_next);
  }
  for (const std::string& name : gone) Untrack(state, name);
  for (auto& [name, subs] : next) {
    NameState& ns = Track(state, name);
    state.dirty.insert(name);
    ReplaceSubscriptions(state, name, ns, std::move(subs));
    changed = true;
  }
  state.seen_request = true;
  state.last_had_locators = request.resource_locators_size() > 0;
  state.last_names.assign(request.resource_names().begin(), request.resource_names().end());
  if (changed) state.response_due = true;
  if (outcome->kind == RequestOutcome::Kind::kAck && changed) {
    outcome->kind = RequestOutcome::Kind::kSubscriptionOnly;
  }
  return absl::OkStatus();
}

void StreamState::ResumeFromClientVersions() {
  if (!std::exchange(resume_pending_, false)) return;
  NoteMayHaveWork();
  for (TypeState& state : types_) {
    if (state.resume_version == nullptr) continue;
    const std::string claimed = *std::exchange(state.resume_version, nullptr);
    // What this stream would hold after answering: every subscribed (or
    // wildcard-covered) name with its selected variants.
    std::map<std::string, HeldSet> would_hold;
    for (const auto& [name, ns] : state.names) {
      HeldSet desired = Desired(state, ns, name);
      if (!desired.empty()) would_hold[name] = std::move(desired);
    }
    if (state.wildcard && state.type != nullptr) {
      static const NameState kEmpty;
      for (const auto& [name, resource] : snapshot_->snapshot().resources(*state.type)) {
        if (state.names.count(name) > 0) continue;
        HeldSet desired = Desired(state, kEmpty, name);
        if (!desired.empty()) would_hold[name] = std::move(desired);
      }
    }
    uint64_t digest = 0;
    for (const auto& [name, held] : would_hold) {
      for (const Held& entry : held) {
        digest += HeldDigest(name, entry.locator, *entry.variant);
      }
    }
    if (DigestVersion(digest) != claimed) continue;
    for (auto& [name, held] : would_hold) {
      NameState& ns = Track(state, name);
      SetHeld(state, name, ns, std::move(held));
    }
    for (auto& [name, ns] : state.names) {
      for (const Subscription& sub : ns.subscriptions) sub.answered = true;
    }
    state.unacked_prior.clear();
    state.response_due = false;
  }
}

const std::string& SotwResponse::Resource::EncodedAny() const {
  return wrapped ? variant->EncodedWrappedAny(locator) : variant->EncodedAny();
}

DiscoveryResponse SotwResponse::ToMessage() const {
  DiscoveryResponse message;
  message.set_version_info(version_info);
  for (const Resource& resource : resources) {
    (void)message.add_resources()->ParseFromString(resource.EncodedAny());
  }
  message.set_type_url(std::string(type_url));
  message.set_nonce(nonce);
  return message;
}

bool StreamState::NextResponse(DiscoveryResponse* response, PushRecord* record) {
  SotwResponse next;
  if (!NextResponse(&next, record)) return false;
  *response = next.ToMessage();
  return true;
}

bool StreamState::NextResponse(SotwResponse* response, PushRecord* record) {
  ResumeFromClientVersions();
  while (true) {
    bool removal_phase = false;
    Decisions decisions;
    TypeState* state = PickNext(&removal_phase, &decisions);
    if (state == nullptr) return false;
    const bool full_state = IsFullStateType(state->type);

    // This response settles the upserts and unanswered names (and, in the
    // removal phase, the removals); a full-state one answers everything.
    NameSet names = TakeDue(*state, removal_phase);
    // What the response carries goes straight into it and into what the
    // stream keeps of it, without a list in between.
    // (A SotW removal of a name in a type that is not full-state carries
    // nothing.)
    const size_t expected =
        full_state ? state->names.size() : (removal_phase ? 0 : names.size());
    record->items.clear();
    if (record->with_items) record->items.reserve(expected);
    SentItems sent;
    sent.reserve(expected);
    response->resources.clear();
    response->resources.reserve(expected);
    const bool wrap_plain = wraps_plain_resources();
    const auto carry = [&](const std::string& name, const Held& entry) {
      AddItem(name, entry.variant, /*removal=*/false, record, &sent);
      // A locator's variant, or any for a client that reads wrappers, goes
      // in the shared, pre-encoded Resource wrapper.
      response->resources.push_back({entry.variant, entry.locator || wrap_plain, entry.locator});
    };
    for (const std::string& name : names) {
      NameState& ns = Track(*state, name);  // A wildcard-covered name may be new.
      HeldSet desired = Decided(*state, ns, name, &decisions);
      SetHeld(*state, name, ns, std::move(desired));
      if (!full_state && !removal_phase) {
        for (const Held& entry : ns.held) carry(name, entry);
      }
      for (const Subscription& sub : ns.subscriptions) sub.answered = true;
    }
    if (full_state) {
      for (auto& [name, ns] : state->names) {
        for (const Subscription& sub : ns.subscriptions) sub.answered = true;
        for (const Held& entry : ns.held) carry(name, entry);
      }
    }
    for (const std::string& name : names) DropIdleName(*state, name);
    if (removal_phase && !full_state && !state->response_due) {
      continue;  // SotW RDS/EDS removals are silent: the client just stops using them.
    }

    NumberResponse(*state, names, full_state, std::move(sent), record, &response->version_info);
    response->type_url = state->type_url();
    response->nonce = record->nonce;
    SettleMayHaveWork();
    return true;
  }
}

}  // namespace facet::xds
