// The request handling behind KubeTestServer: routing, discovery, CRUD,
// list, watch, patch, authentication and fault injection over an ObjectStore.
// Internal to test/kube_api_server.
#ifndef FACET_TEST_KUBE_API_SERVER_KUBE_API_H_
#define FACET_TEST_KUBE_API_SERVER_KUBE_API_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "test/kube_api_server/http_server.h"
#include "test/kube_api_server/json.h"
#include "test/kube_api_server/kube_test_server.h"
#include "test/kube_api_server/object_store.h"
#include "test/kube_api_server/resource_types.h"
#include "test/kube_api_server/services.h"

namespace facet::testing {

// An error answered as a kind: Status body.
struct ApiError {
  int code;
  std::string reason;
  std::string message;
  Json details;  // null when absent
  int retry_after_seconds = 0;
};

// What a resource path addresses.
struct ResourceTarget {
  const ResourceType* type = nullptr;
  std::string ns;           // "" for cluster-scoped types and all-namespace collections
  std::string name;         // "" for a collection
  std::string subresource;  // "" or "status"
  bool watch_path = false;  // The deprecated /watch/ prefix.

  std::string Key() const;
  std::string Prefix() const;
};

// A response body with its HTTP code (errors carry a kind: Status body).
struct ApiResponse {
  int code = 200;
  Json body;
};

// Thread-safe. Handle() runs on connection threads, the rest on test threads.
class KubeApi {
 public:
  struct Config {
    std::string token;
    size_t watch_history;
    absl::Duration bookmark_interval;
    std::vector<std::string> namespaces;
    // Read at every webhook call when set: lines "NAMESPACE/NAME:PORT HOST:PORT"
    // mapping Service references to addresses (see KubeTestServer::Options).
    std::string service_map_file;
    // The types served (the others answer 404, their groups are not listed).
    ResourceTypeSet types;
  };

  explicit KubeApi(Config config);

  void set_port(int port) { port_.store(port); }
  // Serves one request (blocks for the duration of a watch).
  void Handle(const HttpRequest& request, HttpResponder& responder);
  // Makes every handler return soon (ends watches, releases hangs); called
  // before the HTTP server joins its threads.
  void Shutdown();
  // Undoes Shutdown() (for Restart).
  void Reopen();

  std::string token() const;
  void SetToken(std::string token);
  void DropWatches(bool mid_event);
  void ExpireWatches();
  void CompactHistory();
  void FailNextRequests(int count, int http_code, int retry_after_seconds);
  void SetLatency(absl::Duration latency);
  void SetChunking(bool split_events, bool coalesce_events);
  void SetHang(bool hang);
  void SetServiceAddress(const std::string& ns, const std::string& name, int port,
                         const std::string& address);

  std::optional<std::string> GetObject(const std::string& api_path) const;
  absl::Status CreateNamespace(const std::string& name);
  int64_t resource_version() const;
  int64_t watch_count() const;
  int64_t list_count() const;
  int64_t open_watch_count() const;
  bool WaitForOpenWatches(int64_t count, absl::Duration timeout) const;
  bool WaitForWatchCount(int64_t count, absl::Duration timeout) const;
  std::vector<StatusWrite> status_writes() const;

 private:
  using Target = ResourceTarget;

  // Routing.
  void Dispatch(const HttpRequest& request, HttpResponder& responder);
  std::optional<Target> ParseResourcePath(const std::string& path) const;
  bool ServeDiscovery(const HttpRequest& request, HttpResponder& responder);
  void ServeResource(const HttpRequest& request, const Target& target, HttpResponder& responder);

  // Verbs. Each returns the response (a Status body for errors); locks internally.
  ApiResponse Get(const HttpRequest& request, const Target& target);
  ApiResponse List(const HttpRequest& request, const Target& target);
  ApiResponse Create(const HttpRequest& request, const Target& target);
  ApiResponse Update(const HttpRequest& request, const Target& target);
  ApiResponse Patch(const HttpRequest& request, const Target& target);
  ApiResponse Delete(const HttpRequest& request, const Target& target);
  ApiResponse DeleteCollection(const HttpRequest& request, const Target& target);
  void Watch(const HttpRequest& request, const Target& target, HttpResponder& responder);

  // Runs `write` (a write path: it stores unless given dry_run = true) once the
  // validating admission webhooks that match it have admitted it, as the
  // apiserver does: `write` runs first as a dry run under mu_ to learn the
  // operation and the object as it would be stored, the webhooks are called
  // without the lock, and the write runs for real if the stored object is
  // still the one they saw (else it is admitted again). `is_delete` makes the
  // operation DELETE; otherwise a 201 preview is a CREATE, any other an UPDATE.
  ApiResponse WriteAdmitted(const Target& target, bool is_delete, bool dry_run,
                            absl::FunctionRef<ApiResponse(bool dry_run)> write);
  // Returns the address a webhook Service reference reaches (SetServiceAddress,
  // then the service map file), or nullopt.
  std::optional<std::string> ResolveService(const std::string& ns, const std::string& name,
                                            int port) const;

  // Write paths shared by POST, PUT and PATCH; `mu_` held.
  ApiResponse CreateLocked(const Target& target, Json object, bool dry_run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ApiResponse UpdateLocked(const Target& target, const Json& current, Json object, bool dry_run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes, transitively, the objects owned (ownerReferences) by `uid`.
  void CollectDependentsLocked(const std::string& uid, const std::string& ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DeleteNamespaceContentsLocked(const std::string& ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NamespaceExistsLocked(const std::string& ns) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NewUidLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Logs a PUT or PATCH of a /status subresource answered with `code`.
  void RecordStatusWrite(const HttpRequest& request, const Target& target, int code);

  // Blocks until `*counter` (a field guarded by mu_) reaches `count` or `timeout` passes.
  bool WaitForCounter(const int64_t* counter, int64_t count, absl::Duration timeout) const;
  void SendError(HttpResponder& responder, const ApiError& error) const;
  void SendJson(HttpResponder& responder, int code, const Json& body,
                const std::string& content_type = "application/json") const;

  // Allocations of the stored Services (for services.h).
  ServiceAllocations ServiceAllocationsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ResourceTypeSet types_;
  const absl::Duration bookmark_interval_;
  const std::string service_map_file_;
  std::atomic<int> port_{0};

  mutable absl::Mutex mu_;
  mutable absl::CondVar changed_;
  ObjectStore store_ ABSL_GUARDED_BY(mu_);
  std::string token_ ABSL_GUARDED_BY(mu_);
  int fail_count_ ABSL_GUARDED_BY(mu_) = 0;
  int fail_code_ ABSL_GUARDED_BY(mu_) = 500;
  int fail_retry_after_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration latency_ ABSL_GUARDED_BY(mu_);
  bool split_events_ ABSL_GUARDED_BY(mu_) = false;
  bool coalesce_events_ ABSL_GUARDED_BY(mu_) = false;
  bool hang_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  int64_t drop_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  bool drop_mid_event_ ABSL_GUARDED_BY(mu_) = false;
  int64_t expire_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t watch_count_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t list_count_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t open_watches_ ABSL_GUARDED_BY(mu_) = 0;
  std::mt19937_64 random_ ABSL_GUARDED_BY(mu_);
  // "NAMESPACE/NAME:PORT" -> "HOST:PORT".
  std::map<std::string, std::string> service_addresses_ ABSL_GUARDED_BY(mu_);
  mutable absl::Mutex status_log_mu_;
  std::vector<StatusWrite> status_writes_ ABSL_GUARDED_BY(status_log_mu_);
};

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_KUBE_API_H_
