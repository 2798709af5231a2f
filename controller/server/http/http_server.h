// The HTTP/1.1 server under the admin port and the admission webhook: one
// request per connection, every phase under a deadline, bodies bounded and
// counted before they are read, on Boost.Beast and Boost.Asio.
#ifndef FACET_CONTROLLER_SERVER_HTTP_HTTP_SERVER_H_
#define FACET_CONTROLLER_SERVER_HTTP_HTTP_SERVER_H_

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/server/tls/tls_files.h"

namespace facet::controller {

// A request as a handler sees it; its body is complete.
struct HttpRequest {
  std::string method;  // As sent: "GET", "HEAD", "POST".
  std::string path;    // Percent-decoded, without the query.
  std::string query;   // As sent, without the "?".
  // Header fields by lower-case name; a repeated field's values joined by ", ".
  std::map<std::string, std::string> headers;
  std::string body;
};

struct HttpResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Further header fields (name, value), e.g. ETag, sent as given.
  std::vector<std::pair<std::string, std::string>> headers = {};
};

// Answers one request. Runs on one of the server's worker threads, several
// at once when there are several workers.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  // Where to listen: a host name or address (IPv6 without brackets) and a
  // port (0 picks a free one).
  std::string host;
  int port = 0;
  // TLS when set: the current certificates at every handshake (see
  // UseReloadingCertificates). Must outlive the server.
  ReloadingCertificates* certificates = nullptr;
  // Methods served; any other gets 405 with `method_not_allowed_body`
  // before its body is read.
  std::vector<std::string> methods = {"GET", "HEAD"};
  std::string method_not_allowed_body = "method not allowed\n";
  // The request line and headers; a larger head gets 431.
  size_t max_header_bytes = 16 << 10;
  // One request's body, however it is framed (Content-Length or chunked);
  // a larger one gets 413 without being read.
  size_t max_body_bytes = 16 << 10;
  // Body bytes held at once over every connection, reserved before they
  // are read (Content-Length up front, each chunk at its size); a request
  // that does not fit gets 503.
  size_t max_buffered_body_bytes = 1 << 20;
  // From accept until the request head is complete, TLS handshake
  // included: a total, not a per-read timeout.
  absl::Duration header_timeout = absl::Seconds(5);
  // From the head until the body is complete.
  absl::Duration body_timeout = absl::Seconds(10);
  // From the handler's answer until the response is written.
  absl::Duration write_timeout = absl::Seconds(10);
  // Open connections. When full, the oldest connection still in its
  // handshake or head is closed to admit a new one; when none is, the new
  // connection is closed.
  int max_connections = 512;
  int listen_backlog = SOMAXCONN;
  int worker_threads = 2;
};

// Serves on one I/O thread and a pool of worker threads for handlers (a slow
// handler never stalls I/O); answers every request with Connection: close.
// Bad heads get 400, oversized ones 431, paths and methods as the handler
// and options decide. Thread-safe; destruction stops it, waiting for the
// handlers that run.
class HttpServer {
 public:
  // Binds and starts serving. Unavailable when the host does not resolve or
  // the port cannot be bound (in use, or not a local address); Internal
  // when the TLS context cannot be set up.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                           HttpHandler handler);
  ~HttpServer();

  // Returns the port actually bound.
  int port() const { return port_; }

  // Returns the open connections (for tests and diagnostics).
  int connections() const { return connection_count_.load(std::memory_order_relaxed); }

 private:
  struct Io;
  template <typename Stream>
  class Session;
  class SessionBase;

  HttpServer(HttpServerOptions options, HttpHandler handler);
  void Accept();
  bool ReserveBody(size_t bytes);
  void ReleaseBody(size_t bytes);

  const HttpServerOptions options_;
  const HttpHandler handler_;
  int port_ = 0;
  std::atomic<int> connection_count_{0};
  std::atomic<size_t> buffered_body_bytes_{0};
  // Owned by the I/O thread; see http_server.cc.
  std::unique_ptr<Io> io_;
  std::thread io_thread_;
};

// Splits "host:port" (IPv6 hosts in brackets; an empty host is 0.0.0.0).
// InvalidArgument naming `address` for anything else or a port outside
// 0..65535.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address);

// Returns "host:port", with an IPv6 host in brackets: SplitHostPort's inverse.
std::string JoinHostPort(absl::string_view host, int port);

// Returns the parameters of a query string ("a=1&b=x%3Dy&c=d=e"), decoded
// (%XX, and + as a space), in order: each name ends at its first "=", so a
// value may hold "=" written plainly or escaped.
std::multimap<std::string, std::string> ParseQuery(absl::string_view query);

// Raises the soft limit on open files to the hard limit, so a port's
// connection bound, not the process's, is what a flood of clients meets.
// Returns the new soft limit.
long RaiseOpenFileLimit();

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_HTTP_HTTP_SERVER_H_
