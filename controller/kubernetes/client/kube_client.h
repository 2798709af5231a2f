// The Kubernetes API as Facet uses it: list, watch, get, create and update
// of objects held as yaml-cpp nodes. Errors follow the mapping documented in
// kube_errors.h (410 Expired -> kFailedPrecondition, 409 -> kAborted or
// kAlreadyExists, 429 -> kResourceExhausted, ...).
//
// Implementations: CpprestKubeClient (HTTP, cpprestsdk) and
// facet::testing::FakeKubeClient (in memory, driven by tests).
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_KUBE_CLIENT_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_KUBE_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::kube {

struct ListOptions {
  std::string resource_version;  // "" (quorum read), "0" (any), or N (at least as new as N).
  int64_t limit = 0;             // 0: unpaginated.
  std::string continue_token;    // With a token, resource_version must be "".
  std::string label_selector;    // e.g. "kubernetes.io/service-name=web"; "" for all.
};

struct ListResult {
  std::string resource_version;   // metadata.resourceVersion of the list, never of an item.
  std::string continue_token;     // Empty on the last page.
  std::vector<YAML::Node> items;  // Each with kind and apiVersion filled in.
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  // The object; for kBookmark only kind, apiVersion and
  // metadata.resourceVersion; for kError a kind: Status object (see
  // StatusFromStatusObject).
  YAML::Node object;
};

// Returns "ADDED", "MODIFIED", "DELETED", "BOOKMARK" or "ERROR".
const char* WatchEventTypeName(WatchEvent::Type type);

struct WatchOptions {
  std::string resource_version;  // "" or "0": synthetic ADDED events for the current state first.
  bool allow_bookmarks = true;
  int timeout_seconds = 300;  // The server ends the watch cleanly after this.
  std::string label_selector;  // As ListOptions::label_selector.
};

// Cancels its watch on destruction. Once the destructor returns, neither
// callback of the watch is running or will run. Must not be destroyed from
// inside one of its own callbacks.
class WatchHandle {
 public:
  virtual ~WatchHandle() = default;
};

// Thread-safe: any method may be called from any thread.
class KubeClient {
 public:
  virtual ~KubeClient() = default;

  // Lists one page of `collection_path`, e.g.
  // "/apis/facet.dev/v1alpha1/xdsresources" (all namespaces) or
  // "/apis/facet.dev/v1alpha1/namespaces/demo/xdsresources". Blocks.
  virtual absl::StatusOr<ListResult> List(const std::string& collection_path,
                                          const ListOptions& options) = 0;

  // Starts a watch and returns at once. `on_event` receives each event in
  // order; then `on_end` runs once with the final status: OK when the server
  // closed the stream cleanly (timeoutSeconds), otherwise the error per
  // kube_errors.h, including failures to start the watch (429, 401,
  // connection refused: IsConnectionRefused) and broken or malformed streams
  // (kUnavailable / kInternal). A watch that expired arrives as an ERROR event
  // (code 410) followed by OK. Callbacks run on an implementation thread
  // (possibly before Watch returns) and must only enqueue. Fails only for
  // arguments the implementation cannot send.
  virtual absl::StatusOr<std::unique_ptr<WatchHandle>> Watch(
      const std::string& collection_path, const WatchOptions& options,
      std::function<void(WatchEvent)> on_event, std::function<void(absl::Status)> on_end) = 0;

  // GETs one object, e.g. ".../namespaces/demo/xdsresources/web". Blocks.
  virtual absl::StatusOr<YAML::Node> Get(const std::string& path) = 0;

  // POSTs `json` to the collection; returns the created object. Blocks.
  virtual absl::StatusOr<YAML::Node> Create(const std::string& collection_path,
                                            const std::string& json) = 0;

  // PUTs `json` (which must carry metadata.resourceVersion) to `path`, which
  // may end in "/status"; returns the stored object. Blocks.
  virtual absl::StatusOr<YAML::Node> Update(const std::string& path, const std::string& json) = 0;

  // DELETEs the object at `path` (its dependents are garbage-collected by
  // the server). NotFound when it does not exist. Blocks.
  virtual absl::Status Delete(const std::string& path) = 0;
};

// Delivers the callbacks of one watch and makes cancellation synchronous:
// after Cancel() returns no callback is running and none will run; after
// End() no further callback runs. Implementations of KubeClient::Watch share
// one between their producer side and their WatchHandle. Thread-safe.
class WatchSink {
 public:
  WatchSink(std::function<void(WatchEvent)> on_event, std::function<void(absl::Status)> on_end);

  // Delivers an event; returns false (delivering nothing) once cancelled or
  // ended.
  bool Event(WatchEvent event);
  // Delivers the final status unless cancelled or already ended.
  void End(absl::Status status);
  // Stops all delivery; waits for a callback in progress on another thread.
  void Cancel();
  // Whether End() or Cancel() has been called.
  bool done() const;

 private:
  // Held while a callback runs, so that Cancel() waits for it.
  mutable absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void(WatchEvent)> on_event_ ABSL_GUARDED_BY(mu_);
  std::function<void(absl::Status)> on_end_ ABSL_GUARDED_BY(mu_);
};

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_KUBE_CLIENT_H_
