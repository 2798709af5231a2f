// An in-memory KubeClient for tests: an object store with one global
// resourceVersion and a bounded event history, paginated lists, watches the
// test drives (events, bookmarks, expiry, ends), one-shot faults, and a
// record of every List and Watch call.
#ifndef FACET_TEST_FAKES_FAKE_KUBE_CLIENT_H_
#define FACET_TEST_FAKES_FAKE_KUBE_CLIENT_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/kubernetes/client/kube_client.h"
#include "yaml-cpp/yaml.h"

namespace facet::testing {

// Paths work as on the API server: a collection is "/apis/G/V/PLURAL" (or
// "/api/v1/PLURAL") for all namespaces, ".../namespaces/NS/PLURAL" for one;
// an object adds "/NAME", its status "/NAME/status". Test-side methods take
// the all-namespaces collection path.
//
// Discovery: GET "/api/v1" or "/apis/G/V" returns an APIResourceList naming
// the plurals served there (the collections Facet reads, and every one that
// holds objects), or 404 for a group version that serves none. A collection
// marked not served (SetServed) is left out of it and answers 404 to list,
// watch and get, as on a cluster without its CRD.
//
// Thread-safe. Watch callbacks run on the thread that causes the event (the
// test thread, or the caller of Watch for history, synthetic ADDED events and
// injected failures) while the fake's lock is held: they must not call back
// into the fake. Watch handles must be destroyed before the fake.
class FakeKubeClient final : public controller::kube::KubeClient {
 public:
  using ListOptions = controller::kube::ListOptions;
  using ListResult = controller::kube::ListResult;
  using WatchEvent = controller::kube::WatchEvent;
  using WatchHandle = controller::kube::WatchHandle;
  using WatchOptions = controller::kube::WatchOptions;

  struct ListCall {
    std::string path;
    ListOptions options;
  };
  struct WatchCall {
    std::string path;
    WatchOptions options;
  };

  FakeKubeClient();
  ~FakeKubeClient() override;

  // --- The stored state -----------------------------------------------------

  // Creates or replaces an object (namespace from metadata.namespace) at the
  // next resourceVersion, filling uid, generation and creationTimestamp when
  // new. Records an ADDED or MODIFIED event and, when `deliver`, sends it to
  // the open watches that match. Returns the new resourceVersion.
  std::string Put(const std::string& collection, const YAML::Node& object, bool deliver = true);
  // Deletes an object at the next resourceVersion, recording a DELETED event
  // with its last state (sent to watches when `deliver`). False if absent.
  bool Delete(const std::string& collection, const std::string& ns, const std::string& name,
              bool deliver = true);
  // Returns copies of the collection's objects keyed "namespace/name".
  std::map<std::string, YAML::Node> Objects(const std::string& collection) const;
  // Marks the collection (all-namespaces path) served or not; every one is
  // served until told otherwise.
  void SetServed(const std::string& collection, bool served);
  // Returns the current global resourceVersion.
  std::string resource_version() const;
  // Forgets the event history up to now: watches from an older
  // resourceVersion get ERROR 410 Expired and older continue tokens 410.
  void Compact();

  // --- One-shot faults (queued, consumed in order) ----------------------------

  // The next List call (with `continue_only`, the next one carrying a
  // continue token) fails with `status`.
  void FailNextList(absl::Status status, bool continue_only = false);
  // The next Watch call ends at once with `status` (via on_end).
  void FailNextWatch(absl::Status status);
  // The next Get call (discovery included) fails with `status`.
  void FailNextGet(absl::Status status);
  // The next List call reports this list resourceVersion (e.g. "").
  void OverrideNextListResourceVersion(std::string resource_version);

  // --- Driving the open watches -------------------------------------------

  // Sends `event` as is to every open watch.
  void PushEvent(const WatchEvent& event);
  // Advances the resourceVersion (as unrelated writes would) and sends a
  // BOOKMARK at it to every open watch; returns that resourceVersion.
  std::string SendBookmark();
  // Sends ERROR 410 Expired to every open watch and ends them cleanly, as
  // the API server does when a watch falls out of its history.
  void ExpireWatches();
  // Ends every open watch with `status` (OK: a clean end at timeoutSeconds).
  void EndWatches(absl::Status status = absl::OkStatus());

