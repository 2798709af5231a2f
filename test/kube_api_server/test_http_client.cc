#include "test/kube_api_server/test_http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace facet::testing {

bool HttpHead::chunked() const {
  auto it = headers.find("transfer-encoding");
  return it != headers.end() && absl::StrContains(absl::AsciiStrToLower(it->second), "chunked");
}

absl::StatusOr<std::unique_ptr<HttpConnection>> HttpConnection::Connect(int port,
                                                                        const std::string& ca_pem) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    std::string error = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("connect: ", error));
  }
  std::unique_ptr<HttpConnection> connection(new HttpConnection(fd));
  if (!ca_pem.empty()) {
    if (absl::Status status = connection->StartTls(ca_pem); !status.ok()) return status;
  }
  return connection;
}

absl::Status HttpConnection::StartTls(const std::string& ca_pem) {
  ssl_context_ = SSL_CTX_new(TLS_client_method());
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (ca == nullptr) return absl::InvalidArgumentError("bad CA PEM");
  X509_STORE_add_cert(SSL_CTX_get_cert_store(ssl_context_), ca);
  X509_free(ca);
  SSL_CTX_set_verify(ssl_context_, SSL_VERIFY_PEER, nullptr);
  ssl_ = SSL_new(ssl_context_);
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
  SSL_set_fd(ssl_, fd_);
  if (SSL_connect(ssl_) != 1) {
    char buffer[256];
    ERR_error_string_n(ERR_get_error(), buffer, sizeof(buffer));
    return absl::UnavailableError(absl::StrCat("TLS handshake: ", buffer));
  }
  return absl::OkStatus();
}

HttpConnection::~HttpConnection() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (ssl_context_ != nullptr) SSL_CTX_free(ssl_context_);
  ::close(fd_);
}

absl::Status HttpConnection::WriteAll(const std::string& data) {
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n =
        ssl_ != nullptr
            ? SSL_write(ssl_, data.data() + written, static_cast<int>(data.size() - written))
            : ::send(fd_, data.data() + written, data.size() - written, MSG_NOSIGNAL);
    if (n <= 0) return absl::UnavailableError("send failed");
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status HttpConnection::Send(const std::string& method, const std::string& target,
                                  const std::vector<std::pair<std::string, std::string>>& headers,
                                  const std::string& body) {
  std::string request = absl::StrCat(method, " ", target, " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  for (const auto& [name, value] : headers) absl::StrAppend(&request, name, ": ", value, "\r\n");
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    absl::StrAppend(&request, "Content-Length: ", body.size(), "\r\n");
  }
  absl::StrAppend(&request, "\r\n", body);
  return WriteAll(request);
}

absl::Status HttpConnection::Fill(absl::Time deadline) {
  while (true) {
    int64_t remaining = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (remaining <= 0) return absl::DeadlineExceededError("timed out reading");
    if (ssl_ == nullptr || SSL_pending(ssl_) == 0) {
      pollfd pfd{fd_, POLLIN, 0};
      int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(remaining, 1000)));
      if (ready < 0 && errno != EINTR) return absl::UnavailableError("poll failed");
      if (ready <= 0) continue;
    }
    char chunk[16384];
    ssize_t n = ssl_ != nullptr ? SSL_read(ssl_, chunk, sizeof(chunk))
                                : ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return absl::UnavailableError("connection closed");
    buffer_.append(chunk, static_cast<size_t>(n));
    return absl::OkStatus();
  }
}

absl::StatusOr<std::string> HttpConnection::ReadLine(absl::Time deadline) {
  while (true) {
    size_t end = buffer_.find("\r\n");
    if (end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      return line;
    }
    if (absl::Status status = Fill(deadline); !status.ok()) return status;
  }
}

absl::StatusOr<HttpHead> HttpConnection::ReadHead(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  auto status_line = ReadLine(deadline);
  if (!status_line.ok()) return status_line.status();
  std::vector<std::string> parts = absl::StrSplit(*status_line, absl::MaxSplits(' ', 2));
  HttpHead head;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[1], &head.code)) {
    return absl::DataLossError(absl::StrCat("bad status line: ", *status_line));
  }
  while (true) {
    auto line = ReadLine(deadline);
    if (!line.ok()) return line.status();
    if (line->empty()) break;
    size_t colon = line->find(':');
    if (colon == std::string::npos) continue;
    head.headers[absl::AsciiStrToLower(line->substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(line->substr(colon + 1)));
  }
  return head;
}

absl::StatusOr<std::string> HttpConnection::NextChunk(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  auto size_line = ReadLine(deadline);
  if (!size_line.ok()) return size_line.status();
  size_t size;
  if (!absl::SimpleHexAtoi(*size_line, &size)) {
    return absl::DataLossError(absl::StrCat("bad chunk size: ", *size_line));
  }
  if (size == 0) {
    auto trailer = ReadLine(deadline);
    if (!trailer.ok()) return trailer.status();
    return absl::OutOfRangeError("end of stream");
  }
  while (buffer_.size() < size + 2) {
    if (absl::Status status = Fill(deadline); !status.ok()) return status;
  }
  std::string data = buffer_.substr(0, size);
  buffer_.erase(0, size + 2);
  return data;
}

absl::StatusOr<std::string> HttpConnection::ReadBody(const HttpHead& head, absl::Duration timeout) {
  if (head.chunked()) {
    std::string body;
    while (true) {
      auto chunk = NextChunk(timeout);
      if (absl::IsOutOfRange(chunk.status())) return body;
      if (!chunk.ok()) return chunk.status();
      body += *chunk;
    }
  }
  size_t length = 0;
  auto it = head.headers.find("content-length");
  if (it != head.headers.end()) absl::SimpleAtoi(it->second, &length);
  absl::Time deadline = absl::Now() + timeout;
  while (buffer_.size() < length) {
    if (absl::Status status = Fill(deadline); !status.ok()) return status;
  }
  std::string body = buffer_.substr(0, length);
  buffer_.erase(0, length);
  return body;
}

absl::StatusOr<std::string> WatchReader::NextLine(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return line;
    }
    auto chunk = connection_->NextChunk(deadline - absl::Now());
    if (!chunk.ok()) return chunk.status();
    chunks_.push_back(*chunk);
    pending_ += *chunk;
  }
}

}  // namespace facet::testing
