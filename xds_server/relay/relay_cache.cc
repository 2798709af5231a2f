#include "xds_server/relay/relay_cache.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"

namespace facet::xds {
namespace {

bool SameConstraints(const Constraint& a, const DynamicParameterConstraints& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a.proto(), b);
}

// The keys every variant of a resource constrains, as far as the cache has
// seen them (TP2 asks for one key set per resource; a union keeps
// projection exact even for an upstream that does not enforce that).
std::optional<std::set<std::string>> KeysOf(
    const std::vector<std::shared_ptr<const Variant>>& variants) {
  if (variants.empty()) return std::nullopt;
  std::set<std::string> keys;
  for (const auto& variant : variants) {
    keys.insert(variant->constraints.keys().begin(), variant->constraints.keys().end());
  }
  return keys;
}

}  // namespace

bool RelayCache::Removes(const Sub& sub, const UpstreamRemoval& removal) {
  // The variant the sub holds is withdrawn, or upstream says none exists for
  // its parameters.
  const bool withdrawn = sub.variant != nullptr &&
                         SameConstraints(sub.variant->constraints, removal.constraints.proto());
  return withdrawn || SameConstraints(removal.constraints, ExactConstraints(sub.params));
}

RelayCache::RelayCache(Options options)
    : options_(std::move(options)), current_(Snapshot::EmptyPartial()) {}

RelayCache::Entry& RelayCache::EntryFor(const ResourceType& type, const std::string& name) {
  auto [it, inserted] = entries_.try_emplace(Key{&type, name});
  if (inserted) {
    it->second.type = &type;
    it->second.name = name;
    it->second.upstream = options_.route ? options_.route(name) : 0;
  }
  return it->second;
}

void RelayCache::Detach(Entry& entry, Entry::Demand& demand, absl::Time now) {
  if (!demand.sub.has_value()) return;
  auto it = entry.subs.find(*demand.sub);
  demand.sub.reset();
  if (it == entry.subs.end()) return;
  if (--it->second.downstream == 0) {
    it->second.idle_since = now;
    idle_.insert({now + options_.linger, Key{entry.type, entry.name}, it->first});
  }
}

void RelayCache::Attach(Entry& entry, const std::string& canonical, Entry::Demand& demand,
                        absl::Time now, std::vector<Fetch>* fetches) {
  ParameterSet projected =
      entry.keys.has_value() ? ProjectParameters(demand.params, *entry.keys) : demand.params;
  std::string key = entry.keys.has_value() ? CanonicalParameters(projected) : canonical;
  if (demand.sub == key) return;
  if (!entry.keys.has_value() && entry.probe.has_value() && *entry.probe != key) {
    // Keys unknown: one probe at a time, so a burst of distinct parameter
    // sets (pod names) waits for the first answer and is then projected.
    auto probe = entry.subs.find(*entry.probe);
    if (probe != entry.subs.end() && !probe->second.resolved && probe->second.downstream > 0) {
      entry.waiting.insert(canonical);
      return;
    }
  }
  entry.waiting.erase(canonical);
  Detach(entry, demand, now);
  auto [it, inserted] = entry.subs.try_emplace(key);
  Sub& sub = it->second;
  if (inserted) {
    sub.params = std::move(projected);
    ++upstream_subscriptions_;
    // A variant the upstream already sent on this stream answers the new
    // subscription too (the upstream does not send it again): TP2 variants
    // are mutually exclusive, so the one that matches is the answer.
    for (const auto& [other_key, other] : entry.subs) {
      if (other.variant != nullptr && other.variant->constraints.Matches(sub.params)) {
        sub.variant = other.variant;
        sub.arrival = other.arrival;
        sub.resolved = true;
        break;
      }
    }
    if (!entry.keys.has_value() && !sub.resolved) entry.probe = key;
    fetches->push_back({{entry.type->type_url(), entry.name, sub.params}, entry.upstream, true});
  } else if (sub.downstream == 0) {
    idle_.erase({sub.idle_since + options_.linger, Key{entry.type, entry.name}, key});
  }
  ++sub.downstream;
  sub.idle_since = absl::InfiniteFuture();
  demand.sub = std::move(key);
}

void RelayCache::Project(Entry& entry, bool all, absl::Time now, std::vector<Fetch>* fetches) {
  if (entry.upstream < 0) return;
  if (all) {
    for (auto& [canonical, demand] : entry.demand) Attach(entry, canonical, demand, now, fetches);
    return;
  }
  // Attach mutates the waiting set: go over a copy.
  const std::set<std::string> waiting = entry.waiting;
  for (const std::string& canonical : waiting) {
    Attach(entry, canonical, entry.demand.at(canonical), now, fetches);
  }
}

