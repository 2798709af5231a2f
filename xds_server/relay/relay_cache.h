// The relay's database (xRFC TP2 caching xDS proxy): upstream variants with
// their constraints per (type, name), the downstream demand, and the upstream
// subscriptions that demand needs, projected onto the keys each resource's
// variants constrain.
#ifndef FACET_XDS_SERVER_RELAY_RELAY_CACHE_H_
#define FACET_XDS_SERVER_RELAY_RELAY_CACHE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/snapshot/snapshot.h"
#include "xds_server/snapshot_store/demand_change.h"
#include "xds_server/upstream/upstream_client.h"

namespace facet::xds {

// An upstream subscription to start or end.
struct Fetch {
  UpstreamSubscription subscription;
  // Which upstream serves the name (RelayCache::Options::route's answer).
  int upstream = 0;
  bool subscribe = true;  // False: unsubscribe.
};

struct RelayCacheStats {
  int64_t upstream_subscriptions = 0;  // Live now, lingering included.
  int64_t cached_variants = 0;         // Distinct variants held now.
  int64_t resources = 0;               // (type, name) entries.
  int64_t hits = 0;                    // Downstream parameter sets answered from the cache.
  int64_t misses = 0;                  // Downstream parameter sets that had to wait for upstream.
  int64_t updates_applied = 0;
  int64_t updates_rejected = 0;
};

// What the cache did for one resource while it kept it: how many
// downstream parameter sets found it answered (hits) and how many had to
// wait for upstream (misses).
struct RelayResourceStats {
  std::string type_url;
  std::string name;
  int upstream = -1;  // Options::route's answer; -1: no upstream serves it.
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t cached_variants = 0;  // Served now.
};

// Not thread-safe: the relay serializes calls. Pure: time is passed in, and
// what to do upstream is returned, never done.
class RelayCache {
 public:
  struct Options {
    // Returns the upstream a name is fetched from, or -1 when no upstream
    // serves it (an xdstp authority the relay does not know): such names do
    // not exist for downstream clients.
    std::function<int(const std::string& name)> route;
    // How long an upstream subscription no downstream stream needs is kept.
    absl::Duration linger = absl::Seconds(10);
    // The bounds a manifest's resource has (max_variants_per_resource,
    // max_keys_per_resource), applied to what upstream sends.
    ConstraintLimits limits;
  };

  explicit RelayCache(Options options);

  // Applies downstream subscription changes. Returns the upstream
  // subscriptions to start (or, never here, end) and, in *snapshot, the
  // snapshot to publish when the served view changed (else null).
  std::vector<Fetch> OnDemand(const std::vector<DemandChange>& changes, absl::Time now,
                              std::shared_ptr<const Snapshot>* snapshot);

  // Applies one upstream response from `upstream` as one transaction. An
  // error (a variant set that breaks TP2 for a subscription; more variants
  // of one name than limits.max_variants_per_resource in the response, or
  // more distinct keys than limits.max_keys_per_resource across the variants
  // the response carries and those of the resource it leaves held) is
  // InvalidArgument naming the type, name and bound, rejects the whole
  // response and changes nothing. Otherwise returns the upstream
  // subscriptions to start or end (key sets learned or changed) and the
  // snapshot to publish when the served view changed.
  absl::Status Apply(int upstream, const UpstreamUpdate& update, absl::Time now,
                     std::vector<Fetch>* fetches, std::shared_ptr<const Snapshot>* snapshot);

  // Ends the upstream subscriptions no downstream stream has needed for
  // `linger`, dropping what they cached. Returns them (as unsubscribes).
  std::vector<Fetch> Expire(absl::Time now, std::shared_ptr<const Snapshot>* snapshot);

  // Returns every live upstream subscription of `upstream` (to resubscribe
  // after reconnecting, for tests and introspection).
  std::vector<UpstreamSubscription> Subscriptions(int upstream) const;

  // Returns the time the next lingering subscription expires, if any.
  std::optional<absl::Time> NextExpiry() const;

  const std::shared_ptr<const Snapshot>& current() const { return current_; }
  RelayCacheStats stats() const;
  // Returns the first `max` resources' stats, in the cache's order (it
  // keeps one entry per resource downstream asks for or upstream sent, so
  // this is bounded by the demand), and sets *total to how many there are.
  std::vector<RelayResourceStats> ResourceStats(size_t max, size_t* total) const;

 private:
  // One upstream subscription: a projected parameter set of one resource.
  struct Sub {
    ParameterSet params;
    int downstream = 0;  // Downstream parameter sets projected onto it.
    absl::Time idle_since = absl::InfiniteFuture();
    bool resolved = false;  // Upstream answered: `variant`, or none exists.
    std::shared_ptr<const Variant> variant;
    uint64_t arrival = 0;  // When `variant` arrived (newest first on overlap).
  };
  struct Entry {
    const ResourceType* type = nullptr;
    std::string name;
    int upstream = -1;
    // The keys the resource's variants constrain, once a variant is seen.
    std::optional<std::set<std::string>> keys;
    // Downstream parameter sets by canonical text, with how many
    // subscriptions hold each, and the sub each projects onto (none while
    // it waits for a probe).
    struct Demand {
      ParameterSet params;
      int count = 0;
      std::optional<std::string> sub;
    };
    std::map<std::string, Demand> demand;
    std::map<std::string, Sub> subs;  // By canonical projected parameters.
    // While the keys are unknown: the sub last fetched as a probe (it blocks
    // others while unanswered and needed), and the demands waiting for it.
    std::optional<std::string> probe;
    std::set<std::string> waiting;
    std::shared_ptr<const ServedResource> served;
    int64_t hits = 0;  // As RelayResourceStats, while the entry is kept.
    int64_t misses = 0;
  };
  using Key = std::pair<const ResourceType*, std::string>;

  // Returns whether `removal` takes away what `sub` holds.
  static bool Removes(const Sub& sub, const UpstreamRemoval& removal);
  Entry& EntryFor(const ResourceType& type, const std::string& name);
  // Points the demands of `entry` (every one when `all`, else those
  // waiting for a probe) at their subs under the current keys, creating (and
  // fetching) subs as needed. Before the keys are known, one probe
  // subscription at a time is fetched per resource.
  void Project(Entry& entry, bool all, absl::Time now, std::vector<Fetch>* fetches);
  // Points the demand keyed `canonical` at its sub, or leaves it waiting.
  void Attach(Entry& entry, const std::string& canonical, Entry::Demand& demand, absl::Time now,
              std::vector<Fetch>* fetches);
  void Detach(Entry& entry, Entry::Demand& demand, absl::Time now);
  // Makes entry.served from its subs; returns whether it changed.
  bool Refresh(Entry& entry);
  void Publish(const std::set<Key>& touched, std::shared_ptr<const Snapshot>* snapshot);
  std::shared_ptr<const Variant> Intern(const ResourceType& type, const UpstreamVariant& variant);

  Options options_;
  std::map<Key, Entry> entries_;
  // Subscriptions no downstream needs: (expiry, entry, sub key).
  std::set<std::tuple<absl::Time, Key, std::string>> idle_;
  int64_t upstream_subscriptions_ = 0;
  int64_t cached_variants_ = 0;
  std::shared_ptr<const Snapshot> current_;
  uint64_t arrivals_ = 0;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
  int64_t updates_applied_ = 0;
  int64_t updates_rejected_ = 0;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_RELAY_RELAY_CACHE_H_
