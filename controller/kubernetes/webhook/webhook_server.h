// The HTTPS server of the validating admission webhook: POST /validate
// answers AdmissionReviews (see admission.h).
#ifndef FACET_CONTROLLER_KUBERNETES_WEBHOOK_WEBHOOK_SERVER_H_
#define FACET_CONTROLLER_KUBERNETES_WEBHOOK_WEBHOOK_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace facet::controller {

class HttpServer;
class ReloadingCertificates;

// The webhook's bounds (docs/security.md, "Webhook port"): an
// AdmissionReview body however it is framed (413 past it), the bodies held
// at once over every connection (503 past it), the time from accept to a
// complete head (TLS handshake included), and open connections.
inline constexpr size_t kWebhookMaxBodyBytes = 3 << 20;
inline constexpr size_t kWebhookMaxBufferedBodyBytes = 32 << 20;
inline constexpr absl::Duration kWebhookHeaderTimeout = absl::Seconds(5);
inline constexpr int kWebhookMaxConnections = 512;

// Owns the listening socket and its threads (HttpServer's: requests are
// served concurrently, each phase under a deadline). Thread-safe.
class WebhookServer {
 public:
  // Answers one request body with a response body.
  using Handler = std::function<std::string(const std::string& body)>;

  // Listens on `address` (HOST:PORT; port 0 picks one) with the certificate
  // and key in PEM files. The files are read again when they change (size or
  // modification time), and new connections get the new certificate; open
  // ones keep theirs. A change that does not parse keeps the last good pair
  // (logged). Fails with InvalidArgument for an unusable address,
  // FailedPrecondition for an unusable certificate or key (naming
  // --webhook-tls-cert or --webhook-tls-key), Unavailable when the port
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<WebhookServer>> Start(const std::string& address,
                                                             const std::string& cert_file,
                                                             const std::string& key_file,
                                                             Handler handler);
  ~WebhookServer();  // Stops.

  // "host:port" with the bound port.
  const std::string& address() const { return address_; }

 private:
  WebhookServer();
  std::unique_ptr<ReloadingCertificates> certificates_;
  std::unique_ptr<HttpServer> server_;
  std::string address_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_KUBERNETES_WEBHOOK_WEBHOOK_SERVER_H_
