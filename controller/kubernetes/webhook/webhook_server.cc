#include "controller/kubernetes/webhook/webhook_server.h"

#include "absl/strings/str_cat.h"
#include "controller/server/http/http_server.h"
#include "controller/server/tls/tls_files.h"
#include "spdlog/spdlog.h"

namespace facet::controller {

WebhookServer::WebhookServer() = default;

absl::StatusOr<std::unique_ptr<WebhookServer>> WebhookServer::Start(const std::string& address,
                                                                   const std::string& cert_file,
                                                                   const std::string& key_file,
                                                                   Handler handler) {
  absl::StatusOr<std::pair<std::string, int>> host_port = SplitHostPort(address);
  if (!host_port.ok()) return host_port.status();
  const auto& [host, port] = *host_port;
  auto server = std::unique_ptr<WebhookServer>(new WebhookServer());
  server->certificates_ = std::make_unique<ReloadingCertificates>(
      TlsFiles{cert_file, key_file, /*client_ca_file=*/""}, "webhook-tls");
  if (absl::Status loaded = server->certificates_->Load(); !loaded.ok()) return loaded;
  HttpServerOptions options;
  options.host = host;
  options.port = port;
  // Each handshake takes the current certificate (so a renewed one is used
  // from the next connection on, without a restart).
  options.certificates = server->certificates_.get();
  options.methods = {"POST"};
  options.method_not_allowed_body = "only POST /validate is supported\n";
  options.max_body_bytes = kWebhookMaxBodyBytes;
  options.max_buffered_body_bytes = kWebhookMaxBufferedBodyBytes;
  options.header_timeout = kWebhookHeaderTimeout;
  options.body_timeout = absl::Seconds(10);
  options.write_timeout = absl::Seconds(10);
  options.max_connections = kWebhookMaxConnections;
  options.worker_threads = 4;
  absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      std::move(options), [handler = std::move(handler)](const HttpRequest& request) {
        if (request.path != "/validate") {
          return HttpResponse{404, "text/plain; charset=utf-8", "not found; try POST /validate\n"};
        }
        return HttpResponse{200, "application/json", handler(request.body)};
      });
  if (!http.ok()) {
    if (http.status().code() != absl::StatusCode::kUnavailable) return http.status();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  server->server_ = std::move(*http);
  const int bound = server->server_->port();
  server->address_ = JoinHostPort(host, bound);
  spdlog::info("admission webhook on https://{}/validate", server->address_);
  return server;
}

WebhookServer::~WebhookServer() { server_.reset(); }

}  // namespace facet::controller
