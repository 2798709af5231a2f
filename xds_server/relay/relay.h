// `facet relay`'s engine: the ADS server's second source. Downstream demand
// (from the AdsService) becomes upstream locator subscriptions, one upstream
// client per distinct server list; upstream responses become cache
// transactions published as partial snapshots to the SnapshotStore.
#ifndef FACET_XDS_SERVER_RELAY_RELAY_H_
#define FACET_XDS_SERVER_RELAY_RELAY_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "xds_server/relay/relay_cache.h"
#include "xds_server/relay_config/relay_config.h"
#include "xds_server/snapshot_store/demand_change.h"
#include "xds_server/snapshot_store/snapshot_store.h"
#include "xds_server/upstream/upstream_client.h"

namespace facet::xds {

struct RelayStats {
  RelayCacheStats cache;
  int64_t upstream_streams = 0;  // Upstream clients with a connected stream.
  int64_t upstream_reconnects = 0;
  int64_t upstream_failovers = 0;
  int64_t upstream_nacks_sent = 0;
  int64_t upstream_requests_sent = 0;  // Subscriptions, ACKs and NACKs written.
  // Per upstream server list: its first server_uri, and whether connected.
  std::vector<std::pair<std::string, bool>> upstreams;
};

// Thread-safe. Pass it to AdsService::Options::demand_observer; it must
// outlive the service. Its lifetime in a process: construct it, construct the
// service (which watches the store), Start() it, and Stop() it once the
// service's streams have ended and before the service is destroyed, so no
// snapshot is published while the service stops watching.
class Relay final : public DemandObserver {
 public:
  struct Options {
    RelayConfig config;
    UpstreamClient::Options upstream;  // The node is taken from config.node.
    absl::Duration linger = absl::Seconds(10);
    // Called on the relay's worker after it published a snapshot, with the
    // time from the upstream response or downstream demand that made it (the
    // first, when several are published at once) to its publication. May be
    // empty.
    std::function<void(absl::Duration since_change)> on_published;
  };

  // Will publish into `store`, which must outlive the relay. Nothing is
  // published before Start().
  Relay(SnapshotStore& store, Options options);
  // Stops, if Start() was called and Stop() was not.
  ~Relay() override;

  // Publishes an empty partial snapshot (nothing is answered before upstream
  // has) and starts the worker that publishes the cache's later snapshots.
  // Call once.
  void Start();
  // Stops publishing: when it returns, the worker has ended and every
  // upstream stream is closed; later demand and upstream responses are
  // ignored. Idempotent.
  void Stop();

  void OnDemand(const std::vector<DemandChange>& changes) override;

  // Not while Stop() runs.
  RelayStats stats() const;
  // Returns the cache's per-resource stats (RelayCache::ResourceStats): at
  // most `max`, with their number in *total.
  std::vector<RelayResourceStats> ResourceStats(size_t max, size_t* total) const;

 private:
  class Listener;

  absl::Status OnUpdate(int upstream, const UpstreamUpdate& update);
  // Carries out a cache operation's effects: queues its snapshot for the
  // worker to publish and sends its upstream requests.
  void Effect(std::vector<Fetch> fetches, std::shared_ptr<const Snapshot> snapshot,
              absl::Time changed_at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The worker: publishes queued snapshots in order and expires lingering
  // subscriptions, until stopping_.
  void WorkUntilStopped();

  SnapshotStore& store_;
  Options options_;
  // Serializes cache operations with their effects (upstream requests, and
  // queueing snapshots), so they happen in the order the cache decided them.
  mutable absl::Mutex mu_;
  RelayCache cache_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::vector<std::unique_ptr<UpstreamClient>> upstreams_;
  struct ToPublish {
    std::shared_ptr<const Snapshot> snapshot;
    absl::Time changed_at;  // When the event that made it arrived.
  };
  std::deque<ToPublish> to_publish_ ABSL_GUARDED_BY(mu_);
  // Stop() has begun: the worker ends, demand and upstream responses are
  // ignored, and upstreams_ is being emptied (by Stop() alone, outside mu_).
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_RELAY_RELAY_H_
