#include "xds_server/ads/watch_index.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace facet::xds {
namespace {

// Whether the variant one parameter set selects of (type, name) differs
// between two snapshots. Asked once per parameter group of the name's
// watchers (the index groups them), so nothing is memoized.
class SelectionChange {
 public:
  SelectionChange(const ServingSnapshot& before, const ServingSnapshot& after,
                  const ResourceType& type, const std::string& name)
      : before_(before),
        after_(after),
        old_(before.snapshot().Find(type, name)),
        new_(after.snapshot().Find(type, name)) {}

  bool Changed(const Parameters& params) const {
    // Who may read an authority changed: its names are re-examined by every
    // stream that watches them, whatever they select.
    if (before_.snapshot().shared_access() != after_.snapshot().shared_access()) return true;
    // A partial source's unknowns resolve by waking the stream.
    if (before_.Unknown(old_, params) || after_.Unknown(new_, params)) return true;
    const std::shared_ptr<const Variant> was =
        old_ == nullptr ? nullptr : before_.Select(*old_, params);
    const std::shared_ptr<const Variant> is =
        new_ == nullptr ? nullptr : after_.Select(*new_, params);
    if (was == nullptr || is == nullptr) return was != is;
    return was->version != is->version;  // Content-derived: equal bytes on the wire.
  }

 private:
  const ServingSnapshot& before_;
  const ServingSnapshot& after_;
  const ServedResource* const old_;
  const ServedResource* const new_;
};

}  // namespace

void WatchIndex::AddStream(StreamId stream) { streams_.try_emplace(stream); }

void WatchIndex::Update(StreamId stream, const std::vector<WatchChange>& changes,
                        std::shared_ptr<const Parameters> uniform_params,
                        const std::vector<WatchChange>& watched) {
  std::shared_ptr<const Parameters>& recorded = streams_[stream];
  const bool regroup = (recorded == nullptr) != (uniform_params == nullptr) ||
                       (recorded != nullptr && recorded->canonical != uniform_params->canonical);
  if (regroup) {
    // Out of the old group (the names no longer watched among them), into
    // the new one. Rare: a stream's parameters change at its first request,
    // or when a locator brings a second parameter set.
    for (const WatchChange& change : changes) Apply(stream, recorded, change, /*remove_only=*/true);
    for (const WatchChange& change : watched) Apply(stream, recorded, change, /*remove_only=*/true);
    recorded = std::move(uniform_params);
    for (const WatchChange& change : watched) Apply(stream, recorded, change, false);
  } else {
    recorded = std::move(uniform_params);
    for (const WatchChange& change : changes) Apply(stream, recorded, change, false);
  }
}

void WatchIndex::RemoveStream(StreamId stream, const std::vector<WatchChange>& watches) {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return;
  for (const WatchChange& change : watches) Apply(stream, it->second, change, /*remove_only=*/true);
  streams_.erase(it);
  // A name table emptied by a stream that watched many names gives its
  // slots back (erasing never shrinks it): O(names left), and only once it
  // is mostly empty.
  for (auto& [type_url, type_index] : index_) {
    constexpr size_t kSmallTable = 4096;
    if (type_index.by_name.capacity() > kSmallTable &&
        type_index.by_name.size() < type_index.by_name.capacity() / 8) {
      type_index.by_name.rehash(0);
    }
  }
}

