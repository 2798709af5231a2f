#include "controller/admin/admin_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

TEST(AdminServerTest, RejectsBadAddresses) {
  EXPECT_THAT(AdminServer::Start("nocolon", {}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(AdminServer::Start("127.0.0.1:99999", {}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SplitHostPort("[::1]:80"), IsOk());
  EXPECT_EQ(SplitHostPort("[::1]:80")->first, "::1");
  EXPECT_EQ(SplitHostPort(":80")->first, "0.0.0.0");
}

}  // namespace
}  // namespace facet::controller