  // --- Recorded calls ---------------------------------------------------------

  std::vector<ListCall> list_calls() const;
  std::vector<WatchCall> watch_calls() const;
  int open_watches() const;
  // Wait (in real time, at most `timeout`) for the counts to be reached.
  bool WaitForListCalls(size_t count, absl::Duration timeout = absl::Seconds(10)) const;
  bool WaitForWatchCalls(size_t count, absl::Duration timeout = absl::Seconds(10)) const;
  bool WaitForOpenWatches(int count, absl::Duration timeout = absl::Seconds(10)) const;

  // --- Errors as CpprestKubeClient reports them -------------------------------

  static absl::Status ExpiredError();
  static absl::Status TooLargeResourceVersionError();
  static absl::Status TooManyRequestsError(absl::Duration retry_after);
  static absl::Status ConnectionRefusedError();
  static absl::Status InternalServerError();
  static absl::Status BrokenStreamError();
  // The kind: Status object of an ERROR event for an expired watch.
  static YAML::Node ExpiredStatusObject(const std::string& message);

  // --- KubeClient -----------------------------------------------------------

  absl::StatusOr<ListResult> List(const std::string& collection_path,
                                  const ListOptions& options) override;
  absl::StatusOr<std::unique_ptr<WatchHandle>> Watch(
      const std::string& collection_path, const WatchOptions& options,
      std::function<void(WatchEvent)> on_event, std::function<void(absl::Status)> on_end) override;
  absl::StatusOr<YAML::Node> Get(const std::string& path) override;
  absl::StatusOr<YAML::Node> Create(const std::string& collection_path,
                                    const std::string& json) override;
  absl::StatusOr<YAML::Node> Update(const std::string& path, const std::string& json) override;
  absl::Status Delete(const std::string& path) override;

 private:
  class Handle;
  struct ParsedPath {
    std::string collection;         // All-namespaces collection path.
    std::string ns;                 // "" for all namespaces or cluster-scoped.
    std::vector<std::string> rest;  // Segments after the plural.
  };
  struct Recorded {
    int64_t resource_version;
    std::string collection;
    std::string ns;
    WatchEvent event;
  };
  struct OpenWatch {
    uint64_t id;
    std::string collection;
    std::string ns;
    std::shared_ptr<controller::kube::WatchSink> sink;
    std::string label_selector;
  };
  struct ListFault {
    absl::Status status;
    bool continue_only;
  };

  static absl::StatusOr<ParsedPath> ParsePath(const std::string& path);
  // The APIResourceList of a group-version path, or nullopt when `path` is
  // not one.
  std::optional<absl::StatusOr<YAML::Node>> DiscoveryLocked(const std::string& path) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ServedLocked(const std::string& what, const std::string& collection) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string PutLocked(const std::string& collection, YAML::Node object, bool deliver)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordLocked(const std::string& collection, const std::string& ns, WatchEvent event,
                    bool deliver) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unregister(uint64_t id);
  // Waits until `done` (evaluated with mu_ held) holds.
  bool AwaitUntil(const std::function<bool()>& done, absl::Duration timeout) const;

  mutable absl::Mutex mu_;
  int64_t resource_version_ ABSL_GUARDED_BY(mu_) = 100;
  int64_t compacted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_uid_ ABSL_GUARDED_BY(mu_) = 1;
  // collection -> "namespace/name" -> object.
  std::map<std::string, std::map<std::string, YAML::Node>> objects_ ABSL_GUARDED_BY(mu_);
  std::vector<Recorded> history_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> not_served_ ABSL_GUARDED_BY(mu_);
  std::vector<OpenWatch> open_ ABSL_GUARDED_BY(mu_);
  uint64_t next_watch_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<ListFault> list_faults_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::Status> watch_faults_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::Status> get_faults_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> list_resource_version_override_ ABSL_GUARDED_BY(mu_);
  std::vector<ListCall> list_calls_ ABSL_GUARDED_BY(mu_);
  std::vector<WatchCall> watch_calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace facet::testing

#endif  // FACET_TEST_FAKES_FAKE_KUBE_CLIENT_H_
