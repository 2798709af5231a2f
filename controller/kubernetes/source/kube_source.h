// The Kubernetes source: keeps XdsResource and XdsAuthority objects, and the
// Gateway API objects Facet translates (Services, EndpointSlices,
// GRPCRoutes, ReferenceGrants, XdsVariantPolicies), in sync with the API
// server (reflectors), builds a snapshot from them after every burst of
// changes, publishes it, and — while this replica leads — writes every
// object's status.
#ifndef FACET_CONTROLLER_KUBERNETES_SOURCE_KUBE_SOURCE_H_
#define FACET_CONTROLLER_KUBERNETES_SOURCE_KUBE_SOURCE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/gateway/front_end/gateway_front_end.h"
#include "controller/gateway/model/gateway_object.h"
#include "controller/gateway/model/gateway_status.h"
#include "controller/gateway/translate/service_port.h"
#include "controller/kubernetes/client/kube_client.h"
#include "controller/kubernetes/client/reflector.h"
#include "controller/kubernetes/revisions/revisions.h"
#include "controller/kubernetes/status/status_writer.h"
#include "controller/sources/publisher/publisher.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/incremental_builder.h"
#include "xds_server/snapshot_store/snapshot_store.h"

namespace facet::controller {

// Owns the reflectors and one worker thread that builds, publishes and writes
// status. Accessors are thread-safe.
class KubeSource {
 public:
  struct Options {
    std::vector<std::string> namespaces;  // Empty: every namespace.
    xds::BuildOptions build;              // authority_policy is always kEnforce.
    // Changes arriving within this window after the first make one snapshot.
    absl::Duration debounce = absl::Milliseconds(5);
    // EndpointSlice changes within this window make one build (a rolling
    // update of many pods causes few pushes).
    absl::Duration slice_coalesce = absl::Milliseconds(100);
    // How often the leader re-checks status for client feedback (connected
    // clients per variant, NACKs) when nothing else changed.
    absl::Duration status_resync = absl::Seconds(10);
    // Status writes in one pass; the rest follow a second later, so churn
    // (clients coming and going on many objects) cannot flood the API server.
    // The next pass goes on from the object where the budget ran out.
    int max_status_writes_per_pass = 100;
    // The least time from the start of one pass to the next, unless one is
    // asked for (RequestStatusSync): passes for a backlog, and passes for
    // builds that changed a status, wait until then.
    absl::Duration status_backlog_retry = absl::Seconds(1);
    kube::Clock* clock = nullptr;  // Null: real clock.
    // Whether Gateway API objects are watched and translated (--gateway-api):
    // Services, EndpointSlices, and the GRPCRoutes, ReferenceGrants and
    // XdsVariantPolicies whose CRDs discovery finds. Off: no reflector for
    // them, nothing generated.
    bool gateway_api = true;
    gateway::TranslateOptions gateway;  // --cluster-domain.
    // How often a Gateway API kind that discovery did not find is looked for
    // again (its CRD may be installed later).
    absl::Duration gateway_discovery_interval = absl::Seconds(60);
    // Told what each published snapshot took (see Publisher::Options).
    std::function<void(const PublishTiming&)> on_published;
    // Told each rejection and each object accepted again (see
    // Publisher::Options).
    std::function<void(const ReportEvent&)> on_report;
  };
  // The publisher's counters (builds, validated and rejected objects, ...)
  // and the cluster's.
  struct Stats : PublishStats {
    int64_t status_writes = 0;
    int64_t status_errors = 0;
    int64_t revision_writes = 0;    // ControllerRevisions written (last accepted specs).
    int64_t revision_errors = 0;
    kube::Reflector::Counters reflectors;  // Summed over every reflector.
    // Per gated Gateway API kind (GRPCRoute, ReferenceGrant,
    // XdsVariantPolicy): whether discovery found it served, once asked
    // (facet_gateway_kind_available). Empty with gateway_api off.
    std::map<std::string, bool> gateway_kinds;
    // Gateway API objects (and slices) handed to the front end as new or
    // changed; a watch event that changes neither generation nor
    // resourceVersion (routes, policies: generation only) hands nothing.
    int64_t gateway_upserts = 0;
  };

  // `ads` (for client feedback) may be null. `is_leader` says whether this
  // replica writes status; null: always.
  KubeSource(kube::KubeClient& client, xds::SnapshotStore& store, const xds::AdsService* ads,
             std::function<bool()> is_leader, Options options);
  ~KubeSource();

  void Start();
  void Stop();

  // Whether every reflector has listed once and a snapshot was published.
  bool ready() const { return ready_; }
  // Asks the worker to write status now (e.g. on becoming leader).
  void RequestStatusSync();
  Stats stats() const;
  std::vector<xds::ObjectStatus> statuses() const;
  // Returns the same statuses as shared, without copying them.
  std::vector<std::shared_ptr<const xds::ObjectStatus>> shared_statuses() const;
  // Returns the XdsAuthority objects as currently watched (for admission
  // reviews). Thread-safe.
  std::vector<xds::AuthorityObject> AuthorityObjects() const;

