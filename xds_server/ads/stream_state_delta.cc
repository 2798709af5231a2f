// StreamState's delta half: requests that subscribe and unsubscribe names
// incrementally, and responses that carry only what changed.
#include <utility>

#include "absl/strings/str_cat.h"
#include "xds_server/ads/stream_state.h"
#include "xds_server/ads/stream_state_internal.h"
#include "xds_server/common/log_text.h"

namespace facet::xds {

using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::ResourceName;
using stream_state_internal::CanonicalName;
using stream_state_internal::CheckName;
using stream_state_internal::CheckTypeUrl;
using stream_state_internal::IsFullStateType;
using stream_state_internal::kWildcard;
using stream_state_internal::SubscriptionBytes;

absl::Status StreamState::OnRequest(const DeltaDiscoveryRequest& request, RequestOutcome* outcome) {
  NoteMayHaveWork();
  if (absl::Status s = CheckTypeUrl(request.type_url(), "DeltaDiscoveryRequest"); !s.ok()) {
    return s;
  }
  if (request.resource_names_subscribe_size() + request.resource_locators_subscribe_size() >
          kMaxNamesPerRequest ||
      request.resource_names_unsubscribe_size() + request.resource_locators_unsubscribe_size() >
          kMaxNamesPerRequest ||
      request.initial_resource_versions_size() > kMaxNamesPerRequest) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeltaDiscoveryRequest for ", SafeForLog(request.type_url()),
                     " names more than ", kMaxNamesPerRequest, " resources"));
  }
  // What the subscriptions would add (duplicates and names already
  // subscribed counted too: an upper bound, checked before anything changes).
  int64_t added_bytes = 0;
  for (const std::string& name : request.resource_names_subscribe()) {
    if (absl::Status s = CheckName(name, request.type_url(), "resource_names_subscribe"); !s.ok()) {
      return s;
    }
    added_bytes += static_cast<int64_t>(name.size());
  }
  for (const auto& locator : request.resource_locators_subscribe()) {
    if (absl::Status s =
            CheckName(locator.name(), request.type_url(), "resource_locators_subscribe");
        !s.ok()) {
      return s;
    }
    added_bytes +=
        SubscriptionBytes(locator.name().size(), /*locator=*/true, locator.dynamic_parameters());
  }
  for (const auto& [name, version] : request.initial_resource_versions()) {
    if (absl::Status s = CheckName(name, request.type_url(), "initial_resource_versions");
        !s.ok()) {
      return s;
    }
  }
  absl::Status status;
  TypeState* found = BeginRequest(request, outcome, &status);
  if (found == nullptr) return status;
  TypeState& state = *found;
  if (absl::Status limit = CheckNameLimit(
          request.resource_names_subscribe_size() + request.resource_locators_subscribe_size(),
          added_bytes, state.type_url(), outcome);
      !limit.ok()) {
    return limit;
  }

  if (!state.seen_request) {
    // What the client holds from an earlier stream. A claimed version this
    // server does not serve for it is replaced (or removed) below.
    for (const auto& [name, version] : request.initial_resource_versions()) {
      const std::string canonical = CanonicalName(name);
      NameState& ns = Track(state, canonical);
      state.dirty.insert(canonical);
      const ServedResource* resource = Lookup(state, canonical);
      std::shared_ptr<const Variant> match;
      if (resource != nullptr) {
        for (const auto& variant : resource->variants) {
          if (variant->version == version) match = variant;
        }
      }
      if (match != nullptr) {
        HeldSet held = ns.held;
        Held claimed{std::move(match), false};
        if (auto same = held.find(claimed); same != held.end()) held.erase(same);
        held.insert(std::move(claimed));
        SetHeld(state, canonical, ns, std::move(held));
      } else {
        ns.stale_claim = true;
      }
    }
    if (request.resource_names_subscribe_size() == 0 &&
        request.resource_locators_subscribe_size() == 0 && IsFullStateType(state.type)) {
      SetWildcard(state, true);
    }
  }
  for (const std::string& name : request.resource_names_subscribe()) {
    if (name == kWildcard) {
      SetWildcard(state, true);
      continue;
    }
    const std::string canonical = CanonicalName(name);
    AddSubscription(state, canonical, Track(state, canonical), node_params_, /*locator=*/false);
    state.dirty.insert(canonical);
  }
  for (const auto& locator : request.resource_locators_subscribe()) {
    auto params = std::make_shared<Parameters>(
        ParameterSet(locator.dynamic_parameters().begin(), locator.dynamic_parameters().end()));
    const std::string canonical = CanonicalName(locator.name());
    AddSubscription(state, canonical, Track(state, canonical), std::move(params),
                    /*locator=*/true);
    state.dirty.insert(canonical);
  }
  // After an unsubscribe the client forgets the resource; a name the
  // wildcard still covers is sent again, anything else is dropped silently.
  auto after_unsubscribe = [&](const std::string& name, NameState& ns) {
    if (ns.subscriptions.empty() && !state.wildcard) {
      Untrack(state, name);
    } else {
      state.dirty.insert(name);
    }
  };
  bool wildcard_unsubscribed = false;
  for (const std::string& name : request.resource_names_unsubscribe()) {
    if (name == kWildcard) {
      // Once per request: each pass looks at every name.
      if (std::exchange(wildcard_unsubscribed, true)) continue;
      SetWildcard(state, false);
      // Names held only through the wildcard are forgotten with it.
      std::vector<std::string> idle;
      for (const auto& [n, ns] : state.names) {
        if (ns.subscriptions.empty()) idle.push_back(n);
      }
      for (const std::string& n : idle) Untrack(state, n);
      continue;
    }
    const std::string canonical = CanonicalName(name);
    auto it = state.names.find(canonical);
    if (it == state.names.end()) continue;
    NameState& ns = it->second;
    for (auto sub = ns.subscriptions.begin(); sub != ns.subscriptions.end();) {
      if (sub->locator) {
        ++sub;
      } else {
        NoteDemand(state, canonical, *sub, false);
        sub = ns.subscriptions.erase(sub);
        --subscribed_names_;
        subscribed_bytes_ -= static_cast<int64_t>(canonical.size());
      }
    }
    HeldSet held;
    for (const Held& entry : ns.held) {
      if (entry.locator) held.insert(held.end(), entry);
    }
    SetHeld(state, canonical, ns, std::move(held));
    after_unsubscribe(canonical, ns);
  }
  for (const auto& locator : request.resource_locators_unsubscribe()) {
    const std::string name = CanonicalName(locator.name());
    auto it = state.names.find(name);
    if (it == state.names.end()) continue;
    Parameters params(
        ParameterSet(locator.dynamic_parameters().begin(), locator.dynamic_parameters().end()));
    auto sub = it->second.subscriptions.find(FormKeyView{true, params.canonical});
    if (sub != it->second.subscriptions.end()) {
      NoteDemand(state, name, *sub, false);
      subscribed_bytes_ -= SubscriptionBytes(name.size(), /*locator=*/true, params.params);
      it->second.subscriptions.erase(sub);
      --subscribed_names_;
    }
    after_unsubscribe(name, it->second);
  }
  state.seen_request = true;
  return absl::OkStatus();
}

