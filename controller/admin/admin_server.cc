#include "controller/admin/admin_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace facet::controller {
namespace {

const char* Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

void WriteAll(int fd, const std::string& data) {
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = ::send(fd, data.data() + written, data.size() - written, MSG_NOSIGNAL);
    if (n <= 0) return;
    written += static_cast<size_t>(n);
  }
}

}  // namespace

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address) {
  std::string host;
  std::string port;
  if (!address.empty() && address[0] == '[') {
    size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return absl::InvalidArgumentError(absl::StrCat("address \"", address, "\": expected [HOST]:PORT"));
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("address \"", address, "\": expected HOST:PORT"));
    }
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  int number;
  if (!absl::SimpleAtoi(port, &number) || number < 0 || number > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address \"", address, "\": port must be a number from 0 to 65535"));
  }
  if (host.empty()) host = "0.0.0.0";
  return std::make_pair(host, number);
}

absl::StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(
    const std::string& address, std::map<std::string, Handler> routes) {
  auto host_port = SplitHostPort(address);
  if (!host_port.ok()) return host_port.status();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* result = nullptr;
  const std::string port = std::to_string(host_port->second);
  if (int rc = getaddrinfo(host_port->first.c_str(), port.c_str(), &hints, &result); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("admin address \"", address, "\": ", gai_strerror(rc)));
  }
  int fd = -1;
  std::string error = "no usable address";
  for (addrinfo* ai = result; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(result);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("admin address \"", address, "\": ", error));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  int actual_port = bound.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const std::string& host = host_port->first;
  std::string actual = host.find(':') != std::string::npos
                           ? absl::StrCat("[", host, "]:", actual_port)
                           : absl::StrCat(host, ":", actual_port);
  return std::unique_ptr<AdminServer>(new AdminServer(fd, std::move(actual), std::move(routes)));
}

AdminServer::AdminServer(int fd, std::string address, std::map<std::string, Handler> routes)
    : fd_(fd), address_(std::move(address)), routes_(std::move(routes)) {
  thread_ = std::thread([this] { Run(); });
}

AdminServer::~AdminServer() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
}

void AdminServer::Run() {
  while (!stop_.HasBeenNotified()) {
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    int connection = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    Serve(connection);
    ::close(connection);
  }
}

void AdminServer::Serve(int connection) {
  std::string request;
  char buffer[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    pollfd pfd{connection, POLLIN, 0};
    if (::poll(&pfd, 1, 2000) <= 0) return;
    ssize_t n = ::recv(connection, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<size_t>(n));
  }
  std::vector<std::string> parts = absl::StrSplit(request.substr(0, request.find("\r\n")), ' ');
  AdminResponse response;
  if (parts.size() < 3) {
    response = {400, "text/plain; charset=utf-8", "bad request\n"};
  } else if (parts[0] != "GET" && parts[0] != "HEAD") {
    response = {405, "text/plain; charset=utf-8", "only GET is supported\n"};
  } else {
    std::string path = parts[1].substr(0, parts[1].find('?'));
    auto it = routes_.find(path);
    if (it == routes_.end()) {
      std::string known;
      for (const auto& [route, handler] : routes_) absl::StrAppend(&known, route, "\n");
      response = {404, "text/plain; charset=utf-8", absl::StrCat("not found; try:\n", known)};
    } else {
      response = it->second();
    }
    if (parts[0] == "HEAD") response.body.clear();
  }
  WriteAll(connection, absl::StrCat("HTTP/1.1 ", response.code, " ", Reason(response.code),
                                    "\r\nContent-Type: ", response.content_type,
                                    "\r\nContent-Length: ", response.body.size(),
                                    "\r\nConnection: close\r\n\r\n", response.body));
}

}  // namespace facet::controller
