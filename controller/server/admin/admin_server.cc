#include "controller/server/admin/admin_server.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace facet::controller {

absl::StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(
    const std::string& address, std::map<std::string, Handler> routes, const TlsFiles& tls) {
  auto host_port = SplitHostPort(address);
  if (!host_port.ok()) return host_port.status();
  auto server = std::unique_ptr<AdminServer>(new AdminServer(std::move(routes)));
  HttpServerOptions options;
  if (tls.enabled()) {
    server->certificates_ = std::make_unique<ReloadingCertificates>(tls, "admin-tls");
    if (absl::Status loaded = server->certificates_->Load(); !loaded.ok()) return loaded;
    options.certificates = server->certificates_.get();
  }
  const std::string& host = host_port->first;
  options.host = host;
  options.port = host_port->second;
  // GET serves HEAD too; other methods are refused before any body is read.
  options.methods = {"GET", "HEAD"};
  options.method_not_allowed_body = "only GET is supported\n";
  options.max_header_bytes = kAdminMaxHeaderBytes;
  options.max_body_bytes = kAdminMaxBodyBytes;
  options.max_buffered_body_bytes = 64 * kAdminMaxBodyBytes;
  options.header_timeout = kAdminHeaderTimeout;
  options.body_timeout = absl::Seconds(2);
  options.write_timeout = absl::Seconds(10);
  options.max_connections = kAdminMaxConnections;
  AdminServer* self = server.get();
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Start(std::move(options), [self](const HttpRequest& request) {
        AdminRequest admin_request;
        admin_request.params = ParseQuery(request.query);
        admin_request.headers = request.headers;
        AdminResponse answer = self->Respond(request.path, admin_request);
        return HttpResponse{answer.code, std::move(answer.content_type), std::move(answer.body),
                            std::move(answer.headers)};
      });
  if (!http.ok()) {
    if (http.status().code() != absl::StatusCode::kUnavailable) return http.status();
    return absl::UnavailableError(
        absl::StrCat("admin address \"", address, "\": cannot listen (in use, or not local)"));
  }
  server->server_ = std::move(*http);
  const int bound = server->server_->port();
  server->address_ = JoinHostPort(host, bound);
  return server;
}

AdminServer::AdminServer(std::map<std::string, Handler> routes) : routes_(std::move(routes)) {}

// Stops serving (waiting for a handler that runs) before the routes go.
AdminServer::~AdminServer() { server_.reset(); }

AdminResponse AdminServer::Respond(const std::string& path, const AdminRequest& request) {
  auto it = routes_.find(path);
  if (it == routes_.end()) {
    std::string known;
    for (const auto& [route, handler] : routes_) absl::StrAppend(&known, route, "\n");
    return {404, "text/plain; charset=utf-8", absl::StrCat("not found; try:\n", known)};
  }
  absl::MutexLock lock(&handler_mu_);
  return it->second(request);
}

}  // namespace facet::controller
