#include "controller/server/admin/admin_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/http_attack/http_attack.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Get(const std::string& address, const std::string& request) {
  auto host_port = SplitHostPort(address);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(host_port->second);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return "connect failed";
  ::send(fd, request.data(), request.size(), 0);
  std::string response;
  char buffer[1024];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0;) response.append(buffer, n);
  ::close(fd);
  return response;
}

TEST(AdminServerTest, ServesRoutesOnAPickedPort) {
  auto server = AdminServer::Start("127.0.0.1:0", {{"/healthz", [] { return AdminResponse{200, "text/plain", "ok\n"}; }},
                                                   {"/readyz", [] { return AdminResponse{503, "text/plain", "not ready\n"}; }}});
  ASSERT_THAT(server, IsOk());
  EXPECT_THAT((*server)->address(), StartsWith("127.0.0.1:"));
  EXPECT_NE((*server)->address(), "127.0.0.1:0");
  std::string ok = Get((*server)->address(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(ok, HasSubstr("Content-Length: 3\r\n"));
  EXPECT_THAT(ok, HasSubstr("\r\n\r\nok\n"));
  EXPECT_THAT(Get((*server)->address(), "GET /readyz?verbose=1 HTTP/1.1\r\n\r\n"),
              StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(Get((*server)->address(), "GET /nope HTTP/1.1\r\n\r\n"),
              AllOf(StartsWith("HTTP/1.1 404"), HasSubstr("/healthz")));
  EXPECT_THAT(Get((*server)->address(), "POST /healthz HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(Get((*server)->address(), "garbage\r\n\r\n"), StartsWith("HTTP/1.1 400"));
}

TEST(AdminServerTest, HandlersReadRequestHeadersAndAddResponseHeaders) {
  auto server = AdminServer::Start(
      "127.0.0.1:0", {{"/tag", [](const AdminRequest& request) {
                         AdminResponse response{200, "text/plain", request.Header("if-none-match")};
                         response.headers.emplace_back("ETag", "\"abc\"");
                         return response;
                       }}});
  ASSERT_THAT(server, IsOk());
  const std::string answer = Get((*server)->address(),
                                 "GET /tag HTTP/1.1\r\nIf-None-Match: \"x\"\r\n"
                                 "if-none-match: \"y\"\r\n\r\n");
  EXPECT_THAT(answer, HasSubstr("ETag: \"abc\"\r\n"));
  EXPECT_THAT(answer, HasSubstr("\r\n\r\n\"x\", \"y\""));
}

TEST(AdminServerTest, RejectsBadAddresses) {
  EXPECT_THAT(AdminServer::Start("nocolon", {}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(AdminServer::Start("127.0.0.1:99999", {}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SplitHostPort("[::1]:80"), IsOk());
  EXPECT_EQ(SplitHostPort("[::1]:80")->first, "::1");
  EXPECT_EQ(SplitHostPort(":80")->first, "0.0.0.0");
}

TEST(AdminServerTest, HealthzAnswersWithinASecondBesideIdleAndSlowlorisConnections) {
  auto server =
      AdminServer::Start("127.0.0.1:0", {{"/healthz", [] {
                                            return AdminResponse{200, "text/plain", "ok\n"};
                                          }}});
  ASSERT_THAT(server, IsOk());
  const int port = SplitHostPort((*server)->address())->second;
  using Kind = facet::testing::HostileConnections::Kind;
  facet::testing::HostileConnections idle(port, 100, Kind::kIdle);
  facet::testing::HostileConnections slow(port, 100, Kind::kSlowHead);
  for (int i = 0; i < 3; ++i) {
    // A kubelet probe's deadline.
    absl::StatusOr<std::string> probe = facet::testing::Exchange(
        port, /*tls=*/false, "GET /healthz HTTP/1.1\r\n\r\n", absl::Seconds(1));
    ASSERT_THAT(probe, IsOk());
    EXPECT_THAT(*probe, StartsWith("HTTP/1.1 200"));
  }
  // Dripping a header byte every 200 ms does not keep a connection: the
  // head's deadline is a total. Generous margin for a loaded machine.
  const absl::Time give_up = absl::Now() + kAdminHeaderTimeout + absl::Seconds(25);
  while (slow.Closed() < 100 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(slow.Closed(), 100);
}

}  // namespace
}  // namespace facet::controller
