// Test TLS material for the test Kubernetes API server: a fresh CA and a
// server certificate for 127.0.0.1 and localhost (and any other DNS names),
// generated in-process.
#ifndef FACET_TEST_KUBE_API_SERVER_TLS_H_
#define FACET_TEST_KUBE_API_SERVER_TLS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace facet::testing {

struct TlsCredentials {
  std::string ca_pem;    // The test CA certificate clients trust.
  std::string cert_pem;  // The server certificate, signed by the CA.
  std::string key_pem;   // The server's private key.
};

// Generates a P-256 CA and a server certificate (SANs 127.0.0.1, ::1,
// localhost and `dns_names`, e.g. a webhook Service's "facet.facet-system.svc",
// where a name starting with "spiffe://" becomes a URI SAN instead;
// valid from an hour ago for ten years; usable as a client certificate too,
// for mTLS tests). Internal on OpenSSL errors.
absl::StatusOr<TlsCredentials> GenerateTestCredentials(
    const std::vector<std::string>& dns_names = {});

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_TLS_H_
