#include "controller/webhook/webhook_server.h"

#include <httplib.h>  // Feature macros come from pkg-config (CMakeLists.txt).

#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"

namespace facet::controller {
namespace {

// Bodies larger than this are refused (an AdmissionReview carries one object).
constexpr size_t kMaxBody = 3 << 20;

struct FileStamp {
  std::filesystem::file_time_type mtime;
  uintmax_t size = 0;
  bool operator==(const FileStamp& other) const {
    return mtime == other.mtime && size == other.size;
  }
};

std::optional<FileStamp> StampOf(const std::string& path) {
  std::error_code error;
  FileStamp stamp{std::filesystem::last_write_time(path, error), 0};
  if (error) return std::nullopt;
  stamp.size = std::filesystem::file_size(path, error);
  if (error) return std::nullopt;
  return stamp;
}

// A certificate and its key, parsed from PEM.
struct KeyPair {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  ~KeyPair() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

absl::StatusOr<std::shared_ptr<KeyPair>> LoadKeyPair(const std::string& cert_file,
                                                     const std::string& key_file) {
  auto pair = std::make_shared<KeyPair>();
  if (FILE* f = std::fopen(cert_file.c_str(), "r")) {
    pair->cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
    std::fclose(f);
  }
  if (FILE* f = std::fopen(key_file.c_str(), "r")) {
    pair->key = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
    std::fclose(f);
  }
  if (pair->cert == nullptr || pair->key == nullptr || X509_check_private_key(pair->cert, pair->key) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("cannot use the certificate ", cert_file,
                                                   " with the key ", key_file));
  }
  return pair;
}

}  // namespace

// The certificate files, re-read when they change. Thread-safe.
class WebhookServer::Certificates {
 public:
  Certificates(std::string cert_file, std::string key_file)
      : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)) {}

  absl::Status Load() {
    absl::MutexLock lock(&mu_);
    return ReloadLocked();
  }

  // Returns the current pair, re-reading the files first when they changed.
  std::shared_ptr<KeyPair> Current() {
    absl::MutexLock lock(&mu_);
    if (StampOf(cert_file_) != cert_stamp_ || StampOf(key_file_) != key_stamp_) {
      if (absl::Status reloaded = ReloadLocked(); !reloaded.ok()) {
        spdlog::error("admission webhook: {}; keeping the previous certificate",
                      std::string(reloaded.message()));
      } else {
        spdlog::info("admission webhook: certificate reloaded from {}", cert_file_);
      }
    }
    return pair_;
  }

 private:
  absl::Status ReloadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Stamps first: a write racing the read is noticed on the next handshake.
    cert_stamp_ = StampOf(cert_file_);
    key_stamp_ = StampOf(key_file_);
    absl::StatusOr<std::shared_ptr<KeyPair>> pair = LoadKeyPair(cert_file_, key_file_);
    if (!pair.ok()) return pair.status();
    pair_ = *std::move(pair);
    return absl::OkStatus();
  }

  const std::string cert_file_;
  const std::string key_file_;
  absl::Mutex mu_;
  std::shared_ptr<KeyPair> pair_ ABSL_GUARDED_BY(mu_);
  std::optional<FileStamp> cert_stamp_ ABSL_GUARDED_BY(mu_);
  std::optional<FileStamp> key_stamp_ ABSL_GUARDED_BY(mu_);
};

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
  server->certificates_ = std::make_unique<Certificates>(cert_file, key_file);
  if (absl::Status loaded = server->certificates_->Load(); !loaded.ok()) return loaded;
  // Each handshake takes the current certificate (so a renewed one is used
  // from the next connection on, without a restart).
  Certificates* certificates = server->certificates_.get();
  server->server_ = std::make_unique<httplib::SSLServer>([certificates](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    SSL_CTX_set_cert_cb(
        &ctx,
        [](SSL* ssl, void* arg) -> int {
          std::shared_ptr<KeyPair> pair = static_cast<Certificates*>(arg)->Current();
          if (pair == nullptr) return 0;
          return SSL_use_certificate(ssl, pair->cert) == 1 && SSL_use_PrivateKey(ssl, pair->key) == 1
                     ? 1
                     : 0;
        },
        certificates);
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
