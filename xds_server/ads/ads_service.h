// The Aggregated Discovery Service (SotW and delta) over gRPC's callback
// API: one reactor per stream, no thread per stream.
#ifndef FACET_XDS_SERVER_ADS_ADS_SERVICE_H_
#define FACET_XDS_SERVER_ADS_ADS_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "xds_server/ads/ads_observer.h"
#include "xds_server/ads/ads_stats.h"
#include "xds_server/ads/client_status.h"
#include "xds_server/ads/nack_log.h"
#include "xds_server/ads/parameter_mapping.h"
#include "xds_server/ads/response_budget.h"
#include "xds_server/ads/serving_snapshot.h"
#include "xds_server/ads/walk_pool.h"
#include "xds_server/ads/stall_check.h"
#include "xds_server/ads/writes_in_flight.h"
#include "xds_server/ads/stream_state.h"
#include "xds_server/ads/subscription_ledger.h"
#include "xds_server/ads/watch_index.h"
#include "xds_server/snapshot_store/demand_change.h"
#include "xds_server/snapshot_store/snapshot_store.h"

namespace facet::xds {

class ClientStatusService;

// Returns the identity of a peer whose certificate gRPC verified: its SPIFFE
// ID (set by gRPC only for exactly one URI SAN that is one) and DNS SANs,
// and has_certificate. Empty without a verified client certificate.
ClientIdentity IdentityOf(const grpc::AuthContext& auth);

// Both methods are raw (ByteBuffer) callback methods: requests are parsed
// here, and SotW responses are encoded from the variants' shared bytes
// without building a message per stream (wire.h). The service is the gRPC
// glue around its parts: each stream's protocol state (StreamState), the
// watch index, the response budget, the subscription ledger, the NACK log,
// the write-stall check and the counters (AdsObserver). Thread-safe.
class AdsService final
    : public envoy::service::discovery::v3::AggregatedDiscoveryService::
          WithRawCallbackMethod_StreamAggregatedResources<
              envoy::service::discovery::v3::AggregatedDiscoveryService::
                  WithRawCallbackMethod_DeltaAggregatedResources<
                      envoy::service::discovery::v3::AggregatedDiscoveryService::Service>> {
 public:
  struct Options {
    std::shared_ptr<const ParameterMapping> mapping = std::make_shared<ParameterMapping>();
    // Largest request accepted on a stream, in bytes (also set on the server).
    int max_request_bytes = 4 << 20;
    // Names subscribed per stream (cumulative across delta requests), their
    // bytes, and distinct type URLs per stream; a request beyond any ends its
    // stream with RESOURCE_EXHAUSTED.
    StreamState::Limits stream_limits;
    // Memory (StreamState::SubscriptionMemory) the subscriptions of every
    // stream on one connection (one peer address), and of every stream of the
    // server, may hold; a request beyond either ends its stream with
    // RESOURCE_EXHAUSTED. Zero: unlimited.
    int64_t max_subscription_memory_per_connection = int64_t{256} << 20;
    int64_t max_subscription_memory = int64_t{1} << 30;
    // NACK records kept (one per type, name and variant version): later ones
    // are counted, not kept.
    int max_nack_records = 1024;
    // Bytes of a NACK's error detail kept and logged (the rest is cut).
    int max_error_detail_bytes = 4096;
    // A stream whose write has not completed for this long is cancelled.
    // Zero disables the check.
    absl::Duration write_stall_timeout = absl::Minutes(2);
    // Bytes of responses being written at once, over every stream: while
    // this many are in flight (clients that read slowly or not at all),
    // further responses wait until writes complete or stalled streams are
    // cancelled. One response is always allowed. Zero: unlimited.
    int64_t response_memory_budget_bytes = int64_t{256} << 20;
    // Threads that push a snapshot's change: a change that wakes at least
    // twice `min_streams_per_walker` streams is pushed by up to this many at
    // once (the publisher's thread and helpers started with the service,
    // each taking every n-th stream woken); a smaller one by the publisher's
    // thread alone. Zero: as many as the CPUs the process may run on, at
    // most 4. One: the publisher's thread alone, always.
    int push_walkers = 0;
    size_t min_streams_per_walker = 256;
    // Told every subscription started and ended, when set. Not owned; must
    // outlive the service.
    DemandObserver* demand_observer = nullptr;
    // Told what the service does (for metrics), besides stats(), when set.
    // Not owned; must outlive the service.
    AdsObserver* observer = nullptr;
    // The client identities (valid allowedClients entries) whose CSDS calls
    // report every client; any other caller sees only the clients with its
    // own identity (ClientStatusService).
    std::vector<AllowedClient> csds_readers;
  };

  // Serves the snapshots published to `store`, which must outlive the service.
  AdsService(SnapshotStore& store, Options options);
  ~AdsService() override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StreamAggregatedResources(
      grpc::CallbackServerContext* context) override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* DeltaAggregatedResources(
      grpc::CallbackServerContext* context) override;

  // Ends every open stream with UNAVAILABLE (clients reconnect elsewhere) and
  // refuses new ones. Call before grpc::Server::Shutdown.
  void Drain();

  // Thread-safe introspection.
  AdsStats stats() const;
  std::vector<NackRecord> nacks() const;
  // Returns how many open streams hold at least one resource of each
  // authority ("" for old-style names); authorities none holds are left out.
  // Kept up as streams change, not counted on each call.
  std::map<std::string, int> StreamsPerAuthority() const;
  // Returns how many streams hold each variant, keyed by (type URL, name, version).
  std::map<std::tuple<std::string, std::string, std::string>, int> ClientsPerVariant() const;
  // Returns what each open stream's client holds (CSDS), by stream id,
  // within query.max_bytes. Takes each stream's lock once, briefly: O(open
  // streams + names they hold).
  ClientStatusReport ClientStatuses(const ClientStatusQuery& query) const;
  // Returns the snapshot streams are served from now.
  std::shared_ptr<const Snapshot> CurrentSnapshot() const;
  // Returns the CSDS service (ClientStatusService) reporting on this
  // service's streams: register it on the same gRPC server.
  grpc::Service& client_status_service();

  class StreamCore;  // Per-stream state shared by a reactor and the service.

 private:
  template <typename Request, typename Response>
  class Reactor;
  void OnSnapshot(std::shared_ptr<const Snapshot> snapshot);
  // Registers `core` and returns the snapshot it starts from, atomically: a
  // snapshot published later notifies it. Null when draining.
  std::shared_ptr<const ServingSnapshot> Register(const std::shared_ptr<StreamCore>& core,
                                                  uint64_t* sequence);
  // Applies a stream's watch changes to the index and returns the current
  // snapshot, atomically (a change published later wakes the stream).
  // Also records the parameters the stream's subscriptions all select with
  // (null: they differ), which decide whether a change wakes it. When they
  // differ from the ones recorded before, `watched` must be everything the
  // stream watches now (its entries move to their new group).
  std::shared_ptr<const ServingSnapshot> UpdateWatches(
      StreamCore* core, const std::vector<WatchChange>& changes,
      std::shared_ptr<const Parameters> uniform_params, const std::vector<WatchChange>& watched,
      uint64_t* sequence);
  void Unregister(StreamCore* core, const std::vector<WatchChange>& watches);
  void RecordOutcome(const StreamCore& core, RequestOutcome& outcome);
  void RecordPush(const StreamCore& core, const PushRecord& record);
  // Gives freed heap back to the system once streams have freed enough since
  // the last time (glibc keeps freed memory in its arenas otherwise). Called
  // with no lock held, after a stream's state is freed.
  void ReturnFreedMemory(int64_t bytes);
  std::vector<std::shared_ptr<StreamCore>> Cores() const;

  Options options_;
  // What the service reports goes to stats_ and options_.observer.
  AdsStatsCounter stats_;
  AdsObserverPair observer_;
  NackLog nack_log_;
  // Taken after a stream's own lock, never with mu_.
  ResponseBudget budget_;
  // Taken under a stream's lock.
  SubscriptionLedger subscriptions_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const ServingSnapshot> current_ ABSL_GUARDED_BY(mu_);
  uint64_t sequence_ ABSL_GUARDED_BY(mu_) = 1;
  // Open streams by id.
  absl::flat_hash_map<uint64_t, std::shared_ptr<StreamCore>> streams_ ABSL_GUARDED_BY(mu_);
  WatchIndex index_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_stream_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::atomic<int64_t> freed_since_trim_{0};
  // The writes in flight, when the stall check runs (else null): set by the
  // constructor, outlives stall_check_.
  std::unique_ptr<WritesInFlight> writes_in_flight_;
  // Made last by the constructor and destroyed first by the destructor, so
  // that its scans never see a half-built service.
  std::unique_ptr<StallCheck> stall_check_;
  std::unique_ptr<ClientStatusService> client_status_;
  // Shares a big change's pushes among its walkers (OnSnapshot): outlives
  // watch_, so no delivery is in progress when it is destroyed.
  std::unique_ptr<WalkPool> push_walkers_;
  // Dropped first by the destructor, which waits for a delivery in progress.
  SnapshotStore::WatchHandle watch_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_ADS_SERVICE_H_
