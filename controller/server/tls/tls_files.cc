#include "controller/server/tls/tls_files.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "xds_server/common/regular_file.h"

namespace facet::controller {

struct TlsMaterial {
  X509* cert = nullptr;
  STACK_OF(X509) * chain = nullptr;
  EVP_PKEY* key = nullptr;
  X509_STORE* client_ca = nullptr;  // Null without a client CA file.

  TlsMaterial() = default;
  TlsMaterial(const TlsMaterial&) = delete;
  TlsMaterial& operator=(const TlsMaterial&) = delete;
  ~TlsMaterial() {
    X509_free(cert);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    X509_STORE_free(client_ca);
  }
};

namespace {

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

absl::Status FileError(absl::string_view flag, const std::string& path, absl::string_view reason) {
  return absl::FailedPreconditionError(absl::StrCat("--", flag, ": ", path, ": ", reason));
}

// Calls `read(bio)` on the contents of the file `path`. FailedPrecondition
// naming `flag` when the file cannot be read, is not a regular file (a FIFO
// is refused at once, not waited on) or is larger than
// xds::kMaxCertificateFileBytes.
template <typename Read>
absl::Status WithFile(absl::string_view flag, const std::string& path, Read read) {
  xds::RegularFileRead file = xds::ReadRegularFile(path, xds::kMaxCertificateFileBytes);
  if (file.outcome != xds::RegularFileRead::Outcome::kRead) {
    return FileError(
        flag, path,
        xds::DescribeFailure(file, xds::kMaxCertificateFileBytes, "a certificate or key file"));
  }
  BIO* bio = BIO_new_mem_buf(file.text.data(), static_cast<int>(file.text.size()));
  if (bio == nullptr) return FileError(flag, path, "cannot be read");
  absl::Status status = read(bio);
  BIO_free(bio);
  ERR_clear_error();  // The read that ends a PEM sequence leaves an error queued.
  OPENSSL_cleanse(file.text.data(), file.text.size());  // A key is not left in freed memory.
  return status;
}

absl::StatusOr<std::shared_ptr<const TlsMaterial>> LoadMaterial(const TlsFiles& files,
                                                                absl::string_view prefix) {
  auto material = std::make_shared<TlsMaterial>();
  const std::string cert_flag = absl::StrCat(prefix, "-cert");
  const std::string key_flag = absl::StrCat(prefix, "-key");
  const std::string ca_flag = absl::StrCat(prefix, "-client-ca");
  absl::Status status = WithFile(cert_flag, files.cert_file, [&](BIO* bio) {
    material->cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (material->cert == nullptr) {
      return FileError(cert_flag, files.cert_file, "holds no PEM certificate");
    }
    material->chain = sk_X509_new_null();
    while (X509* next = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      sk_X509_push(material->chain, next);
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  status = WithFile(key_flag, files.key_file, [&](BIO* bio) {
    material->key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    if (material->key == nullptr) {
      return FileError(key_flag, files.key_file, "holds no unencrypted PEM private key");
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (X509_check_private_key(material->cert, material->key) != 1) {
    ERR_clear_error();
    return FileError(key_flag, files.key_file,
                     absl::StrCat("is not the key of the certificate in ", files.cert_file));
  }
  if (!files.client_ca_file.empty()) {
    material->client_ca = X509_STORE_new();
    status = WithFile(ca_flag, files.client_ca_file, [&](BIO* bio) {
      int count = 0;
      while (X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
        X509_STORE_add_cert(material->client_ca, ca);
        X509_free(ca);
        ++count;
      }
      if (count == 0) return FileError(ca_flag, files.client_ca_file, "holds no PEM certificate");
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
  }
  return material;
}

int UseCurrentCertificates(SSL* ssl, void* arg) {
  std::shared_ptr<const TlsMaterial> material = static_cast<ReloadingCertificates*>(arg)->Current();
  if (material == nullptr) return 0;
  if (SSL_use_certificate(ssl, material->cert) != 1 ||
      SSL_use_PrivateKey(ssl, material->key) != 1 || SSL_set1_chain(ssl, material->chain) != 1) {
    return 0;
  }
  if (material->client_ca != nullptr && SSL_set1_verify_cert_store(ssl, material->client_ca) != 1) {
    return 0;
  }
  return 1;
}

}  // namespace

absl::Status CheckTlsFiles(const TlsFiles& files, absl::string_view flag_prefix) {
  return LoadMaterial(files, flag_prefix).status();
}

struct ReloadingCertificates::Stamps {
  std::map<std::string, std::optional<FileStamp>> by_path;
};

ReloadingCertificates::ReloadingCertificates(TlsFiles files, std::string flag_prefix)
    : files_(std::move(files)), flag_prefix_(std::move(flag_prefix)) {}

ReloadingCertificates::~ReloadingCertificates() = default;

absl::Status ReloadingCertificates::Load() {
  absl::MutexLock lock(&mu_);
  return ReloadLocked();
}

std::shared_ptr<const TlsMaterial> ReloadingCertificates::Current() {
  absl::MutexLock lock(&mu_);
  bool changed = stamps_ == nullptr;
  if (!changed) {
    for (const auto& [path, stamp] : stamps_->by_path) changed = changed || StampOf(path) != stamp;
  }
  if (changed) {
    if (absl::Status reloaded = ReloadLocked(); !reloaded.ok()) {
      spdlog::error("{}; keeping the previous certificate", std::string(reloaded.message()));
    } else {
      spdlog::info("--{}-cert {}: certificate reloaded", flag_prefix_, files_.cert_file);
    }
  }
  return material_;
}

absl::Status ReloadingCertificates::ReloadLocked() {
  // Stamps first: a write racing the read is noticed on the next handshake.
  auto stamps = std::make_unique<Stamps>();
  for (const std::string* path : {&files_.cert_file, &files_.key_file, &files_.client_ca_file}) {
    if (!path->empty()) stamps->by_path[*path] = StampOf(*path);
  }
  stamps_ = std::move(stamps);
  absl::StatusOr<std::shared_ptr<const TlsMaterial>> material = LoadMaterial(files_, flag_prefix_);
  if (!material.ok()) return material.status();
  material_ = *std::move(material);
  return absl::OkStatus();
}

void UseReloadingCertificates(SSL_CTX& ctx, ReloadingCertificates& certificates) {
  // OpenSSL writes to sockets without MSG_NOSIGNAL: a peer that hangs up
  // would otherwise end the process.
  std::signal(SIGPIPE, SIG_IGN);
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_cert_cb(&ctx, UseCurrentCertificates, &certificates);
  if (!certificates.files().client_ca_file.empty()) {
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
}

}  // namespace facet::controller
