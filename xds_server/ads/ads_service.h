// The Aggregated Discovery Service (SotW and delta) over gRPC's callback
// API: one reactor per stream, no thread per stream.
#ifndef FACET_XDS_SERVER_ADS_ADS_SERVICE_H_
#define FACET_XDS_SERVER_ADS_ADS_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "xds_server/ads/parameter_mapping.h"
#include "xds_server/ads/serving_snapshot.h"
#include "xds_server/ads/snapshot_store.h"
#include "xds_server/ads/stream_state.h"

namespace facet::xds {

// Counters for logs, the admin endpoint and metrics.
struct AdsStats {
  int64_t streams_open = 0;
  int64_t streams_total = 0;
  int64_t pushes = 0;
  int64_t acks = 0;
  int64_t nacks = 0;
  int64_t snapshots = 0;
};

// The last NACK clients sent for one resource variant.
struct NackRecord {
  std::string type_url;
  std::string name;
  std::string version;
  std::string label;
  std::string node_id;  // The last client that NACKed it.
  std::string error_detail;
  int64_t count = 0;
};

class AdsService final
    : public envoy::service::discovery::v3::AggregatedDiscoveryService::CallbackService {
 public:
  struct Options {
    std::shared_ptr<const ParameterMapping> mapping = std::make_shared<ParameterMapping>();
    // Largest request accepted on a stream, in bytes (also set on the server).
    int max_request_bytes = 4 << 20;
  };

  // Serves the snapshots published to `store`, which must outlive the service.
  AdsService(SnapshotStore& store, Options options);
  ~AdsService() override;

  grpc::ServerBidiReactor<envoy::service::discovery::v3::DiscoveryRequest,
                          envoy::service::discovery::v3::DiscoveryResponse>*
  StreamAggregatedResources(grpc::CallbackServerContext* context) override;

  grpc::ServerBidiReactor<envoy::service::discovery::v3::DeltaDiscoveryRequest,
                          envoy::service::discovery::v3::DeltaDiscoveryResponse>*
  DeltaAggregatedResources(grpc::CallbackServerContext* context) override;

  // Ends every open stream with UNAVAILABLE (clients reconnect elsewhere) and
  // refuses new ones. Call before grpc::Server::Shutdown.
  void Drain();

  // Thread-safe introspection.
  AdsStats stats() const;
  std::vector<NackRecord> nacks() const;
  // Returns how many open streams hold at least one resource of each
  // authority ("" for old-style names).
  std::map<std::string, int> StreamsPerAuthority() const;
  // Returns how many streams hold each variant, keyed by (type URL, name, version).
  std::map<std::tuple<std::string, std::string, std::string>, int> ClientsPerVariant() const;

  class StreamCore;  // Per-stream state shared by a reactor and the service.

 private:
  template <typename Request, typename Response>
  class Reactor;

  void OnSnapshot(std::shared_ptr<const Snapshot> snapshot);
  std::shared_ptr<const ServingSnapshot> current() const;
  void Register(const std::shared_ptr<StreamCore>& core);
  void Unregister(const StreamCore* core);
  void RecordOutcome(const StreamCore& core, const RequestOutcome& outcome);
  void RecordPush(const StreamCore& core, const PushRecord& record);

  Options options_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const ServingSnapshot> current_ ABSL_GUARDED_BY(mu_);
  std::map<const StreamCore*, std::shared_ptr<StreamCore>> streams_ ABSL_GUARDED_BY(mu_);
  std::map<std::tuple<std::string, std::string, std::string>, NackRecord> nacks_
      ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_stream_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::atomic<int64_t> streams_total_{0};
  std::atomic<int64_t> pushes_{0};
  std::atomic<int64_t> acks_{0};
  std::atomic<int64_t> nacks_count_{0};
  std::atomic<int64_t> snapshots_{0};
  // Declared last: destroyed first, so no snapshot arrives mid-destruction.
  SnapshotStore::WatchHandle watch_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_ADS_SERVICE_H_
