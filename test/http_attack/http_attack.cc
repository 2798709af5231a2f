#include "test/http_attack/http_attack.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace facet::testing {
namespace {

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Makes every blocking read and write on `fd` give up after `timeout`.
void SetTimeouts(int fd, absl::Duration timeout) {
  timeval tv = absl::ToTimeval(std::max(timeout, absl::Milliseconds(1)));
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// A client connection, plain or TLS (without checking the server).
class Connection {
 public:
  Connection(int port, bool tls) : fd_(Connect(port)) {
    std::signal(SIGPIPE, SIG_IGN);
    if (fd_ < 0 || !tls) return;
    ctx_ = SSL_CTX_new(TLS_client_method());
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
  }
  ~Connection() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  bool Handshake() { return ssl_ == nullptr || SSL_connect(ssl_) == 1; }
  bool Send(const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n =
          ssl_ != nullptr
              ? SSL_write(ssl_, data.data() + sent, static_cast<int>(data.size() - sent))
              : ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads some bytes; 0 at the end, -1 on an error or timeout.
  ssize_t Recv(char* buffer, size_t size) {
    if (ssl_ != nullptr) {
      const int n = SSL_read(ssl_, buffer, static_cast<int>(size));
      if (n > 0) return n;
      return SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
    }
    return ::recv(fd_, buffer, size, 0);
  }
  // Reads what has arrived without waiting: a count, 0 at the end, -1 on an
  // error, kNothingYet when nothing has (TLS records that are not data,
  // such as session tickets, do not count).
  static constexpr ssize_t kNothingYet = -2;
  ssize_t RecvNow(char* buffer, size_t size) {
    const int flags = ::fcntl(fd_, F_GETFL);
    ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
    ssize_t n;
    if (ssl_ != nullptr) {
      n = SSL_read(ssl_, buffer, static_cast<int>(size));
      if (n <= 0) {
        const int error = SSL_get_error(ssl_, static_cast<int>(n));
        n = error == SSL_ERROR_WANT_READ ? kNothingYet : error == SSL_ERROR_ZERO_RETURN ? 0 : -1;
      }
    } else {
      n = ::recv(fd_, buffer, size, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) n = kNothingYet;
    }
    ::fcntl(fd_, F_SETFL, flags);
    return n;
  }
  // Reads until the server closes; false on an error or timeout.
  bool ReadAll(std::string* out) {
    char buffer[16384];
    for (ssize_t n; (n = Recv(buffer, sizeof(buffer))) != 0;) {
      if (n < 0) return !out->empty() && ssl_ != nullptr;  // TLS without close_notify.
      out->append(buffer, static_cast<size_t>(n));
    }
    return true;
  }

 private:
  int fd_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

}  // namespace

absl::StatusOr<std::string> Exchange(int port, bool tls, const std::string& request,
                                     absl::Duration deadline) {
  const absl::Time start = absl::Now();
  const absl::Time end = start + deadline;
  Connection connection(port, tls);
  if (connection.fd() < 0) return absl::UnavailableError(absl::StrCat("cannot connect to ", port));
  SetTimeouts(connection.fd(), end - absl::Now());
  if (!connection.Handshake()) {
    return absl::DeadlineExceededError(
        absl::StrCat("TLS handshake failed after ", absl::FormatDuration(absl::Now() - start)));
  }
  SetTimeouts(connection.fd(), end - absl::Now());
  if (!connection.Send(request)) return absl::UnavailableError("send failed");
  SetTimeouts(connection.fd(), end - absl::Now());
  std::string response;
  const bool read = connection.ReadAll(&response);
  const absl::Duration took = absl::Now() - start;
  if (!read || took > deadline) {
    return absl::DeadlineExceededError(absl::StrCat("no whole response after ",
                                                    absl::FormatDuration(took), ": \"",
                                                    response.substr(0, 200), "\""));
  }
  return response;
}

HostileConnections::HostileConnections(int port, int count, const std::string& request)
    : HostileConnections(port, count, Kind::kStalledRequest, absl::ZeroDuration(), request) {}

HostileConnections::HostileConnections(int port, int count, Kind kind, absl::Duration interval,
                                       const std::string& request)
    : kind_(kind) {
  std::signal(SIGPIPE, SIG_IGN);
  for (int i = 0; i < count; ++i) {
    const int fd = Connect(port);
    if (fd < 0) continue;
    fds_.push_back(fd);
    if (kind == Kind::kSlowHead) {
      const std::string start = "GET /healthz HTTP/1.1\r\nX-Slow: ";
      ::send(fd, start.data(), start.size(), MSG_NOSIGNAL);
    } else if (kind == Kind::kStalledTls) {
      // A TLS record header announcing a 512-byte handshake message, and
      // the start of a ClientHello.
      const char hello[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, static_cast<char>(0xfc),
                            0x03, 0x03};
      ::send(fd, hello, sizeof(hello), MSG_NOSIGNAL);
    } else if (kind == Kind::kStalledRequest) {
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    }
  }
  closed_.assign(fds_.size(), false);
  if (kind == Kind::kSlowHead) dripper_ = std::thread([this, interval] { Drip(interval); });
}

HostileConnections::~HostileConnections() {
  stop_ = true;
  if (dripper_.joinable()) dripper_.join();
  for (int fd : fds_) ::close(fd);
}

void HostileConnections::Drip(absl::Duration interval) {
  std::vector<bool> closed(fds_.size(), false);
  while (!stop_) {
    for (size_t i = 0; i < fds_.size(); ++i) {
      if (closed[i]) continue;
      char byte;
      const ssize_t peek = ::recv(fds_[i], &byte, 1, MSG_DONTWAIT);
      if (peek == 0 || (peek < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
          ::send(fds_[i], "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        closed[i] = true;
        drip_closed_.fetch_add(1);
      }
    }
    absl::SleepFor(interval);  // The attack's own pace, not a wait for the server.
  }
}

int HostileConnections::Closed() {
  if (kind_ == Kind::kSlowHead) return drip_closed_.load();
  int count = 0;
  for (size_t i = 0; i < fds_.size(); ++i) {
    if (!closed_[i]) {
      char byte;
      const ssize_t n = ::recv(fds_[i], &byte, 1, MSG_DONTWAIT | MSG_PEEK);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) closed_[i] = true;
    }
    count += closed_[i] ? 1 : 0;
  }
  return count;
}

FloodResult ChunkedFlood(int port, bool tls, const std::string& path, size_t max_bytes) {
  FloodResult result;
  Connection connection(port, tls);
  if (connection.fd() < 0) return result;
  SetTimeouts(connection.fd(), absl::Seconds(30));
  if (!connection.Handshake()) return result;
  if (!connection.Send(absl::StrCat("POST ", path,
                                    " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                    "Transfer-Encoding: chunked\r\n\r\n"))) {
    return result;
  }
  const std::string chunk = absl::StrCat("10000\r\n", std::string(0x10000, 'a'), "\r\n");
  while (result.bytes_sent < max_bytes) {
    pollfd p{connection.fd(), POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) {
      char buffer[4096];
      const ssize_t n = connection.RecvNow(buffer, sizeof(buffer));
      if (n > 0) result.response.append(buffer, static_cast<size_t>(n));
      if (n != Connection::kNothingYet) break;  // The server answered (or closed).
    }
    if (!connection.Send(chunk)) break;
    result.bytes_sent += 0x10000;
  }
  connection.ReadAll(&result.response);
  return result;
}

}  // namespace facet::testing
