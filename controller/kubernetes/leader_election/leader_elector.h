// Leader election on a coordination.k8s.io/v1 Lease, with client-go's
// semantics and timings: several replicas serve xDS, exactly one leads (and
// writes status).
#ifndef FACET_CONTROLLER_KUBERNETES_LEADER_ELECTION_LEADER_ELECTOR_H_
#define FACET_CONTROLLER_KUBERNETES_LEADER_ELECTION_LEADER_ELECTOR_H_

#include <atomic>
#include <limits>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "controller/kubernetes/client/clock.h"
#include "controller/kubernetes/client/kube_client.h"

namespace facet::controller {

// Owns one thread (after Start). is_leader() is thread-safe; Tick() is for
// the owning thread or, in tests, a thread that never called Start().
using kube::Clock;
using kube::KubeClient;

class LeaderElector {
 public:
  struct Options {
    std::string lease_namespace;
    std::string lease_name = "facet-controller";
    std::string identity;  // Unique per replica (pod name + random suffix).
    absl::Duration lease_duration = absl::Seconds(15);
    absl::Duration renew_deadline = absl::Seconds(10);
    absl::Duration retry_period = absl::Seconds(2);
    // Wall-clock time written into acquireTime/renewTime. Expiry is judged
    // on the monotonic Clock, never on these.
    std::function<absl::Time()> wall_now = [] { return absl::Now(); };
  };
  // Called with true when this replica starts leading, false when it stops.
  // Runs on the elector's thread: must only enqueue.
  using Callback = std::function<void(bool leading)>;

  // Fails with InvalidArgument unless lease_duration > renew_deadline >
  // 1.2 * retry_period, and namespace, name and identity are set.
  static absl::StatusOr<std::unique_ptr<LeaderElector>> Create(KubeClient& client, Clock& clock,
                                                               Options options, Callback callback);
  ~LeaderElector();  // Stops, releasing the lease if held.

  // Runs Tick() every retry_period on a new thread.
  void Start();
  // Stops the thread; if leading, releases the lease (empty holder,
  // leaseDurationSeconds 1) so another replica takes over at once.
  void Stop();

  // Makes one attempt to acquire or renew; returns whether this replica leads.
  bool Tick();
  // Whether this replica leads: it holds the lease and renewed it less than
  // renew_deadline ago, on the monotonic clock. So a replica whose renewal
  // hangs (a slow API server) stops counting itself leader before the lease
  // can pass to another (lease_duration > renew_deadline), even while the
  // hung request has not returned.
  bool is_leader() const;
  const std::string& identity() const { return options_.identity; }

 private:
  LeaderElector(KubeClient& client, Clock& clock, Options options, Callback callback);
  std::string LeasePath() const;
  std::string LeaseCollection() const;
  bool TryCreate(absl::Time now);
  void SetLeading(bool leading);
  void Release();

  KubeClient& client_;
  Clock& clock_;
  const Options options_;
  const Callback callback_;
  std::atomic<bool> leading_{false};
  // When the lease was last renewed, in nanoseconds of clock_ (read by
  // is_leader() from any thread).
  std::atomic<int64_t> last_renew_nanos_{std::numeric_limits<int64_t>::min()};
  // Owning thread only:
  absl::Time last_renew_ = absl::InfinitePast();
  std::string observed_record_;
  absl::Time observed_time_ = absl::InfinitePast();
  absl::Notification stop_;
  std::thread thread_;
};

// Formats a time as a Kubernetes MicroTime ("2006-01-02T15:04:05.000000Z").
std::string FormatMicroTime(absl::Time time);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_KUBERNETES_LEADER_ELECTION_LEADER_ELECTOR_H_
