// A small HTTP/1.1 server for the admin endpoints (/healthz, /readyz,
// /metrics, /status): GET only, one request per connection.
#ifndef FACET_CONTROLLER_ADMIN_ADMIN_SERVER_H_
#define FACET_CONTROLLER_ADMIN_ADMIN_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"

namespace facet::controller {

struct AdminResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Serves routes on its own thread. Handlers run on that thread, one at a
// time. Stops on destruction.
class AdminServer {
 public:
  using Handler = std::function<AdminResponse()>;

  // Listens on `address` ("host:port"; port 0 picks a free one) and serves
  // `routes` (exact paths; the query string is ignored).
  static absl::StatusOr<std::unique_ptr<AdminServer>> Start(const std::string& address,
                                                            std::map<std::string, Handler> routes);
  ~AdminServer();

  // Returns "host:port" with the port actually bound.
  const std::string& address() const { return address_; }

 private:
  AdminServer(int fd, std::string address, std::map<std::string, Handler> routes);
  void Run();
  void Serve(int connection);

  const int fd_;
  const std::string address_;
  const std::map<std::string, Handler> routes_;
  absl::Notification stop_;
  std::thread thread_;
};

// Splits "host:port" (IPv6 hosts in brackets). Fails on anything else.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_ADMIN_ADMIN_SERVER_H_
