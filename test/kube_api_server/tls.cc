#include "test/kube_api_server/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace facet::testing {
namespace {

struct Deleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
  void operator()(X509* cert) const { X509_free(cert); }
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter>;
using CertPtr = std::unique_ptr<X509, Deleter>;
using BioPtr = std::unique_ptr<BIO, Deleter>;

absl::Status OpenSslError(absl::string_view what) {
  char buffer[256];
  ERR_error_string_n(ERR_get_error(), buffer, sizeof(buffer));
  return absl::InternalError(absl::StrCat(what, ": ", buffer));
}

absl::Status AddExtension(X509* issuer, X509* cert, int nid, const char* value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
  if (extension == nullptr) return OpenSslError(absl::StrCat("extension ", value));
  X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
  return absl::OkStatus();
}

absl::StatusOr<CertPtr> MakeCertificate(const char* common_name, EVP_PKEY* key, X509* issuer,
                                        EVP_PKEY* issuer_key, bool is_ca,
                                        const std::vector<std::string>& dns_names = {}) {
  CertPtr cert(X509_new());
  if (cert == nullptr) return OpenSslError("X509_new");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof(serial));
  serial[0] &= 0x7f;
  BIGNUM* number = BN_bin2bn(serial, sizeof(serial), nullptr);
  BN_to_ASN1_INTEGER(number, X509_get_serialNumber(cert.get()));
  BN_free(number);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("facet-test"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  absl::Status status;
  if (is_ca) {
    status.Update(AddExtension(signer, cert.get(), NID_basic_constraints, "critical,CA:TRUE"));
    status.Update(AddExtension(signer, cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
    status.Update(AddExtension(signer, cert.get(), NID_subject_key_identifier, "hash"));
  } else {
    status.Update(AddExtension(signer, cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
    status.Update(AddExtension(signer, cert.get(), NID_key_usage, "critical,digitalSignature"));
    status.Update(AddExtension(signer, cert.get(), NID_ext_key_usage, "serverAuth,clientAuth"));
    std::string names = "DNS:localhost,IP:127.0.0.1,IP:::1";
    for (const std::string& dns_name : dns_names) {
      // A SPIFFE ID goes in as the certificate's URI SAN.
      absl::StrAppend(&names, absl::StartsWith(dns_name, "spiffe://") ? ",URI:" : ",DNS:",
                      dns_name);
    }
    status.Update(AddExtension(signer, cert.get(), NID_subject_alt_name, names.c_str()));
    status.Update(AddExtension(signer, cert.get(), NID_authority_key_identifier, "keyid:always"));
  }
  if (!status.ok()) return status;
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return OpenSslError("X509_sign");
  return cert;
}

std::string ToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

std::string ToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace

absl::StatusOr<TlsCredentials> GenerateTestCredentials(const std::vector<std::string>& dns_names) {
  KeyPtr ca_key(EVP_EC_gen("P-256"));
  KeyPtr server_key(EVP_EC_gen("P-256"));
  if (ca_key == nullptr || server_key == nullptr) return OpenSslError("EVP_EC_gen");
  auto ca = MakeCertificate("facet-test-ca", ca_key.get(), nullptr, ca_key.get(), /*is_ca=*/true);
  if (!ca.ok()) return ca.status();
  auto server = MakeCertificate("kube-test-server", server_key.get(), ca->get(), ca_key.get(),
                                /*is_ca=*/false, dns_names);
  if (!server.ok()) return server.status();
  return TlsCredentials{ToPem(ca->get()), ToPem(server->get()), ToPem(server_key.get())};
}

}  // namespace facet::testing