void WatchIndex::Apply(StreamId stream, const std::shared_ptr<const Parameters>& params,
                       const WatchChange& change, bool remove_only) {
  // Snapshots only ever change the served types: a type URL a client made
  // up is not indexed (it would stay in the index after the stream).
  const ResourceType* type = FindResourceType(change.type_url);
  if (type == nullptr || type->type_url() != change.type_url) return;
  auto index = index_.find(change.type_url);
  if (index == index_.end()) {
    if (remove_only || !change.watched) return;
    index = index_.try_emplace(change.type_url).first;
  }
  TypeIndex& type_index = index->second;
  if (change.wildcard) {
    if (change.watched && !remove_only) {
      type_index.wildcard.insert(stream);
    } else {
      type_index.wildcard.erase(stream);
    }
    return;
  }
  if (change.watched && !remove_only) {
    NameWatchers& watchers = type_index.by_name[change.name];
    if (params == nullptr) {
      watchers.mixed.insert(stream);
      return;
    }
    ParameterGroup& group = watchers.uniform[params->canonical];
    if (group.params == nullptr) group.params = params;
    group.streams.insert(stream);
    return;
  }
  auto watchers = type_index.by_name.find(change.name);
  if (watchers == type_index.by_name.end()) return;
  if (params == nullptr) {
    watchers->second.mixed.erase(stream);
  } else if (auto group = watchers->second.uniform.find(params->canonical);
             group != watchers->second.uniform.end()) {
    group->second.streams.erase(stream);
    if (group->second.streams.empty()) watchers->second.uniform.erase(group);
  }
  if (watchers->second.uniform.empty() && watchers->second.mixed.empty()) {
    type_index.by_name.erase(watchers);
  }
}

bool WatchIndex::WakesAll(const ServingSnapshot& before, const ServingSnapshot& after) {
  const Snapshot& next = after.snapshot();
  return next.changes().all || next.base_version() != before.snapshot().version();
}

std::vector<std::pair<WatchIndex::StreamId, WatchIndex::Wake>> WatchIndex::Wakes(
    const ServingSnapshot& before, const ServingSnapshot& after) const {
  std::vector<std::pair<StreamId, Wake>> wakes;
  const Snapshot& next = after.snapshot();
  const ChangeSet& changes = next.changes();
  if (WakesAll(before, after)) {
    wakes.reserve(streams_.size());
    for (const auto& [stream, params] : streams_) {
      wakes.emplace_back(stream, Wake());
      wakes.back().second.all = true;
    }
    std::sort(wakes.begin(), wakes.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return wakes;
  }
  // What each woken stream is to re-examine, one entry per (stream, type or
  // name), gathered flat and then grouped by stream: no hash table of woken
  // streams. A stream watching nothing that changed is not touched.
  struct Found {
    StreamId stream;
    uint32_t order;  // Keeps a stream's entries in the order found.
    const ResourceType* type;
    const std::string* name;  // Null: every changed name of the type (wildcard).
  };
  std::vector<Found> found;
  auto add = [&](StreamId stream, const ResourceType* type, const std::string* name) {
    found.push_back({stream, static_cast<uint32_t>(found.size()), type, name});
  };
  for (const auto& [type, names] : changes.by_type) {
    auto index = index_.find(type->type_url());
    if (index == index_.end()) continue;
    for (StreamId stream : index->second.wildcard) add(stream, type, nullptr);
    for (const auto* list : {&names.added, &names.changed, &names.removed}) {
      for (const std::string& name : *list) {
        auto watchers = index->second.by_name.find(name);
        if (watchers == index->second.by_name.end()) continue;
        const SelectionChange selection(before, after, *type, name);
        // Most streams select with their node's parameters: such a stream
        // is woken only when the variant they select changed (the other
        // variants of the name are not its business).
        for (const auto& [canonical, group] : watchers->second.uniform) {
          if (!selection.Changed(*group.params)) continue;
          for (StreamId stream : group.streams) add(stream, type, &name);
        }
        for (StreamId stream : watchers->second.mixed) add(stream, type, &name);
      }
    }
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.stream != b.stream ? a.stream < b.stream : a.order < b.order;
  });
  // Room for every woken stream first: the vector would copy its Wakes as it
  // grows (their small vectors' moves are not noexcept).
  size_t streams = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    if (i == 0 || found[i].stream != found[i - 1].stream) ++streams;
  }
  wakes.reserve(streams);
  for (const Found& entry : found) {
    if (wakes.empty() || wakes.back().first != entry.stream) wakes.emplace_back(entry.stream, Wake());
    Wake& wake = wakes.back().second;
    if (entry.name == nullptr) {
      wake.types.push_back(entry.type);
    } else {
      wake.names.emplace_back(entry.type, entry.name);
    }
  }
  return wakes;
}

}  // namespace facet::xds
