// Keeps an ObjectCache equal to one Kubernetes collection by list + watch,
// following client-go's Reflector (see /work/shared/notes/kubernetes-api.md):
//
// - First list: resourceVersion=0&limit=500, following `continue` (pages
//   after the first send resourceVersion=""); the resourceVersion comes from
//   the list's metadata. Later relists use the last synced resourceVersion,
//   unpaginated unless the server paginated an RV=0 list. On 410 Expired (an
//   expired continue token) or 504 ResourceVersionTooLarge, the list is
//   retried at once with resourceVersion="" (quorum read).
// - Watch from the list's resourceVersion with bookmarks and timeoutSeconds
//   uniform in [min_watch_timeout, 2 * min_watch_timeout). Every event (and a
//   bookmark alone) advances the resourceVersion, except ADDED events of a
//   watch started at ""/"0", until its first non-ADDED event.
// - Clean end of a watch: re-watch from the last resourceVersion, no relist
//   (unless it lasted under a second with no event: then relist, as client-go
//   does against hot loops). ERROR event (410 Expired/Gone included), broken
//   stream or another error: relist. Connection refused or 429 when starting
//   a watch: back off (at least Retry-After) and re-watch. 500: re-watch with
//   backoff for internal_error_retry after the first one, then relist.
// - Between any two list+watch rounds, and before each re-watch after an
//   error, wait Backoff (800 ms, x2, jitter 1.0, cap 30 s, reset after 2 min).
// - A relist replaces the cache, which reports every missing key as deleted
//   (final_state_unknown).
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_REFLECTOR_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_REFLECTOR_H_

#include <cstdint>
#include <deque>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "controller/kubernetes/client/backoff.h"
#include "controller/kubernetes/client/clock.h"
#include "controller/kubernetes/client/kube_client.h"
#include "controller/kubernetes/client/object_cache.h"

namespace facet::controller::kube {

// Owns one worker thread that makes all KubeClient calls and applies all
// changes; the accessors are thread-safe.
class Reflector {
 public:
  struct Options {
    std::string collection_path;  // e.g. "/apis/facet.dev/v1alpha1/xdsresources"
    std::string name;             // In logs; collection_path when empty.
    std::string label_selector;   // Lists and watches only matching objects; "" for all.
    int64_t page_size = 500;
    absl::Duration min_watch_timeout = absl::Minutes(5);
    Backoff::Params backoff;
    absl::Duration internal_error_retry = absl::Seconds(30);
    // Called on the worker thread, without locks held, after each batch of
    // changes to the cache and once after the first complete list (deltas
    // may then be empty). Must only enqueue (the consumer debounces and
    // reads Snapshot()).
    std::function<void(const std::vector<ObjectDelta>&)> on_change;
    // Null: RealClock. Must outlive the reflector.
    Clock* clock = nullptr;
    // Uniform in [0, 1), for jitter and watch timeouts; null: absl::BitGen.
    // Called on the worker thread only.
    std::function<double()> random;
  };

  // `client` must outlive the reflector.
  Reflector(KubeClient& client, Options options);
  ~Reflector();  // Stop().

  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  // Starts the worker. Call once.
  void Start();

  // Cancels the watch and any backoff wait and joins the worker; waits for a
  // List in flight to return. Idempotent.
  void Stop();

  // Counts of what the reflector did, for metrics. Thread-safe.
  struct Counters {
    int64_t lists = 0;         // Complete lists (all pages).
    int64_t watches = 0;       // Watches started.
    int64_t watch_errors = 0;  // List+watch rounds that ended in an error (then relist).
  };
  Counters counters() const {
    return {lists_.load(), watches_.load(), watch_errors_.load()};
  }

  // Whether a complete list has been applied (stays true).
  bool has_synced() const;
  // The resourceVersion the next watch or relist starts from.
  std::string last_sync_resource_version() const;
  // The cached objects; see ObjectCache for the immutability rule.
  std::shared_ptr<const ObjectCache::Objects> Snapshot() const { return cache_.Snapshot(); }
  // Bumped by every change to the cache.
  int64_t generation() const { return cache_.generation(); }

 private:
  struct Queued {
    uint64_t watch_id = 0;
    std::optional<WatchEvent> event;  // Unset: the end, with `end`.
    absl::Status end;
  };
  struct FullList {
    std::string resource_version;
    std::vector<YAML::Node> items;
    bool paginated = false;
  };
  struct WatchOutcome {
    absl::Status status;  // OK: clean end.
    int events = 0;
  };

  void Run();
  absl::Status ListAndWatch();
  absl::Status ListAndReplace();
  absl::StatusOr<FullList> ListAll(const std::string& resource_version);
  absl::Status WatchLoop();
  WatchOutcome Consume(uint64_t watch_id, bool synthetic_added);
  // Applies one ADDED/MODIFIED/DELETED/BOOKMARK event; clears
  // `synthetic_added` at the first event that is not ADDED.
  void ApplyEvent(const WatchEvent& event, bool& synthetic_added, std::vector<ObjectDelta>& deltas);
  void Deliver(const std::vector<ObjectDelta>& deltas, bool first_sync);
  std::string RelistResourceVersion() const;
  void SetResourceVersion(const std::string& resource_version);
  bool SleepFor(absl::Duration duration);
  void Enqueue(Queued item);
  bool stopping() const;
  bool QueueReadyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  KubeClient& client_;
  const Options options_;
  const std::string name_;
  Clock& clock_;
  std::function<double()> random_;
  ObjectCache cache_;

  // Worker thread only.
  Backoff backoff_;
  bool resource_version_unavailable_ = false;
  bool paginated_result_ = false;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  uint64_t watch_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);

  absl::Notification stop_;  // Interrupts backoff waits.
  std::thread worker_;
  std::atomic<int64_t> lists_{0};
  std::atomic<int64_t> watches_{0};
  std::atomic<int64_t> watch_errors_{0};
};

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_REFLECTOR_H_
