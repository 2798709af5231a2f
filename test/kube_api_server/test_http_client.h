// A tiny blocking HTTP/1.1 client for tests of the test Kubernetes API server:
// one connection, explicit requests, chunk-by-chunk reading of streams.
#ifndef FACET_TEST_KUBE_API_SERVER_TEST_HTTP_CLIENT_H_
#define FACET_TEST_KUBE_API_SERVER_TEST_HTTP_CLIENT_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

struct ssl_st;
struct ssl_ctx_st;

namespace facet::testing {

struct HttpHead {
  int code = 0;
  std::map<std::string, std::string> headers;  // Keys lower-cased.
  bool chunked() const;
};

// Owned by one thread.
class HttpConnection {
 public:
  // Connects to 127.0.0.1:`port`; with `ca_pem`, over TLS verifying the
  // server certificate against that CA and the IP 127.0.0.1.
  static absl::StatusOr<std::unique_ptr<HttpConnection>> Connect(int port,
                                                                 const std::string& ca_pem = "");
  ~HttpConnection();

  absl::Status Send(const std::string& method, const std::string& target,
                    const std::vector<std::pair<std::string, std::string>>& headers,
                    const std::string& body);
  absl::StatusOr<HttpHead> ReadHead(absl::Duration timeout);
  // Reads a whole body (Content-Length or chunked).
  absl::StatusOr<std::string> ReadBody(const HttpHead& head, absl::Duration timeout);
  // Reads the next chunk of a chunked body. OutOfRange at the terminating
  // chunk, Unavailable when the connection ends without it, DeadlineExceeded
  // on timeout.
  absl::StatusOr<std::string> NextChunk(absl::Duration timeout);

 private:
  explicit HttpConnection(int fd) : fd_(fd) {}
  absl::Status StartTls(const std::string& ca_pem);
  absl::Status WriteAll(const std::string& data);
  absl::Status Fill(absl::Time deadline);
  absl::StatusOr<std::string> ReadLine(absl::Time deadline);

  int fd_;
  ssl_ctx_st* ssl_context_ = nullptr;
  ssl_st* ssl_ = nullptr;
  std::string buffer_;
};

// Reads newline-delimited events from a chunked watch response, recording the
// chunk boundaries seen.
class WatchReader {
 public:
  explicit WatchReader(std::unique_ptr<HttpConnection> connection)
      : connection_(std::move(connection)) {}
  // Returns the next complete line (without '\n'); OutOfRange on clean end,
  // Unavailable on a cut connection (a partial line is left in partial()).
  absl::StatusOr<std::string> NextLine(absl::Duration timeout = absl::Seconds(10));
  const std::vector<std::string>& chunks() const { return chunks_; }
  const std::string& partial() const { return pending_; }

 private:
  std::unique_ptr<HttpConnection> connection_;
  std::string pending_;
  std::vector<std::string> chunks_;
};

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_TEST_HTTP_CLIENT_H_
