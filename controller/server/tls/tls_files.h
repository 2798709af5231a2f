// Certificate files of a TLS server (the admin port, the admission webhook):
// checked once before serving, then re-read whenever they change, so a
// renewed certificate is used from the next handshake on without a restart.
#ifndef FACET_CONTROLLER_SERVER_TLS_TLS_FILES_H_
#define FACET_CONTROLLER_SERVER_TLS_TLS_FILES_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace facet::controller {

// PEM files of a TLS server. Immutable once set up.
struct TlsFiles {
  std::string cert_file;  // The certificate, then any intermediates.
  std::string key_file;
  // CA certificates that client certificates must chain to; empty: clients
  // are not asked for a certificate.
  std::string client_ca_file;

  bool enabled() const { return !cert_file.empty(); }
};

// Reads the files and checks that the certificate and key parse and belong
// together, and that the client CA, when set, holds certificates. Each must
// be a regular file (a FIFO is refused at once, not waited on) of at most
// xds::kMaxCertificateFileBytes.
// FailedPrecondition otherwise; the message begins with the flag that names
// the file: `--<flag_prefix>-cert`, `-key` or `-client-ca` (e.g. prefix
// "admin-tls").
absl::Status CheckTlsFiles(const TlsFiles& files, absl::string_view flag_prefix);

// The parsed contents of TlsFiles. Immutable.
struct TlsMaterial;

// TlsFiles, re-read when one of them changes (size or modification time). A
// change that does not parse or does not match keeps the previous material
// (logged). Thread-safe.
class ReloadingCertificates {
 public:
  // Errors and logs name the files by flag, as CheckTlsFiles does.
  ReloadingCertificates(TlsFiles files, std::string flag_prefix);
  ~ReloadingCertificates();

  // Reads the files. FailedPrecondition as from CheckTlsFiles.
  absl::Status Load();

  // Returns the current material, re-reading the files first if they
  // changed; null before a successful Load.
  std::shared_ptr<const TlsMaterial> Current();

  const TlsFiles& files() const { return files_; }

 private:
  struct Stamps;
  absl::Status ReloadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TlsFiles files_;
  const std::string flag_prefix_;
  absl::Mutex mu_;
  std::shared_ptr<const TlsMaterial> material_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Stamps> stamps_ ABSL_GUARDED_BY(mu_);
};

// Sets up `ctx` (a server context) for TLS 1.2 and later with the
// certificates of `certificates`, taken afresh at every handshake. With a
// client CA, a client must present a certificate that chains to it.
// `certificates` must outlive `ctx`. Ignores SIGPIPE process-wide (OpenSSL
// writes without MSG_NOSIGNAL).
void UseReloadingCertificates(SSL_CTX& ctx, ReloadingCertificates& certificates);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_TLS_TLS_FILES_H_