 private:
  enum class Kind {
    kResource,
    kAuthority,
    kRevision,
    kSlice,
    // Gateway API kinds (the front end's); slices feed the front end too.
    kService,
    kReferenceGrant,
    kVariantPolicy,
    kGrpcRoute,
  };
  // The reflectors of one Gateway API kind and whether it is served.
  struct GatewayCollection {
    Kind kind;
    std::string kind_name;      // "GRPCRoute".
    std::string group_version;  // "gateway.networking.k8s.io/v1".
    std::string plural;
    bool gated = true;  // Watched only once discovery finds it (a CRD); else always.
    std::vector<std::unique_ptr<kube::Reflector>> reflectors;  // Fixed at construction.
    // Worker thread only. Unset: not known yet (discovery not asked, or it
    // failed): the source waits for it before its first publication.
    std::optional<bool> available;
    std::optional<absl::Time> checked;  // When discovery last answered or failed.
    bool started = false;
    bool warned = false;             // Its absence was logged.
    bool discovery_failing = false;  // A failure of discovery was logged.
  };
  void Enqueue(Kind kind, const std::vector<kube::ObjectDelta>& deltas);
  void Run();
  // Feeds the pending watch events (or, the first time, every cached object)
  // to the builder, builds and publishes when what is served changed
  // (Publisher). Returns whether any object's status changed.
  bool BuildAndPublish();
  void Apply(Kind kind, const YAML::Node& object, const std::string& key, bool deleted);
  // Hands a Gateway API object (or a slice) to the front end, unless the
  // front end already has this generation (GRPCRoutes, policies: status
  // writes change only the resourceVersion) or resourceVersion (the rest).
  void ApplyGateway(Kind kind, const YAML::Node& object, const std::string& key, bool deleted);
  // Asks discovery about every gated kind not known yet, or absent and due
  // again, and starts the reflectors of those found (and of the ungated
  // kinds, at the first call).
  void DiscoverGatewayKinds();
  // How long until DiscoverGatewayKinds has something to ask; nullopt: never.
  std::optional<absl::Duration> NextGatewayDiscovery() const;
  // Whether every Gateway API kind is known and, when served, listed once.
  bool GatewaySynced() const;
  const GatewayCollection* CollectionOf(absl::string_view kind_name) const;
  // The newest ControllerRevision of a GRPCRoute (or policy), as the object
  // it recorded.
  std::optional<gateway::GatewayObject> LastGoodGateway(const xds::ObjectRef& ref) const;
  // Records the accepted spec of each object accepted since the last call
  // (all accepted objects when `all`) in a ControllerRevision. Leader only.
  void SyncRevisions(bool all);
  static bool UsesSlices(const xds::ResourceObject& object);
  // Drops what is kept of an object built from EndpointSlices.
  void ForgetSliced(const xds::ObjectRef& ref);
  // Fills the object's endpointsFrom variants from the current slices and
  // upserts it.
  void UpsertWithSlices(const xds::ObjectRef& ref);
  // The newest ControllerRevision of `ref`, as the object it recorded.
  std::optional<xds::ResourceObject> LastGood(const xds::ObjectRef& ref) const;
  void SyncStatus();

  kube::KubeClient& client_;
  const xds::AdsService* ads_;
  std::function<bool()> is_leader_;
  const Options options_;
  std::unique_ptr<kube::Clock> owned_clock_;
  kube::Clock* clock_;
  std::vector<std::unique_ptr<kube::Reflector>> resource_reflectors_;
  std::vector<std::unique_ptr<kube::Reflector>> revision_reflectors_;
  std::vector<std::unique_ptr<kube::Reflector>> slice_reflectors_;
  std::unique_ptr<kube::Reflector> authority_reflector_;
  std::vector<GatewayCollection> gateway_collections_;  // Empty with gateway_api off.
  StatusWriter status_writer_;
  RevisionWriter revision_writer_;
  std::atomic<bool> ready_{false};

  mutable absl::Mutex mu_;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  bool slices_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool status_due_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);  // Its PublishStats part is the publisher's.
  // Watch events not yet built, latest per (kind, key), and when the first
  // of them arrived.
  std::map<std::pair<Kind, std::string>, kube::ObjectDelta> pending_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> first_change_ ABSL_GUARDED_BY(mu_);

  // Worker thread only, but for its thread-safe accessors:
  Publisher publisher_;
  // Worker thread only; null with gateway_api off.
  std::unique_ptr<gateway::GatewayFrontEnd> front_end_;
  // The generation or resourceVersion of each object the front end holds.
  std::map<xds::ObjectRef, std::string> gateway_versions_;
  int64_t gateway_upserts_ = 0;  // Stats::gateway_upserts.
  // Worker thread only:
  bool loaded_ = false;  // Whether every cached object was fed once.
  bool status_backlog_ = false;  // The last status pass stopped at its write budget.
  // Where that pass stopped: the next one starts there.
  std::optional<xds::ObjectRef> status_cursor_;
  bool status_waiting_ = false;  // A build changed a status since the last pass.
  // Per owner (RevisionOwnerKey, "<Kind>/namespace/name"): the newest
  // revision fed to the builder (its generation, its key).
  std::map<std::string, std::pair<int64_t, std::string>> newest_revision_;
  // Accepted, revision not yet written: XdsResources, GRPCRoutes (and
  // policies) by kind.
  std::set<xds::ObjectRef> to_record_;
  // EndpointSlices: slice keys per "namespace/service"; the objects built
  // from each Service; those objects as parsed (resolved on every change).
  std::map<std::string, std::set<std::string>> slices_by_service_;
  std::map<std::string, std::set<xds::ObjectRef>> dependents_;
  std::map<xds::ObjectRef, xds::ResourceObject> sliced_objects_;
  absl::Time last_status_sync_ = absl::InfinitePast();
  std::thread worker_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_KUBERNETES_SOURCE_KUBE_SOURCE_H_
