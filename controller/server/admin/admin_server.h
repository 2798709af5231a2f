// The HTTP server of the admin endpoints (/healthz, /readyz, /metrics,
// /status): GET and HEAD only, over plain HTTP or TLS (optionally requiring
// client certificates), on HttpServer.
#ifndef FACET_CONTROLLER_SERVER_ADMIN_ADMIN_SERVER_H_
#define FACET_CONTROLLER_SERVER_ADMIN_ADMIN_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/server/http/http_server.h"
#include "controller/server/tls/tls_files.h"

namespace facet::controller {

struct AdminResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Further header fields (name, value), e.g. ETag.
  std::vector<std::pair<std::string, std::string>> headers = {};
};

// What a handler may read of a request: its query parameters, decoded, in
// order (a name may repeat), and its header fields by lower-case name.
struct AdminRequest {
  std::multimap<std::string, std::string> params;
  std::map<std::string, std::string> headers;

  // Returns the value of header `lower_case_name`, or "" when absent.
  std::string Header(const std::string& lower_case_name) const {
    auto it = headers.find(lower_case_name);
    return it == headers.end() ? "" : it->second;
  }

  // Returns the first value of `name`, or "" when absent.
  std::string Param(const std::string& name) const {
    auto it = params.find(name);
    return it == params.end() ? "" : it->second;
  }
};

// A route's handler: a callable taking an AdminRequest, or nothing.
class AdminHandler {
 public:
  template <typename F,
            std::enable_if_t<std::is_invocable_r_v<AdminResponse, F&, const AdminRequest&>, int> = 0>
  AdminHandler(F f) : f_(std::move(f)) {}  // NOLINT: implicit, like std::function.
  template <typename F, std::enable_if_t<std::is_invocable_r_v<AdminResponse, F&> &&
                                             !std::is_invocable_v<F&, const AdminRequest&>,
                                         int> = 0>
  AdminHandler(F f)  // NOLINT: implicit, like std::function.
      : f_([f = std::move(f)](const AdminRequest&) mutable { return f(); }) {}

  AdminResponse operator()(const AdminRequest& request) const { return f_(request); }

 private:
  std::function<AdminResponse(const AdminRequest&)> f_;
};

// The admin port's bounds (docs/security.md, "Admin port"): a request head,
// a request body (GET has none), the time from accept to a complete head
// (TLS handshake included), and open connections (when full, the oldest
// still in its handshake or head is closed for a new one).
inline constexpr size_t kAdminMaxHeaderBytes = 16 << 10;
inline constexpr size_t kAdminMaxBodyBytes = 16 << 10;
inline constexpr absl::Duration kAdminHeaderTimeout = absl::Seconds(5);
inline constexpr int kAdminMaxConnections = 512;

// Serves routes on its own threads (HttpServer's: deadlines from accept to a
// complete head, for the body and for the answer; a connection table that
// idle peers cannot fill). Handlers run one at a time. Stops on destruction.
class AdminServer {
 public:
  using Handler = AdminHandler;

  // Listens on `address` ("host:port"; port 0 picks a free one) and serves
  // `routes` (exact paths; handlers read the query string from AdminRequest). With `tls` enabled
  // it serves HTTPS with those files, re-read when they change (see
  // ReloadingCertificates), and with a client CA it requires client
  // certificates. InvalidArgument for a malformed address, FailedPrecondition
  // (naming --admin-tls-*) for unusable TLS files, Unavailable when the port
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<AdminServer>> Start(const std::string& address,
                                                            std::map<std::string, Handler> routes,
                                                            const TlsFiles& tls = {});
  ~AdminServer();

  // Returns "host:port" with the port actually bound.
  const std::string& address() const { return address_; }
  // Returns "https" or "http".
  const char* scheme() const { return certificates_ != nullptr ? "https" : "http"; }

 private:
  explicit AdminServer(std::map<std::string, Handler> routes);
  AdminResponse Respond(const std::string& path, const AdminRequest& request);

  const std::map<std::string, Handler> routes_;
  absl::Mutex handler_mu_;  // Held while a handler runs.
  std::unique_ptr<ReloadingCertificates> certificates_;
  std::unique_ptr<HttpServer> server_;
  std::string address_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_ADMIN_ADMIN_SERVER_H_
