// A minimal HTTP/1.1 server for the test Kubernetes API server: a thread per
// connection, keep-alive, Content-Length and chunked request bodies, and
// chunked streaming responses (for watches).
#ifndef FACET_TEST_KUBE_API_SERVER_HTTP_SERVER_H_
#define FACET_TEST_KUBE_API_SERVER_HTTP_SERVER_H_

#include <atomic>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "test/kube_api_server/tls.h"

struct ssl_st;
struct ssl_ctx_st;

namespace facet::testing {

struct HttpRequest {
  std::string method;
  std::string target;                          // As sent: path and query.
  std::string path;                            // Percent-decoded path without the query.
  std::map<std::string, std::string> query;    // Decoded; the first value of a repeated key.
  std::map<std::string, std::string> headers;  // Keys lower-cased.
  std::string body;

  // Returns the header `name` (lower-case), or "".
  std::string Header(const std::string& name) const;
  // Returns the query parameter `name`, or "".
  std::string Query(const std::string& name) const;
  bool HasQuery(const std::string& name) const { return query.count(name) > 0; }
};

// Writes one response on a connection. Owned by the connection thread; the
// handler must call exactly one of Send or StartStream.
class HttpResponder {
 public:
  // `ssl` is null for plain HTTP.
  HttpResponder(int fd, ssl_st* ssl) : fd_(fd), ssl_(ssl) {}

  // Sends a complete response with Content-Length.
  void Send(int code, const std::vector<std::pair<std::string, std::string>>& headers,
            absl::string_view body);
  // Starts a chunked response. Returns false when the client is gone.
  bool StartStream(int code, const std::vector<std::pair<std::string, std::string>>& headers);
  // Writes one chunk (empty data writes nothing). Returns false when the client is gone.
  bool WriteChunk(absl::string_view data);
  // Ends the stream cleanly with the terminating zero-length chunk.
  bool FinishStream();
  // Cuts the connection at once: no terminating chunk, no further requests.
  void Abort();
  // Returns whether the peer has closed its side (non-blocking check).
  bool PeerClosed() const;
  // Asks the connection to close after this response.
  void CloseAfterResponse() { close_ = true; }

  bool should_close() const { return close_; }
  bool responded() const { return responded_; }

 private:
  friend class HttpServer;
  bool WriteAll(absl::string_view data);

  const int fd_;
  ssl_st* const ssl_;
  bool close_ = false;
  bool responded_ = false;
};

// Accepts connections on 127.0.0.1 and runs `handler` for each request on the
// connection's own thread. Thread-safe.
class HttpServer {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpResponder&)>;

  // Listens on 127.0.0.1:`port` (0 picks a free port); serves HTTPS with
  // `tls` when given (and then ignores SIGPIPE process-wide, as OpenSSL
  // writes to sockets without MSG_NOSIGNAL).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      int port, Handler handler, const std::optional<TlsCredentials>& tls = std::nullopt);
  // Stops listening, cuts every connection and joins every thread.
  ~HttpServer();

  int port() const { return port_; }

  // Stops accepting and cuts every open connection; waits for their threads.
  // Callers must first make handlers blocked in streams return (they notice a
  // cut connection only when they next write).
  void Stop();
  // Listens again on the same port after Stop().
  absl::Status Resume();
  // Shuts down every open connection (handlers see failed writes).
  void CutConnections();

 private:
  struct Connection {
    int fd;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  HttpServer(int fd, int port, Handler handler, ssl_ctx_st* ssl_context);
  void AcceptLoop(int listen_fd);
  void Serve(Connection* connection);
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int port_;
  const Handler handler_;
  ssl_ctx_st* const ssl_context_;  // Owned; null for plain HTTP.
  absl::Mutex mu_;
  int listen_fd_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::list<std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
};

// Returns the reason phrase for an HTTP status code.
const char* HttpReason(int code);

// Percent-decodes `text` ('+' stays '+' unless `plus_is_space`).
std::string PercentDecode(absl::string_view text, bool plus_is_space);

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_HTTP_SERVER_H_
