#include "xds_server/ads/stream_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "xds_server/names/names.h"

namespace facet::xds {
namespace {

using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;
using ::envoy::service::discovery::v3::Resource;

constexpr char kResourceTypeUrl[] = "type.googleapis.com/envoy.service.discovery.v3.Resource";
constexpr char kWildcard[] = "*";

// Listener and Cluster responses in SotW carry the complete set: a resource
// missing from one is deleted by the client.
bool IsFullStateType(const ResourceType* type) {
  return type == &ListenerType() || type == &ClusterType();
}

int RankOf(const ResourceType* type) { return type == nullptr ? -1 : type->push_rank(); }

std::string CanonicalName(const std::string& name) {
  absl::StatusOr<std::string> normalized = NormalizeResourceName(name);
  return normalized.ok() ? *normalized : name;
}

void SetResourceName(const std::string& name, const Variant* variant, bool locator_mode,
                     Resource* resource) {
  if (locator_mode) {
    auto* resource_name = resource->mutable_resource_name();
    resource_name->set_name(name);
    if (variant != nullptr) {
      *resource_name->mutable_dynamic_parameter_constraints() = variant->constraints.proto();
    }
  } else {
    resource->set_name(name);
  }
}

}  // namespace

bool StreamState::NameState::locator_mode() const {
  for (const auto& [key, subscription] : subscriptions) {
    if (subscription.locator) return true;
  }
  return false;
}

StreamState::StreamState(Protocol protocol, std::shared_ptr<const ParameterMapping> mapping)
    : protocol_(protocol),
      mapping_(std::move(mapping)),
      snapshot_(std::make_shared<ServingSnapshot>(std::make_shared<const Snapshot>())),
      node_params_(std::make_shared<Parameters>(ParameterSet{})) {}

void StreamState::SetNode(const envoy::config::core::v3::Node& node) {
  node_ = node;
  has_node_ = true;
  node_params_ = std::make_shared<Parameters>(mapping_->ParametersFor(node));
}

bool StreamState::wraps_plain_resources() const {
  return std::find(node_.client_features().begin(), node_.client_features().end(),
                   kResourceInSotwFeature) != node_.client_features().end();
}

StreamState::TypeState& StreamState::StateFor(const std::string& type_url) {
  auto [it, inserted] = types_.try_emplace(type_url);
  if (inserted) {
    it->second.type_url = type_url;
    it->second.type = FindResourceType(type_url);
    if (it->second.type != nullptr && it->second.type->type_url() != type_url) {
      it->second.type = nullptr;  // Only full type URLs are served.
    }
  }
  return it->second;
}

void StreamState::Subscribe(TypeState& state, const std::string& name,
                            std::shared_ptr<const Parameters> params, bool locator) {
  NameState& ns = state.names[CanonicalName(name)];
  const std::string key = params->canonical;
  ns.subscriptions[key] = Subscription{std::move(params), locator};
}

void StreamState::ProcessAckOrNack(TypeState& state, const std::string& nonce,
                                   const std::string& error, RequestOutcome* outcome) {
  outcome->type_url = state.type_url;
  outcome->nonce = nonce;
  if (nonce.empty()) {
    outcome->kind = RequestOutcome::Kind::kInitial;
  } else if (nonce != state.last_nonce) {
    outcome->kind = RequestOutcome::Kind::kStale;
  } else if (!error.empty()) {
    outcome->kind = RequestOutcome::Kind::kNack;
    outcome->error_detail = error;
    outcome->nacked = state.last_items;
  } else {
    outcome->kind = RequestOutcome::Kind::kAck;
  }
}

absl::Status StreamState::OnRequest(const DiscoveryRequest& request, RequestOutcome* outcome) {
  if (request.type_url().empty()) {
    return absl::InvalidArgumentError("DiscoveryRequest has no type_url");
  }
  if (request.resource_names_size() + request.resource_locators_size() > kMaxNamesPerRequest) {
    return absl::InvalidArgumentError(absl::StrCat("DiscoveryRequest for ", request.type_url(),
                                                   " names more than ", kMaxNamesPerRequest,
                                                   " resources"));
  }
  if (request.has_node() && !has_node_) SetNode(request.node());
  TypeState& state = StateFor(request.type_url());
  ProcessAckOrNack(state, request.response_nonce(),
                   request.has_error_detail() ? request.error_detail().message() : "", outcome);
  if (request.has_error_detail() && outcome->kind == RequestOutcome::Kind::kNack &&
      outcome->error_detail.empty()) {
    outcome->error_detail = "(NACK without a message)";
  }

  // SotW requests carry the complete subscription set.
  std::map<std::string, NameState> next;
  bool wildcard = false;
  for (const std::string& name : request.resource_names()) {
    if (name == kWildcard) {
      wildcard = true;
      continue;
    }
    NameState& ns = next[CanonicalName(name)];
    ns.subscriptions[node_params_->canonical] = Subscription{node_params_, false};
  }
  for (const auto& locator : request.resource_locators()) {
    if (locator.name() == kWildcard) {
      wildcard = true;
      continue;
    }
    auto params = std::make_shared<Parameters>(
        ParameterSet(locator.dynamic_parameters().begin(), locator.dynamic_parameters().end()));
    NameState& ns = next[CanonicalName(locator.name())];
    const std::string key = params->canonical;
    ns.subscriptions[key] = Subscription{std::move(params), true};
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

  if (!state.seen_request && request.response_nonce().empty() && !request.version_info().empty()) {
    state.resume_version = request.version_info();
  }
  bool changed = !state.seen_request || wildcard != state.wildcard;
  // Keep what the client holds for names still subscribed (or still covered
  // by the wildcard); forget the rest, so a resubscription sends it again.
  for (auto it = state.names.begin(); it != state.names.end();) {
    auto found = next.find(it->first);
    if (found != next.end()) {
      if (found->second.subscriptions.size() != it->second.subscriptions.size() ||
          !std::equal(found->second.subscriptions.begin(), found->second.subscriptions.end(),
                      it->second.subscriptions.begin(), [](const auto& a, const auto& b) {
                        return a.first == b.first && a.second.locator == b.second.locator;
                      })) {
        changed = true;
      }
      it->second.subscriptions = std::move(found->second.subscriptions);
      next.erase(found);
      ++it;
    } else if (wildcard) {
      // No longer named, but still covered by the wildcard: keep what the
      // client holds.
      if (!it->second.subscriptions.empty()) {
        it->second.subscriptions.clear();
        changed = true;
      }
      ++it;
    } else {
      it = state.names.erase(it);
      changed = true;
    }
  }
  for (auto& [name, ns] : next) {
    state.names.emplace(name, std::move(ns));
    changed = true;
  }
  state.wildcard = wildcard;
  state.seen_request = true;
  if (changed) state.response_due = true;
  if (outcome->kind == RequestOutcome::Kind::kAck && changed) {
    outcome->kind = RequestOutcome::Kind::kSubscriptionOnly;
  }
  return absl::OkStatus();
}

absl::Status StreamState::OnRequest(const DeltaDiscoveryRequest& request,
                                    RequestOutcome* outcome) {
  if (request.type_url().empty()) {
    return absl::InvalidArgumentError("DeltaDiscoveryRequest has no type_url");
  }
  if (request.resource_names_subscribe_size() + request.resource_locators_subscribe_size() >
      kMaxNamesPerRequest) {
    return absl::InvalidArgumentError(absl::StrCat("DeltaDiscoveryRequest for ",
                                                   request.type_url(), " subscribes to more than ",
                                                   kMaxNamesPerRequest, " resources"));
  }
  if (request.has_node() && !has_node_) SetNode(request.node());
  TypeState& state = StateFor(request.type_url());
  ProcessAckOrNack(state, request.response_nonce(),
                   request.has_error_detail() ? request.error_detail().message() : "", outcome);

  if (!state.seen_request) {
    // The client already holds these versions (reconnect): do not resend them.
    for (const auto& [name, version] : request.initial_resource_versions()) {
      if (state.type == nullptr) break;
      const ServedResource* resource = snapshot_->snapshot().Find(*state.type, CanonicalName(name));
      if (resource == nullptr) continue;
      for (const auto& variant : resource->variants) {
        if (variant->version == version) {
          NameState& ns = state.names[CanonicalName(name)];
          ns.held[version] = variant;
          ns.answered = true;
        }
      }
    }
    if (request.resource_names_subscribe_size() == 0 &&
        request.resource_locators_subscribe_size() == 0 && IsFullStateType(state.type)) {
      state.wildcard = true;
    }
  }
  for (const std::string& name : request.resource_names_subscribe()) {
    if (name == kWildcard) {
      state.wildcard = true;
    } else {
      Subscribe(state, name, node_params_, /*locator=*/false);
      state.names[CanonicalName(name)].answered = false;
    }
  }
  for (const auto& locator : request.resource_locators_subscribe()) {
    auto params = std::make_shared<Parameters>(
        ParameterSet(locator.dynamic_parameters().begin(), locator.dynamic_parameters().end()));
    Subscribe(state, locator.name(), std::move(params), /*locator=*/true);
    state.names[CanonicalName(locator.name())].answered = false;
  }
  auto drop_if_unsubscribed = [&](const std::string& name) {
    auto it = state.names.find(name);
    if (it != state.names.end() && it->second.subscriptions.empty() && !state.wildcard) {
      state.names.erase(it);
    }
  };
  for (const std::string& name : request.resource_names_unsubscribe()) {
    if (name == kWildcard) {
      state.wildcard = false;
      // Names held only through the wildcard are forgotten with it.
      std::erase_if(state.names, [](const auto& entry) { return entry.second.subscriptions.empty(); });
      continue;
    }
    auto it = state.names.find(CanonicalName(name));
    if (it == state.names.end()) continue;
    for (auto sub = it->second.subscriptions.begin(); sub != it->second.subscriptions.end();) {
      sub = sub->second.locator ? std::next(sub) : it->second.subscriptions.erase(sub);
    }
    drop_if_unsubscribed(it->first);
  }
  for (const auto& locator : request.resource_locators_unsubscribe()) {
    const std::string name = CanonicalName(locator.name());
    auto it = state.names.find(name);
    if (it == state.names.end()) continue;
    Parameters params(
        ParameterSet(locator.dynamic_parameters().begin(), locator.dynamic_parameters().end()));
    it->second.subscriptions.erase(params.canonical);
    drop_if_unsubscribed(name);
  }
  state.seen_request = true;
  return absl::OkStatus();
}

void StreamState::SetSnapshot(std::shared_ptr<const ServingSnapshot> snapshot) {
  snapshot_ = std::move(snapshot);
}

bool StreamState::Watches(const std::string& type_url, const std::string& name) const {
  auto it = types_.find(type_url);
  if (it == types_.end()) return false;
  return it->second.wildcard || it->second.names.count(name) > 0;
}

std::map<std::string, std::shared_ptr<const Variant>> StreamState::Desired(
    const TypeState& state, const std::string& name, const NameState& ns) const {
  std::map<std::string, std::shared_ptr<const Variant>> desired;
  if (state.type == nullptr) return desired;
  const ServedResource* resource = snapshot_->snapshot().Find(*state.type, name);
  if (resource == nullptr) return desired;
  for (const auto& [key, subscription] : ns.subscriptions) {
    if (auto variant = snapshot_->Select(*resource, *subscription.params)) {
      desired.emplace(variant->version, std::move(variant));
    }
  }
  if (state.wildcard && ns.subscriptions.empty()) {
    if (auto variant = snapshot_->Select(*resource, *node_params_)) {
      desired.emplace(variant->version, std::move(variant));
    }
  }
  return desired;
}

StreamState::Diff StreamState::ComputeDiff(const TypeState& state) const {
  Diff diff;
  auto consider = [&](const std::string& name, const NameState& ns) {
    auto desired = Desired(state, name, ns);
    if (desired.empty()) {
      if (!ns.held.empty()) {
        diff.removals.insert(name);
      } else if (!ns.answered && !ns.subscriptions.empty()) {
        diff.unanswered.insert(name);
      }
      return;
    }
    std::vector<std::shared_ptr<const Variant>> send;
    std::vector<std::shared_ptr<const Variant>> drop;
    for (const auto& [version, variant] : desired) {
      if (ns.held.count(version) == 0) send.push_back(variant);
    }
    for (const auto& [version, variant] : ns.held) {
      if (desired.count(version) == 0) drop.push_back(variant);
    }
    if (!send.empty()) {
      diff.upserts[name] = std::move(send);
      if (!drop.empty()) diff.drops[name] = std::move(drop);
    } else if (!drop.empty()) {
      diff.removals.insert(name);  // Some variants go away, none arrive.
    } else if (!ns.answered && !ns.subscriptions.empty() && protocol_ == Protocol::kSotw) {
      diff.unanswered.insert(name);
    }
  };
  for (const auto& [name, ns] : state.names) consider(name, ns);
  if (state.wildcard && state.type != nullptr) {
    static const NameState kEmpty;
    for (const auto& [name, resource] : snapshot_->snapshot().resources(*state.type)) {
      if (state.names.count(name) == 0) consider(name, kEmpty);
    }
  }
  return diff;
}

StreamState::TypeState* StreamState::PickNext(bool* removal_phase, Diff* diff) {
  std::vector<TypeState*> ordered;
  for (auto& [url, state] : types_) ordered.push_back(&state);
  std::stable_sort(ordered.begin(), ordered.end(), [](TypeState* a, TypeState* b) {
    return RankOf(a->type) < RankOf(b->type);
  });
  std::vector<Diff> diffs;
  diffs.reserve(ordered.size());
  for (TypeState* state : ordered) diffs.push_back(ComputeDiff(*state));
  // Additions and updates, referenced types first.
  for (size_t i = 0; i < ordered.size(); ++i) {
    if (!diffs[i].upserts.empty()) {
      *removal_phase = false;
      *diff = std::move(diffs[i]);
      return ordered[i];
    }
  }
  // Answers to subscription changes that bring nothing new.
  for (size_t i = 0; i < ordered.size(); ++i) {
    if (ordered[i]->response_due || !diffs[i].unanswered.empty()) {
      *removal_phase = false;
      *diff = std::move(diffs[i]);
      return ordered[i];
    }
  }
  // Removals, referencing types first.
  for (size_t i = ordered.size(); i-- > 0;) {
    if (!diffs[i].removals.empty()) {
      *removal_phase = true;
      *diff = std::move(diffs[i]);
      return ordered[i];
    }
  }
  return nullptr;
}

void StreamState::DropIdleNames(TypeState& state) {
  // Wildcard-covered names that no longer hold anything need no state.
  std::erase_if(state.names, [](const auto& entry) {
    return entry.second.subscriptions.empty() && entry.second.held.empty();
  });
}

std::string StreamState::NextNonce() { return absl::StrCat(++nonce_counter_); }

std::string StreamState::HeldDigest(const std::map<std::string, NameState>& names) {
  std::string input;
  for (const auto& [name, ns] : names) {
    for (const auto& [version, variant] : ns.held) absl::StrAppend(&input, name, "\n", version, "\n");
  }
  return ContentDigest(input);
}

void StreamState::ResumeFromClientVersions() {
  for (auto& [url, state] : types_) {
    if (state.resume_version.empty()) continue;
    const std::string claimed = std::exchange(state.resume_version, "");
    // What this stream would hold after answering: every subscribed (or
    // wildcard-covered) name with its selected variants.
    std::map<std::string, NameState> would_hold;
    for (const auto& [name, ns] : state.names) {
      auto desired = Desired(state, name, ns);
      if (!desired.empty()) would_hold[name].held = std::move(desired);
    }
    if (state.wildcard && state.type != nullptr) {
      static const NameState kEmpty;
      for (const auto& [name, resource] : snapshot_->snapshot().resources(*state.type)) {
        if (state.names.count(name) > 0) continue;
        auto desired = Desired(state, name, kEmpty);
        if (!desired.empty()) would_hold[name].held = std::move(desired);
      }
    }
    if (HeldDigest(would_hold) != claimed) continue;
    for (auto& [name, held] : would_hold) state.names[name].held = std::move(held.held);
    for (auto& [name, ns] : state.names) ns.answered = true;
    state.response_due = false;
    state.last_version = claimed;
  }
}

bool StreamState::NextResponse(DiscoveryResponse* response, PushRecord* record) {
  ResumeFromClientVersions();
  while (true) {
    bool removal_phase = false;
    Diff diff;
    TypeState* state = PickNext(&removal_phase, &diff);
    if (state == nullptr) return false;
    const bool full_state = IsFullStateType(state->type);

    // Work out what the client will hold for each name after this response,
    // and which variants the response carries.
    std::vector<std::pair<std::string, std::shared_ptr<const Variant>>> carried;
    auto update_name = [&](const std::string& name, bool apply_removal) {
      NameState& ns = state->names[name];
      if (diff.upserts.count(name) > 0 || apply_removal) {
        ns.held = Desired(*state, name, ns);
      }
      ns.answered = true;
    };
    std::set<std::string> all_names;
    for (const auto& [name, ns] : state->names) all_names.insert(name);
    for (const auto& [name, variants] : diff.upserts) all_names.insert(name);
    for (const std::string& name : diff.removals) all_names.insert(name);
    for (const std::string& name : diff.unanswered) all_names.insert(name);
    for (const std::string& name : all_names) {
      const bool is_upsert = diff.upserts.count(name) > 0;
      update_name(name, removal_phase && diff.removals.count(name) > 0);
      NameState& ns = state->names[name];
      if (full_state || is_upsert) {
        for (const auto& [version, variant] : ns.held) carried.emplace_back(name, variant);
      }
    }
    DropIdleNames(*state);
    if (removal_phase && !full_state && !state->response_due) {
      continue;  // SotW RDS/EDS removals are silent: the client just stops using them.
    }

    response->Clear();
    response->set_type_url(state->type_url);
    response->set_version_info(HeldDigest(state->names));
    response->set_nonce(NextNonce());
    record->type_url = state->type_url;
    record->version_info = response->version_info();
    record->nonce = response->nonce();
    record->items.clear();
    const bool wrap_plain = wraps_plain_resources();
    for (const auto& [name, variant] : carried) {
      const bool locator_mode = state->names[name].locator_mode();
      if (locator_mode || wrap_plain) {
        Resource wrapper;
        SetResourceName(name, variant.get(), locator_mode, &wrapper);
        wrapper.set_version(variant->version);
        *wrapper.mutable_resource() = PackVariant(*state->type, *variant);
        auto* any = response->add_resources();
        any->set_type_url(kResourceTypeUrl);
        wrapper.SerializeToString(any->mutable_value());
      } else {
        *response->add_resources() = PackVariant(*state->type, *variant);
      }
      record->items.push_back({name, variant->label, variant->version, false});
    }
    state->response_due = false;
    state->last_nonce = response->nonce();
    state->last_version = response->version_info();
    state->last_items = record->items;
    return true;
  }
}

bool StreamState::NextResponse(DeltaDiscoveryResponse* response, PushRecord* record) {
  while (true) {
    bool removal_phase = false;
    Diff diff;
    TypeState* state = PickNext(&removal_phase, &diff);
    if (state == nullptr) return false;
    state->response_due = false;
    response->Clear();
    record->items.clear();
    if (!removal_phase) {
      for (const auto& [name, variants] : diff.upserts) {
        NameState& ns = state->names[name];
        const bool locator_mode = ns.locator_mode();
        for (const auto& variant : variants) {
          Resource* resource = response->add_resources();
          SetResourceName(name, variant.get(), locator_mode, resource);
          resource->set_version(variant->version);
          *resource->mutable_resource() = PackVariant(*state->type, *variant);
          record->items.push_back({name, variant->label, variant->version, false});
        }
        auto drops = diff.drops.find(name);
        if (drops != diff.drops.end() && locator_mode) {
          // A variant swap: the replaced variants leave in the same response.
          for (const auto& variant : drops->second) {
            auto* removed = response->add_removed_resource_names();
            removed->set_name(name);
            *removed->mutable_dynamic_parameter_constraints() = variant->constraints.proto();
            record->items.push_back({name, variant->label, variant->version, true});
          }
        }
        ns.held = Desired(*state, name, ns);
        ns.answered = true;
      }
      for (const std::string& name : diff.unanswered) {
        NameState& ns = state->names[name];
        // "Does not exist" for this client.
        if (ns.locator_mode()) {
          response->add_removed_resource_names()->set_name(name);
        } else {
          response->add_removed_resources(name);
        }
        record->items.push_back({name, "", "", true});
        ns.answered = true;
      }
    } else {
      for (const std::string& name : diff.removals) {
        NameState& ns = state->names[name];
        auto desired = Desired(*state, name, ns);
        const bool locator_mode = ns.locator_mode();
        if (locator_mode) {
          for (const auto& [version, variant] : ns.held) {
            if (desired.count(version) > 0) continue;
            auto* removed = response->add_removed_resource_names();
            removed->set_name(name);
            *removed->mutable_dynamic_parameter_constraints() = variant->constraints.proto();
            record->items.push_back({name, variant->label, version, true});
          }
        } else {
          response->add_removed_resources(name);
          record->items.push_back({name, "", "", true});
        }
        ns.held = std::move(desired);
        ns.answered = true;
      }
      DropIdleNames(*state);
    }
    if (record->items.empty()) continue;  // Nothing the client needs to hear.
    response->set_type_url(state->type_url);
    response->set_system_version_info(snapshot_->snapshot().version());
    response->set_nonce(NextNonce());
    record->type_url = state->type_url;
    record->version_info = response->system_version_info();
    record->nonce = response->nonce();
    state->last_nonce = response->nonce();
    state->last_items = record->items;
    return true;
  }
}

std::vector<std::tuple<std::string, std::string, std::string>> StreamState::Holdings() const {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const auto& [url, state] : types_) {
    for (const auto& [name, ns] : state.names) {
      for (const auto& [version, variant] : ns.held) out.emplace_back(url, name, version);
    }
  }
  return out;
}

}  // namespace facet::xds
