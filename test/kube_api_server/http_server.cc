#include "test/kube_api_server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace facet::testing {
namespace {

constexpr size_t kMaxHeaderBytes = 1 << 16;
constexpr size_t kMaxBodyBytes = 64 << 20;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<int> Listen(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, 128) != 0) {
    std::string error = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("listen on 127.0.0.1:", port, ": ", error));
  }
  return fd;
}

// Reads from `fd` into `buffer` until it holds `needed` bytes more than
// `offset`, or the connection ends or `stopping` is set.
class Reader {
 public:
  Reader(int fd, SSL* ssl, const std::atomic<bool>& stopping)
      : fd_(fd), ssl_(ssl), stopping_(stopping) {}

  // Appends at least one byte. False on EOF, error or stop.
  bool Fill() {
    while (!stopping_.load()) {
      if (ssl_ == nullptr || SSL_pending(ssl_) == 0) {
        pollfd pfd{fd_, POLLIN, 0};
        int ready = ::poll(&pfd, 1, 100);
        if (ready < 0 && errno != EINTR) return false;
        if (ready <= 0) continue;
      }
      char chunk[16384];
      ssize_t n = ssl_ != nullptr ? SSL_read(ssl_, chunk, sizeof(chunk))
                                  : ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) {
        if (ssl_ != nullptr && SSL_get_error(ssl_, static_cast<int>(n)) == SSL_ERROR_WANT_READ) {
          continue;
        }
        return false;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    return false;
  }

  // Reads a line ending in CRLF (returned without it).
  bool ReadLine(std::string* line) {
    while (true) {
      size_t end = buffer_.find("\r\n");
      if (end != std::string::npos) {
        *line = buffer_.substr(0, end);
        buffer_.erase(0, end + 2);
        return true;
      }
      if (buffer_.size() > kMaxHeaderBytes || !Fill()) return false;
    }
  }

  bool ReadExactly(size_t count, std::string* out) {
    while (buffer_.size() < count) {
      if (!Fill()) return false;
    }
    out->append(buffer_, 0, count);
    buffer_.erase(0, count);
    return true;
  }

 private:
  const int fd_;
  SSL* const ssl_;
  const std::atomic<bool>& stopping_;
  std::string buffer_;
};

// The status line, `headers` and Date, without the blank line.
std::string ResponseHead(int code,
                         const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string head = absl::StrCat("HTTP/1.1 ", code, " ", HttpReason(code), "\r\n");
  for (const auto& [name, value] : headers) absl::StrAppend(&head, name, ": ", value, "\r\n");
  absl::StrAppend(&head, "Date: ",
                  absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", absl::Now(), absl::UTCTimeZone()),
                  "\r\n");
  return head;
}

void ParseQuery(absl::string_view query, std::map<std::string, std::string>* out) {
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq), /*plus_is_space=*/true);
    std::string value = eq == absl::string_view::npos
                            ? ""
                            : PercentDecode(pair.substr(eq + 1), /*plus_is_space=*/true);
    out->emplace(std::move(key), std::move(value));
  }
}

}  // namespace

const char* HttpReason(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "Request Entity Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

std::string PercentDecode(absl::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      int high = HexValue(text[i + 1]);
      int low = HexValue(text[i + 2]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && text[i] == '+' ? ' ' : text[i]);
  }
  return out;
}

std::string HttpRequest::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

std::string HttpRequest::Query(const std::string& name) const {
  auto it = query.find(name);
  return it == query.end() ? "" : it->second;
}

bool HttpResponder::WriteAll(absl::string_view data) {
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n =
        ssl_ != nullptr
            ? SSL_write(ssl_, data.data() + written, static_cast<int>(data.size() - written))
            : ::send(fd_, data.data() + written, data.size() - written, MSG_NOSIGNAL);
    if (n < 0 && ssl_ == nullptr && errno == EINTR) continue;
    if (n <= 0) {
      close_ = true;
      return false;
    }
    written += static_cast<size_t>(n);
  }
  return true;
}

void HttpResponder::Send(int code, const std::vector<std::pair<std::string, std::string>>& headers,
                         absl::string_view body) {
  responded_ = true;
  std::string head = ResponseHead(code, headers);
  absl::StrAppend(&head, "Content-Length: ", body.size(), "\r\n");
  if (close_) absl::StrAppend(&head, "Connection: close\r\n");
  head.append("\r\n");
  head.append(body.data(), body.size());
  WriteAll(head);
}

