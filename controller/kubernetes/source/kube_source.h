// The Kubernetes source: keeps XdsResource and XdsAuthority objects in sync
// with the API server (reflectors), builds a snapshot from them after every
// burst of changes, publishes it, and — while this replica leads — writes
// every object's status.
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
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
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
    // Told what each published snapshot took (see Publisher::Options).
    std::function<void(const PublishTiming&)> on_published;
  };
  // The publisher's counters (builds, validated and rejected objects, ...)
  // and the cluster's.
  struct Stats : PublishStats {
    int64_t status_writes = 0;
    int64_t status_errors = 0;
    int64_t revision_writes = 0;    // ControllerRevisions written (last accepted specs).
    int64_t revision_errors = 0;
    kube::Reflector::Counters reflectors;  // Summed over every reflector.
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
  // Returns the XdsAuthority objects as currently watched (for admission
  // reviews). Thread-safe.
  std::vector<xds::AuthorityObject> AuthorityObjects() const;

 private:
  enum class Kind { kResource, kAuthority, kRevision, kSlice };
  void Enqueue(Kind kind, const std::vector<kube::ObjectDelta>& deltas);
  void Run();
  // Feeds the pending watch events (or, the first time, every cached object)
  // to the builder, builds and publishes when what is served changed
  // (Publisher). Returns whether any object's status changed.
  bool BuildAndPublish();
  void Apply(Kind kind, const YAML::Node& object, const std::string& key, bool deleted);
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
  // Worker thread only:
  bool loaded_ = false;  // Whether every cached object was fed once.
  bool status_backlog_ = false;  // The last status pass stopped at its write budget.
  // Where that pass stopped: the next one starts there.
  std::optional<xds::ObjectRef> status_cursor_;
  bool status_waiting_ = false;  // A build changed a status since the last pass.
  // Per owner (RevisionOwnerKey, "<Kind>/namespace/name"): the newest
  // revision fed to the builder (its generation, its key).
  std::map<std::string, std::pair<int64_t, std::string>> newest_revision_;
  std::set<xds::ObjectRef> to_record_;  // Accepted, revision not yet written.
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
