#include "controller/admin/admin_server.h"

#include <httplib.h>  // Feature macros come from pkg-config (controller/webhook).
#include <sys/socket.h>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace facet::controller {

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address) {
  std::string host;
  std::string port;
  if (!address.empty() && address[0] == '[') {
    size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return absl::InvalidArgumentError(absl::StrCat("address \"", address, "\": expected [HOST]:PORT"));
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("address \"", address, "\": expected HOST:PORT"));
    }
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  int number;
  if (!absl::SimpleAtoi(port, &number) || number < 0 || number > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address \"", address, "\": port must be a number from 0 to 65535"));
  }
  if (host.empty()) host = "0.0.0.0";
  return std::make_pair(host, number);
}

absl::StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(
    const std::string& address, std::map<std::string, Handler> routes, const TlsFiles& tls) {
  auto host_port = SplitHostPort(address);
  if (!host_port.ok()) return host_port.status();
  auto server = std::unique_ptr<AdminServer>(new AdminServer(std::move(routes)));
  if (tls.enabled()) {
    server->certificates_ = std::make_unique<ReloadingCertificates>(tls, "admin-tls");
    if (absl::Status loaded = server->certificates_->Load(); !loaded.ok()) return loaded;
    ReloadingCertificates* certificates = server->certificates_.get();
    server->server_ = std::make_unique<httplib::SSLServer>([certificates](SSL_CTX& ctx) {
      UseReloadingCertificates(ctx, *certificates);
      return true;
    });
  } else {
    server->server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& http = *server->server_;
  if (!http.is_valid()) return absl::InternalError("cannot set up the admin server's TLS context");
  // cpp-httplib sets SO_REUSEPORT by default: a second process could then
  // share the port silently. Fail instead.
  http.set_socket_options([](int socket) {
    int one = 1;
    ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  });
  http.set_keep_alive_max_count(1);  // One request per connection.
  http.set_read_timeout(2, 0);
  http.set_write_timeout(10, 0);
  http.set_payload_max_length(16384);
  AdminServer* self = server.get();
  // GET serves HEAD too.
  http.Get(".*", [self](const httplib::Request& request, httplib::Response& response) {
    AdminRequest admin_request;
    for (const auto& [name, value] : request.params) admin_request.params.emplace(name, value);
    AdminResponse answer = self->Respond(request.path, admin_request);
    response.status = answer.code;
    response.set_content(answer.body, answer.content_type.c_str());
  });
  // Before any body is read: other methods are refused at once.
  http.set_pre_routing_handler([](const httplib::Request& request, httplib::Response& response) {
    if (request.method == "GET" || request.method == "HEAD") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    response.status = 405;
    response.set_content("only GET is supported\n", "text/plain; charset=utf-8");
    return httplib::Server::HandlerResponse::Handled;
  });
  const std::string& host = host_port->first;
  const int port = host_port->second;
  const int bound =
      port == 0 ? http.bind_to_any_port(host) : (http.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(
        absl::StrCat("admin address \"", address, "\": cannot listen (in use, or not local)"));
  }
  server->address_ = host.find(':') != std::string::npos ? absl::StrCat("[", host, "]:", bound)
                                                        : absl::StrCat(host, ":", bound);
  server->thread_ = std::thread([&http] { http.listen_after_bind(); });
  return server;
}

AdminServer::AdminServer(std::map<std::string, Handler> routes) : routes_(std::move(routes)) {}

AdminServer::~AdminServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

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