std::vector<Fetch> RelayCache::OnDemand(const std::vector<DemandChange>& changes, absl::Time now,
                                        std::shared_ptr<const Snapshot>* snapshot) {
  std::vector<Fetch> fetches;
  std::set<Key> touched;
  for (const DemandChange& change : changes) {
    const ResourceType* type = FindResourceType(change.type_url);
    if (type == nullptr || change.params == nullptr) continue;
    Entry& entry = EntryFor(*type, change.name);
    const Key key{type, change.name};
    touched.insert(key);
    const std::string& canonical = change.params->canonical;
    if (change.added) {
      auto [it, inserted] = entry.demand.try_emplace(canonical);
      Entry::Demand& demand = it->second;
      if (inserted) {
        demand.params = change.params->params;
        const ServedResource* served = entry.served.get();
        const bool known = served != nullptr && (served->Select(demand.params) != nullptr ||
                                                 served->resolution == nullptr ||
                                                 served->resolution->Knows(demand.params));
        (known ? hits_ : misses_)++;
        (known ? entry.hits : entry.misses)++;
        if (entry.upstream >= 0) Attach(entry, canonical, demand, now, &fetches);
      }
      ++demand.count;
    } else {
      auto it = entry.demand.find(canonical);
      if (it == entry.demand.end()) continue;
      if (--it->second.count > 0) continue;
      Detach(entry, it->second, now);
      entry.waiting.erase(canonical);
      entry.demand.erase(it);
      // A probe that nobody waits for any more lets the next one go.
      if (!entry.keys.has_value()) Project(entry, /*all=*/false, now, &fetches);
    }
  }
  Publish(touched, snapshot);
  return fetches;
}

std::shared_ptr<const Variant> RelayCache::Intern(const ResourceType& type,
                                                  const UpstreamVariant& in) {
  auto variant = std::make_shared<Variant>();
  variant->type = &type;
  variant->name = in.name;
  variant->label = in.constraints.unconstrained() ? "" : in.constraints.ToString();
  variant->constraints = in.constraints;
  variant->serialized = in.serialized;
  variant->version = in.version;
  return variant;
}