DeltaDiscoveryResponse DeltaResponse::ToMessage() const {
  DeltaDiscoveryResponse message;
  message.set_system_version_info(system_version_info);
  for (const Resource& resource : resources) {
    const absl::string_view bytes = resource.Encoded();
    (void)message.add_resources()->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  }
  message.set_type_url(std::string(type_url));
  message.set_nonce(nonce);
  for (const std::string& name : removed_resources) message.add_removed_resources(name);
  for (const ResourceName& name : removed_resource_names) {
    *message.add_removed_resource_names() = name;
  }
  return message;
}

bool StreamState::NextResponse(DeltaDiscoveryResponse* response, PushRecord* record) {
  DeltaResponse next;
  if (!NextResponse(&next, record)) return false;
  *response = next.ToMessage();
  return true;
}

bool StreamState::NextResponse(DeltaResponse* response, PushRecord* record) {
  while (true) {
    bool removal_phase = false;
    Decisions decisions;
    TypeState* state = PickNext(&removal_phase, &decisions);
    if (state == nullptr) return false;
    state->response_due = false;
    *response = DeltaResponse();
    record->items.clear();
    SentItems sent;
    NameSet names = TakeDue(*state, removal_phase);
    auto remove = [&](const std::string& name, const Held& entry) {
      if (entry.locator) {
        ResourceName& removed = response->removed_resource_names.emplace_back();
        removed.set_name(name);
        *removed.mutable_dynamic_parameter_constraints() = entry.variant->constraints.proto();
      } else {
        response->removed_resources.push_back(name);
      }
      AddItem(name, entry.variant, /*removal=*/true, record, &sent);
    };
    for (const std::string& name : names) {
      NameState& ns = Track(*state, name);  // A wildcard-covered name may be new.
      HeldSet desired = Decided(*state, ns, name, &decisions);
      bool plain_sent = false;
      for (const Held& entry : desired) {
        if (ns.held.count(entry) > 0) continue;
        // The variant's shared Resource wrapper: its name (the canonical one
        // this state keys it by), version and resource.
        response->resources.push_back({entry.variant, entry.locator});
        AddItem(name, entry.variant, /*removal=*/false, record, &sent);
        plain_sent = plain_sent || !entry.locator;
      }
      // Replaced or withdrawn variants leave in the same response as their
      // replacements (a TP2 variant swap); a plain one is replaced in place.
      bool plain_removed = false;
      for (const Held& entry : ns.held) {
        if (desired.count(entry) > 0) continue;
        if (!entry.locator) {
          if (plain_sent || plain_removed) continue;
          plain_removed = true;
        }
        remove(name, entry);
      }
      if (ns.stale_claim && !plain_sent && !plain_removed) {
        // A claimed version this server does not serve for the client.
        response->removed_resources.push_back(name);
        AddItem(name, nullptr, /*removal=*/true, record, &sent);
        plain_removed = true;
      }
      ns.stale_claim = false;
      // "Does not exist" for each subscription that selects nothing.
      const ServedResource* resource = Lookup(*state, name);
      for (const Subscription& sub : ns.subscriptions) {
        if (sub.answered || snapshot_->Unknown(resource, *sub.params)) continue;
        sub.answered = true;
        if (resource != nullptr && snapshot_->Select(*resource, *sub.params) != nullptr) continue;
        if (sub.locator) {
          ResourceName& removed = response->removed_resource_names.emplace_back();
          removed.set_name(name);
          *removed.mutable_dynamic_parameter_constraints() = ExactConstraints(sub.params->params);
        } else if (!plain_removed) {
          response->removed_resources.push_back(name);
          plain_removed = true;
        }
        AddItem(name, nullptr, /*removal=*/true, record, &sent);
      }
      SetHeld(*state, name, ns, std::move(desired));
    }
    for (const std::string& name : names) DropIdleName(*state, name);
    if (sent.empty()) continue;  // Nothing the client needs to hear.
    // What this stream holds of the type, as SotW's version_info: the
    // snapshot's version would also reflect resources the client may not read.
    NumberResponse(*state, names, /*full_state=*/false, std::move(sent), record,
                   &response->system_version_info);
    response->type_url = state->type_url();
    response->nonce = record->nonce;
    SettleMayHaveWork();
    return true;
  }
}

}  // namespace facet::xds
