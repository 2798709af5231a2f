#include "test/kube_api_server/kube_test_server.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "test/kube_api_server/http_server.h"
#include "test/kube_api_server/kube_api.h"
#include "test/kube_api_server/tls.h"

namespace facet::testing {

absl::StatusOr<std::unique_ptr<KubeTestServer>> KubeTestServer::Start(Options options) {
  auto types = ResourceTypeSet::Make(options.omitted_resources);
  if (!types.ok()) return types.status();
  std::unique_ptr<KubeTestServer> server(new KubeTestServer());
  server->api_ = std::make_unique<KubeApi>(
      KubeApi::Config{options.bearer_token, options.watch_history, options.bookmark_interval,
                      options.namespaces, options.service_map_file, *std::move(types)});
  KubeApi* api = server->api_.get();
  std::optional<TlsCredentials> tls;
  if (options.tls) {
    auto credentials = GenerateTestCredentials();
    if (!credentials.ok()) return credentials.status();
    server->ca_pem_ = credentials->ca_pem;
    tls = *std::move(credentials);
  }
  auto http = HttpServer::Start(
      options.port,
      [api](const HttpRequest& request, HttpResponder& responder) {
        api->Handle(request, responder);
      },
      tls);
  if (!http.ok()) return http.status();
  server->http_ = *std::move(http);
  api->set_port(server->http_->port());
  return server;
}

KubeTestServer::~KubeTestServer() {
  if (api_ != nullptr) api_->Shutdown();
  http_.reset();
}

std::string KubeTestServer::url() const {
  return absl::StrCat(ca_pem_.empty() ? "http" : "https", "://127.0.0.1:", port());
}
int KubeTestServer::port() const { return http_->port(); }
std::string KubeTestServer::token() const { return api_->token(); }
void KubeTestServer::SetToken(std::string token) { api_->SetToken(std::move(token)); }
void KubeTestServer::DropWatches(bool mid_event) { api_->DropWatches(mid_event); }
void KubeTestServer::ExpireWatches() { api_->ExpireWatches(); }
void KubeTestServer::CompactHistory() { api_->CompactHistory(); }
void KubeTestServer::FailNextRequests(int count, int http_code, int retry_after_seconds) {
  api_->FailNextRequests(count, http_code, retry_after_seconds);
}
void KubeTestServer::SetLatency(absl::Duration latency) { api_->SetLatency(latency); }
void KubeTestServer::SetChunking(bool split_events, bool coalesce_events) {
  api_->SetChunking(split_events, coalesce_events);
}
void KubeTestServer::SetHang(bool hang) { api_->SetHang(hang); }
void KubeTestServer::SetServiceAddress(const std::string& ns, const std::string& name, int port,
                                       const std::string& address) {
  api_->SetServiceAddress(ns, name, port, address);
}

void KubeTestServer::StopListening() {
  api_->Shutdown();
  http_->Stop();
  api_->Reopen();
}

absl::Status KubeTestServer::ResumeListening() { return http_->Resume(); }

absl::Status KubeTestServer::Restart() {
  StopListening();
  return ResumeListening();
}

std::optional<std::string> KubeTestServer::GetObject(const std::string& api_path) const {
  return api_->GetObject(api_path);
}
absl::Status KubeTestServer::CreateNamespace(const std::string& name) {
  return api_->CreateNamespace(name);
}
int64_t KubeTestServer::resource_version() const { return api_->resource_version(); }
int64_t KubeTestServer::watch_count() const { return api_->watch_count(); }
int64_t KubeTestServer::list_count() const { return api_->list_count(); }
int64_t KubeTestServer::open_watch_count() const { return api_->open_watch_count(); }
bool KubeTestServer::WaitForOpenWatches(int64_t count, absl::Duration timeout) const {
  return api_->WaitForOpenWatches(count, timeout);
}
std::vector<StatusWrite> KubeTestServer::status_writes() const { return api_->status_writes(); }
bool KubeTestServer::WaitForWatchCount(int64_t count, absl::Duration timeout) const {
  return api_->WaitForWatchCount(count, timeout);
}

std::string KubeconfigFor(const KubeTestServer& server, const std::string& ns) {
  return absl::StrCat(
      "apiVersion: v1\n"
      "kind: Config\n"
      "clusters:\n"
      "- name: facet-test\n"
      "  cluster:\n"
      "    server: ",
      server.url(), "\n",
      server.ca_pem().empty()
          ? ""
          : absl::StrCat("    certificate-authority-data: ", absl::Base64Escape(server.ca_pem()),
                         "\n"),
      "users:\n"
      "- name: facet-test\n"
      "  user:\n"
      "    token: \"",
      server.token(),
      "\"\n"
      "contexts:\n"
      "- name: facet-test\n"
      "  context:\n"
      "    cluster: facet-test\n"
      "    user: facet-test\n"
      "    namespace: ",
      ns,
      "\n"
      "current-context: facet-test\n");
}

}  // namespace facet::testing
