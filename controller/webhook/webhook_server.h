// The HTTPS server of the validating admission webhook: POST /validate
// answers AdmissionReviews (see admission.h).
#ifndef FACET_CONTROLLER_WEBHOOK_WEBHOOK_SERVER_H_
#define FACET_CONTROLLER_WEBHOOK_WEBHOOK_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class SSLServer;
}

namespace facet::controller {

class ReloadingCertificates;

// Owns the listening socket and its threads (cpp-httplib's pool: requests are
// served concurrently, each with read and write timeouts). Thread-safe.
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
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  std::string address_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_WEBHOOK_WEBHOOK_SERVER_H_