absl::Status RelayCache::Apply(int upstream, const UpstreamUpdate& update, absl::Time now,
                               std::vector<Fetch>* fetches,
                               std::shared_ptr<const Snapshot>* snapshot) {
  const ResourceType* type = FindResourceType(update.type_url);
  if (type == nullptr) {
    ++updates_rejected_;
    return absl::InvalidArgumentError(
        absl::StrCat("relay does not serve resource type ", update.type_url));
  }
  // The entries this response speaks about (a name nobody asks for any more
  // is ignored).
  std::map<Entry*, std::vector<const UpstreamVariant*>> variants;
  std::map<Entry*, std::vector<const UpstreamRemoval*>> removals;
  auto find = [&](const std::string& name) -> Entry* {
    auto it = entries_.find(Key{type, name});
    if (it == entries_.end() || it->second.upstream != upstream) return nullptr;
    return &it->second;
  };
  for (const UpstreamVariant& variant : update.variants) {
    if (Entry* entry = find(variant.name)) variants[entry].push_back(&variant);
  }
  for (const UpstreamRemoval& removal : update.removals) {
    if (Entry* entry = find(removal.name)) removals[entry].push_back(&removal);
  }
  if (update.full_state) {
    for (auto& [key, entry] : entries_) {
      if (key.first == type && entry.upstream == upstream) variants.try_emplace(&entry);
    }
  }
  // Check before changing anything. The bounds of a manifest's resource
  // (validation.md#limits): the variants of one name in the response, and
  // the distinct keys across them and the variants the response leaves held.
  auto removed = [&](Entry* entry, const Sub& sub) {
    auto it = removals.find(entry);
    if (it == removals.end()) return false;
    for (const UpstreamRemoval* removal : it->second) {
      if (Removes(sub, *removal)) return true;
    }
    return false;
  };
  for (const auto& [entry, list] : variants) {
    if (list.size() > static_cast<size_t>(options_.limits.max_variants_per_resource)) {
      ++updates_rejected_;
      return absl::InvalidArgumentError(absl::StrCat(
          update.type_url, " ", entry->name, ": the response carries ", list.size(),
          " variants; the limit is ", options_.limits.max_variants_per_resource, " per resource"));
    }
    std::set<std::string> keys;
    for (const UpstreamVariant* variant : list) {
      keys.insert(variant->constraints.keys().begin(), variant->constraints.keys().end());
    }
    for (const auto& [key, sub] : entry->subs) {
      if (sub.variant == nullptr || update.full_state || removed(entry, sub)) continue;
      // A named reference: clang 14 does not capture structured bindings.
      const auto& params = sub.params;
      const bool replaced = std::any_of(list.begin(), list.end(), [&](const UpstreamVariant* v) {
        return v->constraints.Matches(params);
      });
      if (!replaced) {
        keys.insert(sub.variant->constraints.keys().begin(), sub.variant->constraints.keys().end());
      }
    }
    if (keys.size() > static_cast<size_t>(options_.limits.max_keys_per_resource)) {
      ++updates_rejected_;
      return absl::InvalidArgumentError(absl::StrCat(
          update.type_url, " ", entry->name, ": the variants constrain ", keys.size(),
          " distinct keys; the limit is ", options_.limits.max_keys_per_resource, " per resource"));
    }
  }
  // Two variants of one response matching one subscription break TP2
  // (constraints must be mutually exclusive).
  for (const auto& [entry, list] : variants) {
    for (const auto& [key, sub] : entry->subs) {
      const UpstreamVariant* first = nullptr;
      for (const UpstreamVariant* variant : list) {
        if (!variant->constraints.Matches(sub.params)) continue;
        if (first != nullptr) {
          ++updates_rejected_;
          return absl::InvalidArgumentError(absl::StrCat(
              update.type_url, " ", entry->name, ": variants [", first->constraints.ToString(),
              "] and [", variant->constraints.ToString(), "] both match parameters ",
              ParameterSetToString(sub.params)));
        }
        first = variant;
      }
    }
  }
  ++updates_applied_;
  std::set<Key> touched;
  for (const auto& [entry, list] : removals) {
    touched.insert(Key{entry->type, entry->name});
    for (auto& [key, sub] : entry->subs) {
      for (const UpstreamRemoval* removal : list) {
        if (Removes(sub, *removal)) {
          sub.variant = nullptr;
          sub.resolved = true;
        }
      }
    }
  }
  for (const auto& [entry, list] : variants) {
    touched.insert(Key{entry->type, entry->name});
    std::vector<std::shared_ptr<const Variant>> interned(list.size());
    for (auto& [key, sub] : entry->subs) {
      bool matched = false;
      for (size_t i = 0; i < list.size(); ++i) {
        const UpstreamVariant& in = *list[i];
        if (!in.constraints.Matches(sub.params)) continue;
        matched = true;
        sub.resolved = true;
        if (sub.variant != nullptr && sub.variant->version == in.version &&
            SameConstraints(in.constraints, sub.variant->constraints.proto())) {
          break;  // Sent again unchanged (a resync): keep it as it was.
        }
        if (interned[i] == nullptr) interned[i] = Intern(*type, in);
        sub.variant = interned[i];
        sub.arrival = ++arrivals_;
        break;
      }
      if (!matched && update.full_state) {
        sub.variant = nullptr;
        sub.resolved = true;
      }
    }
  }
  for (const Key& key : touched) {
    Entry& entry = entries_.at(key);
    std::vector<std::shared_ptr<const Variant>> held;
    for (const auto& [canonical, sub] : entry.subs) {
      if (sub.variant != nullptr) held.push_back(sub.variant);
    }
    std::optional<std::set<std::string>> keys = KeysOf(held);
    const bool keys_changed = keys.has_value() && keys != entry.keys;
    if (keys_changed) entry.keys = std::move(keys);
    // Learned or changed keys re-project every parameter set; otherwise only
    // those waiting for an answered probe go (the rest are where they
    // belong).
    Project(entry, /*all=*/keys_changed, now, fetches);
  }
  Publish(touched, snapshot);
  return absl::OkStatus();
}

std::vector<Fetch> RelayCache::Expire(absl::Time now, std::shared_ptr<const Snapshot>* snapshot) {
  std::vector<Fetch> fetches;
  std::set<Key> touched;
  while (!idle_.empty() && std::get<0>(*idle_.begin()) <= now) {
    auto [deadline, key, sub_key] = *idle_.begin();
    idle_.erase(idle_.begin());
    auto entry_it = entries_.find(key);
    if (entry_it == entries_.end()) continue;
    Entry& entry = entry_it->second;
    auto it = entry.subs.find(sub_key);
    if (it == entry.subs.end() || it->second.downstream > 0) continue;
    fetches.push_back(
        {{entry.type->type_url(), entry.name, it->second.params}, entry.upstream, false});
    entry.subs.erase(it);
    --upstream_subscriptions_;
    touched.insert(key);
  }
  Publish(touched, snapshot);
  return fetches;
}

