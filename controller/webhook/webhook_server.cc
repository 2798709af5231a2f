#include "controller/webhook/webhook_server.h"

#include <httplib.h>  // Feature macros come from pkg-config (CMakeLists.txt).

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/tls/tls_files.h"
#include "spdlog/spdlog.h"

namespace facet::controller {
namespace {

// Bodies larger than this are refused (an AdmissionReview carries one object).
constexpr size_t kMaxBody = 3 << 20;

}  // namespace

WebhookServer::WebhookServer() = default;

absl::StatusOr<std::unique_ptr<WebhookServer>> WebhookServer::Start(const std::string& address,
                                                                   const std::string& cert_file,
                                                                   const std::string& key_file,
                                                                   Handler handler) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\" is not HOST:PORT"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto server = std::unique_ptr<WebhookServer>(new WebhookServer());
  server->certificates_ = std::make_unique<ReloadingCertificates>(
      TlsFiles{cert_file, key_file, /*client_ca_file=*/""}, "webhook-tls");
  if (absl::Status loaded = server->certificates_->Load(); !loaded.ok()) return loaded;
  // Each handshake takes the current certificate (so a renewed one is used
  // from the next connection on, without a restart).
  ReloadingCertificates* certificates = server->certificates_.get();
  server->server_ = std::make_unique<httplib::SSLServer>([certificates](SSL_CTX& ctx) {
    UseReloadingCertificates(ctx, *certificates);
    return true;
  });
  if (!server->server_->is_valid()) {
    return absl::InternalError("cannot set up the webhook's TLS context");
  }
  server->server_->set_payload_max_length(kMaxBody);
  server->server_->set_read_timeout(10, 0);
  server->server_->set_write_timeout(10, 0);
  server->server_->Post("/validate", [handler](const httplib::Request& request,
                                              httplib::Response& response) {
    response.set_content(handler(request.body), "application/json");
  });
  const int bound = port == 0 ? server->server_->bind_to_any_port(host.c_str())
                              : (server->server_->bind_to_port(host.c_str(), port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  server->address_ = absl::StrCat(address.substr(0, colon), ":", bound);
  httplib::SSLServer* raw = server->server_.get();
  server->thread_ = std::thread([raw] { raw->listen_after_bind(); });
  spdlog::info("admission webhook on https://{}/validate", server->address_);
  return server;
}

WebhookServer::~WebhookServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace facet::controller
