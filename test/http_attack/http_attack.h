// Hostile and probing HTTP clients for the admin and webhook ports: idle
// connections, slowloris heads, stalled TLS handshakes, an endless chunked
// body, and a probe with a deadline. Blocking sockets to 127.0.0.1.
#ifndef FACET_TEST_HTTP_ATTACK_HTTP_ATTACK_H_
#define FACET_TEST_HTTP_ATTACK_HTTP_ATTACK_H_

#include <atomic>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace facet::testing {

// Sends `request` (a whole HTTP/1.1 request) to 127.0.0.1:`port`, over TLS
// when `tls` (the server's certificate is not checked), and returns the
// response up to the server's close. DeadlineExceeded when connecting,
// the handshake, sending and reading take longer than `deadline` in all.
absl::StatusOr<std::string> Exchange(int port, bool tls, const std::string& request,
                                     absl::Duration deadline);

// Connections that do nothing, or do one slow thing, until destroyed.
// Thread-compatible.
class HostileConnections {
 public:
  enum class Kind {
    kIdle,            // Connect and send nothing.
    kSlowHead,        // Send a request head one byte per `interval`, never ending it.
    kStalledTls,      // Send the first bytes of a ClientHello, then nothing.
    kStalledRequest,  // Send the given bytes (a partial request), then nothing.
  };
  // Opens `count` connections to 127.0.0.1:`port`; kSlowHead drips on a thread.
  HostileConnections(int port, int count, Kind kind,
                     absl::Duration interval = absl::Milliseconds(200))
      : HostileConnections(port, count, kind, interval, "") {}
  // kStalledRequest: each connection sends `request` and then nothing.
  HostileConnections(int port, int count, const std::string& request);
  ~HostileConnections();

  // Returns how many of the connections the server has closed so far
  // (a read sees end-of-file or a reset).
  int Closed();
  int opened() const { return static_cast<int>(fds_.size()); }

 private:
  HostileConnections(int port, int count, Kind kind, absl::Duration interval,
                     const std::string& request);
  void Drip(absl::Duration interval);

  std::vector<int> fds_;
  std::vector<bool> closed_;
  std::atomic<bool> stop_{false};
  std::atomic<int> drip_closed_{0};
  std::thread dripper_;
  Kind kind_;
};

struct FloodResult {
  std::string response;   // What the server answered (may be empty).
  size_t bytes_sent = 0;  // Body bytes the server took before it answered or closed.
};

// POSTs a chunked body to `path` in 64 KiB chunks, up to `max_bytes`,
// watching for an answer after every chunk; stops at the answer or when the
// server closes the connection.
FloodResult ChunkedFlood(int port, bool tls, const std::string& path, size_t max_bytes);

}  // namespace facet::testing

#endif  // FACET_TEST_HTTP_ATTACK_HTTP_ATTACK_H_