bool RelayCache::Refresh(Entry& entry) {
  std::shared_ptr<const ServedResource> next;
  if (entry.upstream < 0) {
    // No upstream serves the name: it does not exist, for every parameter set.
    if (entry.served != nullptr) return false;
    auto served = std::make_shared<ServedResource>();
    served->type = entry.type;
    served->name = entry.name;
    served->owner = {"Upstream", entry.type->type_url(), entry.name};
    next = std::move(served);
  } else {
    std::vector<const Sub*> answered;
    for (const auto& [key, sub] : entry.subs) {
      if (sub.resolved) answered.push_back(&sub);
    }
    if (!answered.empty()) {
      auto resolution = std::make_shared<Resolution>();
      resolution->keys = entry.keys;
      for (const auto& [key, sub] : entry.subs) {
        if (sub.resolved) resolution->known.insert(key);
      }
      // Newest first: while an upstream change reaches the cache's
      // subscriptions, the latest variant wins any overlap.
      std::stable_sort(answered.begin(), answered.end(),
                       [](const Sub* a, const Sub* b) { return a->arrival > b->arrival; });
      auto served = std::make_shared<ServedResource>();
      served->type = entry.type;
      served->name = entry.name;
      served->owner = {"Upstream", entry.type->type_url(), entry.name};
      std::set<std::pair<std::string, std::string>> seen;
      for (const Sub* sub : answered) {
        if (sub->variant == nullptr) continue;
        if (!seen.insert({sub->variant->version, sub->variant->constraints.ToString()}).second) {
          continue;
        }
        served->variants.push_back(sub->variant);
      }
      const ServedResource* before = entry.served.get();
      bool same = before != nullptr && before->resolution != nullptr &&
                  before->resolution->keys == resolution->keys &&
                  before->resolution->known == resolution->known &&
                  before->variants.size() == served->variants.size();
      for (size_t i = 0; same && i < served->variants.size(); ++i) {
        same = before->variants[i]->version == served->variants[i]->version &&
               before->variants[i]->constraints.ToString() ==
                   served->variants[i]->constraints.ToString();
      }
      if (same) return false;
      served->resolution = std::move(resolution);
      next = std::move(served);
    }
  }
  if (next == entry.served) return false;
  cached_variants_ +=
      static_cast<int64_t>(next == nullptr ? 0 : next->variants.size()) -
      static_cast<int64_t>(entry.served == nullptr ? 0 : entry.served->variants.size());
  entry.served = std::move(next);
  return true;
}

void RelayCache::Publish(const std::set<Key>& touched, std::shared_ptr<const Snapshot>* snapshot) {
  std::vector<std::shared_ptr<const ServedResource>> upserts;
  std::vector<std::pair<const ResourceType*, std::string>> removals;
  for (const Key& key : touched) {
    auto it = entries_.find(key);
    if (it == entries_.end()) continue;
    Entry& entry = it->second;
    if (entry.demand.empty() && entry.subs.empty()) {
      // Nobody asks and nothing is cached: forget it.
      if (entry.served != nullptr) {
        cached_variants_ -= static_cast<int64_t>(entry.served->variants.size());
        removals.emplace_back(key.first, key.second);
      }
      entries_.erase(it);
      continue;
    }
    if (Refresh(entry)) {
      if (entry.served != nullptr) {
        upserts.push_back(entry.served);
      } else {
        removals.emplace_back(key.first, key.second);
      }
    }
  }
  if (upserts.empty() && removals.empty()) {
    *snapshot = nullptr;
    return;
  }
  current_ = Snapshot::Derive(*current_, std::move(upserts), removals);
  *snapshot = current_;
}

std::vector<UpstreamSubscription> RelayCache::Subscriptions(int upstream) const {
  std::vector<UpstreamSubscription> out;
  for (const auto& [key, entry] : entries_) {
    if (entry.upstream != upstream) continue;
    for (const auto& [canonical, sub] : entry.subs) {
      out.push_back({entry.type->type_url(), entry.name, sub.params});
    }
  }
  return out;
}

std::optional<absl::Time> RelayCache::NextExpiry() const {
  if (idle_.empty()) return std::nullopt;
  return std::get<0>(*idle_.begin());
}

RelayCacheStats RelayCache::stats() const {
  RelayCacheStats out;
  out.upstream_subscriptions = upstream_subscriptions_;
  out.cached_variants = cached_variants_;
  out.resources = static_cast<int64_t>(entries_.size());
  out.hits = hits_;
  out.misses = misses_;
  out.updates_applied = updates_applied_;
  out.updates_rejected = updates_rejected_;
  return out;
}

std::vector<RelayResourceStats> RelayCache::ResourceStats(size_t max, size_t* total) const {
  *total = entries_.size();
  std::vector<RelayResourceStats> out;
  out.reserve(std::min(max, entries_.size()));
  for (const auto& [key, entry] : entries_) {
    if (out.size() >= max) break;
    out.push_back({.type_url = std::string(key.first->type_url()),
                   .name = key.second,
                   .upstream = entry.upstream,
                   .hits = entry.hits,
                   .misses = entry.misses,
                   .cached_variants = entry.served == nullptr
                                          ? 0
                                          : static_cast<int64_t>(entry.served->variants.size())});
  }
  return out;
}

}  // namespace facet::xds