bool HttpResponder::StartStream(int code,
                                const std::vector<std::pair<std::string, std::string>>& headers) {
  responded_ = true;
  std::string head = ResponseHead(code, headers);
  head.append("Transfer-Encoding: chunked\r\n\r\n");
  return WriteAll(head);
}

bool HttpResponder::WriteChunk(absl::string_view data) {
  if (data.empty()) return true;
  std::string chunk = absl::StrCat(absl::Hex(data.size()), "\r\n");
  chunk.append(data.data(), data.size());
  chunk.append("\r\n");
  return WriteAll(chunk);
}

bool HttpResponder::FinishStream() { return WriteAll("0\r\n\r\n"); }

void HttpResponder::Abort() {
  close_ = true;
  ::shutdown(fd_, SHUT_RDWR);
}

bool HttpResponder::PeerClosed() const {
  pollfd pfd{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&pfd, 1, 0) <= 0) return false;
  if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  char byte;
  ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0;
}

namespace {

absl::StatusOr<SSL_CTX*> MakeSslContext(const TlsCredentials& tls) {
  auto error = [](absl::string_view what) {
    char buffer[256];
    ERR_error_string_n(ERR_get_error(), buffer, sizeof(buffer));
    return absl::InternalError(absl::StrCat(what, ": ", buffer));
  };
  SSL_CTX* context = SSL_CTX_new(TLS_server_method());
  if (context == nullptr) return error("SSL_CTX_new");
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  BIO* cert_bio = BIO_new_mem_buf(tls.cert_pem.data(), static_cast<int>(tls.cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  BIO* key_bio = BIO_new_mem_buf(tls.key_pem.data(), static_cast<int>(tls.key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  bool ok = cert != nullptr && key != nullptr && SSL_CTX_use_certificate(context, cert) == 1 &&
            SSL_CTX_use_PrivateKey(context, key) == 1;
  X509_free(cert);
  EVP_PKEY_free(key);
  if (!ok) {
    SSL_CTX_free(context);
    return error("loading the server certificate");
  }
  return context;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    int port, Handler handler, const std::optional<TlsCredentials>& tls) {
  SSL_CTX* context = nullptr;
  if (tls.has_value()) {
    auto made = MakeSslContext(*tls);
    if (!made.ok()) return made.status();
    context = *made;
    std::signal(SIGPIPE, SIG_IGN);
  }
  auto fd = Listen(port);
  if (!fd.ok()) {
    SSL_CTX_free(context);
    return fd.status();
  }
  sockaddr_in bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(*fd, reinterpret_cast<sockaddr*>(&bound), &length);
  return std::unique_ptr<HttpServer>(
      new HttpServer(*fd, ntohs(bound.sin_port), std::move(handler), context));
}

HttpServer::HttpServer(int fd, int port, Handler handler, ssl_ctx_st* ssl_context)
    : port_(port), handler_(std::move(handler)), ssl_context_(ssl_context), listen_fd_(fd) {
  accept_thread_ = std::thread([this, fd] { AcceptLoop(fd); });
}

HttpServer::~HttpServer() {
  Stop();
  SSL_CTX_free(ssl_context_);
}

void HttpServer::AcceptLoop(int listen_fd) {
  while (!stopping_.load()) {
    pollfd pfd{listen_fd, POLLIN, 0};
    if (::poll(&pfd, 1, 50) <= 0) continue;
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    absl::MutexLock lock(&mu_);
    ReapLocked();
    auto connection = std::make_unique<Connection>();
    connection->fd = fd;
    Connection* raw = connection.get();
    connections_.push_back(std::move(connection));
    raw->thread = std::thread([this, raw] { Serve(raw); });
  }
}

void HttpServer::ReapLocked() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if ((*it)->done.load()) {
      (*it)->thread.join();
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void HttpServer::Serve(Connection* connection) {
  const int fd = connection->fd;
  SSL* ssl = nullptr;
  if (ssl_context_ != nullptr) {
    ssl = SSL_new(ssl_context_);
    SSL_set_fd(ssl, fd);
    timeval handshake_timeout{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &handshake_timeout, sizeof(handshake_timeout));
    if (SSL_accept(ssl) != 1) {
      SSL_free(ssl);
      ssl = nullptr;
    }
    timeval none{0, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
  }
  Reader reader(fd, ssl, stopping_);
  while (!stopping_.load() && (ssl_context_ == nullptr || ssl != nullptr)) {
    std::string line;
    if (!reader.ReadLine(&line)) break;
    if (line.empty()) continue;  // Tolerate stray CRLF between requests.
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    HttpRequest request;
    bool bad = parts.size() != 3 || !absl::StartsWith(parts[2], "HTTP/1.");
    if (!bad) {
      request.method = parts[0];
      request.target = parts[1];
    }
    bool http10 = !bad && parts[2] == "HTTP/1.0";
    while (true) {
      if (!reader.ReadLine(&line)) {
        bad = true;
        break;
      }
      if (line.empty()) break;
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = absl::AsciiStrToLower(line.substr(0, colon));
      std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
      request.headers[name] = value;
    }
    HttpResponder responder(fd, ssl);
    if (bad) {
      responder.CloseAfterResponse();
      responder.Send(400, {{"Content-Type", "text/plain"}}, "bad request\n");
      break;
    }
    std::string connection_header = absl::AsciiStrToLower(request.Header("connection"));
    if (http10 ? connection_header != "keep-alive" : connection_header == "close") {
      responder.CloseAfterResponse();
    }
    if (absl::AsciiStrToLower(request.Header("expect")) == "100-continue") {
      responder.WriteAll("HTTP/1.1 100 Continue\r\n\r\n");
    }
    if (absl::StrContains(absl::AsciiStrToLower(request.Header("transfer-encoding")), "chunked")) {
      while (true) {
        if (!reader.ReadLine(&line)) {
          bad = true;
          break;
        }
        size_t size = 0;
        std::string hex = line.substr(0, line.find(';'));
        if (!absl::SimpleHexAtoi(hex, &size) || request.body.size() + size > kMaxBodyBytes) {
          bad = true;
          break;
        }
        if (size == 0) {
          while (reader.ReadLine(&line) && !line.empty()) {
          }
          break;
        }
        std::string crlf;
        if (!reader.ReadExactly(size, &request.body) || !reader.ReadExactly(2, &crlf)) {
          bad = true;
          break;
        }
      }
    } else if (std::string length = request.Header("content-length"); !length.empty()) {
      size_t size = 0;
      if (!absl::SimpleAtoi(length, &size) || size > kMaxBodyBytes ||
          !reader.ReadExactly(size, &request.body)) {
        bad = true;
      }
    }
    if (bad) {
      responder.CloseAfterResponse();
      responder.Send(400, {{"Content-Type", "text/plain"}}, "bad request body\n");
      break;
    }
    size_t question = request.target.find('?');
    request.path = PercentDecode(request.target.substr(0, question), /*plus_is_space=*/false);
    if (question != std::string::npos)
      ParseQuery(request.target.substr(question + 1), &request.query);
    handler_(request, responder);
    if (!responder.responded()) {
      responder.CloseAfterResponse();
      responder.Send(500, {{"Content-Type", "text/plain"}}, "no response\n");
    }
    if (responder.should_close()) break;
  }
  if (ssl != nullptr) SSL_free(ssl);
  {
    absl::MutexLock lock(&mu_);
    ::close(fd);
    connection->fd = -1;
  }
  connection->done = true;
}

void HttpServer::CutConnections() {
  absl::MutexLock lock(&mu_);
  for (auto& connection : connections_) {
    if (connection->fd >= 0) ::shutdown(connection->fd, SHUT_RDWR);
  }
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) {
    if (accept_thread_.joinable()) accept_thread_.join();
    return;
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  std::list<std::unique_ptr<Connection>> connections;
  {
    absl::MutexLock lock(&mu_);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
    for (auto& connection : connections_) {
      if (connection->fd >= 0) ::shutdown(connection->fd, SHUT_RDWR);
    }
    connections.swap(connections_);
  }
  for (auto& connection : connections) connection->thread.join();
}

absl::Status HttpServer::Resume() {
  if (accept_thread_.joinable()) accept_thread_.join();
  auto fd = Listen(port_);
  if (!fd.ok()) return fd.status();
  {
    absl::MutexLock lock(&mu_);
    listen_fd_ = *fd;
  }
  stopping_ = false;
  int listen_fd = *fd;
  accept_thread_ = std::thread([this, listen_fd] { AcceptLoop(listen_fd); });
  return absl::OkStatus();
}

}  // namespace facet::testing
