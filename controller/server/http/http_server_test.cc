#include "controller/server/http/http_server.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/http_attack/http_attack.h"
#include "test/kube_api_server/tls.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller {
namespace {

using ::facet::testing::Exchange;
using ::facet::testing::HostileConnections;
using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A probe's deadline: what a kubelet probe allows.
constexpr absl::Duration kProbe = absl::Seconds(1);

HttpResponse Echo(const HttpRequest& request) {
  return {200, "text/plain",
          absl::StrCat(request.method, " ", request.path, " ", request.query, " ",
                       request.body.size())};
}

std::unique_ptr<HttpServer> StartServer(HttpServerOptions options, HttpHandler handler = Echo) {
  options.host = "127.0.0.1";
  auto server = HttpServer::Start(std::move(options), std::move(handler));
  EXPECT_THAT(server, IsOk());
  return server.ok() ? std::move(*server) : nullptr;
}

std::string Get(int port, const std::string& request) {
  absl::StatusOr<std::string> response = Exchange(port, /*tls=*/false, request, absl::Seconds(30));
  return response.ok() ? *response : std::string(response.status().message());
}

TEST(HttpServerTest, AnswersWithConnectionCloseAndHeadWithoutBody) {
  auto server = StartServer({});
  ASSERT_NE(server, nullptr);
  const std::string get = Get(server->port(), "GET /a%20b?x=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(get, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(get, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(get, HasSubstr("\r\n\r\nGET /a b x=1 0"));
  const std::string head = Get(server->port(), "HEAD /p HTTP/1.1\r\n\r\n");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, HasSubstr("Content-Length: 10\r\n"));
  EXPECT_THAT(head, ::testing::EndsWith("\r\n\r\n"));
}

TEST(HttpServerTest, RefusesMethodsBadHeadsAndOversizedHeads) {
  HttpServerOptions options;
  options.max_header_bytes = 1024;
  options.method_not_allowed_body = "only GET\n";
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(Get(server->port(), "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n"),
              AllOf(StartsWith("HTTP/1.1 405"), HasSubstr("only GET")));
  EXPECT_THAT(Get(server->port(), "garbage\r\n\r\n"), StartsWith("HTTP/1.1 400"));
  EXPECT_THAT(Get(server->port(),
                  absl::StrCat("GET / HTTP/1.1\r\nX: ", std::string(2000, 'a'), "\r\n\r\n")),
              StartsWith("HTTP/1.1 431"));
}

TEST(HttpServerTest, ChunkedBodyPastTheBoundGets413BeforeTheServerReadsIt) {
  HttpServerOptions options;
  options.methods = {"POST"};
  options.max_body_bytes = 3 << 20;
  options.max_buffered_body_bytes = 8 << 20;
  std::atomic<int> handled{0};
  auto server = StartServer(options, [&](const HttpRequest& request) {
    ++handled;
    return Echo(request);
  });
  ASSERT_NE(server, nullptr);
  const testing::FloodResult flood =
      testing::ChunkedFlood(server->port(), /*tls=*/false, "/validate", 64 << 20);
  EXPECT_THAT(flood.response, StartsWith("HTTP/1.1 413"));
  EXPECT_THAT(flood.response, HasSubstr("larger than 3145728 bytes"));
  EXPECT_LT(flood.bytes_sent, 64u << 20);
  EXPECT_EQ(handled.load(), 0);
  // Declared up front, it is refused before a byte of it is read.
  EXPECT_THAT(Get(server->port(), "POST / HTTP/1.1\r\nContent-Length: 4194304\r\n\r\n"),
              StartsWith("HTTP/1.1 413"));
  EXPECT_THAT(Get(server->port(), "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"),
              HasSubstr("\r\n\r\nPOST /  3"));
  EXPECT_THAT(Get(server->port(),
                  "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"),
              HasSubstr("\r\n\r\nPOST /  5"));
}

TEST(HttpServerTest, BodiesPastTheServerBudgetGet503UntilTheHeldOnesEnd) {
  HttpServerOptions options;
  options.methods = {"POST"};
  options.max_body_bytes = 1000;
  options.max_buffered_body_bytes = 1500;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  {
    // Holds 1000 bytes of budget: the rest of its body never comes.
    HostileConnections held(server->port(), 1, "POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\nab");
    // The reservation is made on the server's thread: a 600-byte body no
    // longer fits once it is.
    std::string refused;
    for (int i = 0; i < 3000 && !absl::StartsWith(refused, "HTTP/1.1 503"); ++i) {
      refused = Get(server->port(),
                    "POST / HTTP/1.1\r\nContent-Length: 600\r\n\r\n" + std::string(600, 'x'));
    }
    EXPECT_THAT(refused, AllOf(StartsWith("HTTP/1.1 503"), HasSubstr("retry")));
    EXPECT_THAT(Get(server->port(),
                    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "258\r\n" +
                        std::string(600, 'x') + "\r\n0\r\n\r\n"),
                StartsWith("HTTP/1.1 503"));
    EXPECT_THAT(Get(server->port(),
                    "POST / HTTP/1.1\r\nContent-Length: 400\r\n\r\n" + std::string(400, 'x')),
                StartsWith("HTTP/1.1 200"));
  }
  // The held body's connection ended: its budget is back.
  std::string admitted;
  for (int i = 0; i < 3000 && !absl::StartsWith(admitted, "HTTP/1.1 200"); ++i) {
    admitted = Get(server->port(),
                   "POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n" + std::string(1000, 'x'));
  }
  EXPECT_THAT(admitted, StartsWith("HTTP/1.1 200"));
}

TEST(HttpServerTest, ProbeAnswersWithinASecondBesideIdleAndSlowConnections) {
  HttpServerOptions options;
  options.header_timeout = absl::Seconds(3);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  HostileConnections idle(server->port(), 100, HostileConnections::Kind::kIdle);
  HostileConnections slow(server->port(), 100, HostileConnections::Kind::kSlowHead);
  ASSERT_EQ(idle.opened(), 100);
  ASSERT_EQ(slow.opened(), 100);
  for (int i = 0; i < 5; ++i) {
    EXPECT_THAT(Exchange(server->port(), false, "GET /healthz HTTP/1.1\r\n\r\n", kProbe), IsOk());
  }
  // The header deadline is a total: dripping a byte every 200 ms does not
  // extend it. Generous margin for a loaded machine.
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while ((slow.Closed() < 100 || idle.Closed() < 100) && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(slow.Closed(), 100);
  EXPECT_EQ(idle.Closed(), 100);
}

TEST(HttpServerTest, TlsProbeAnswersWithinASecondBesideStalledHandshakes) {
  auto credentials = facet::testing::GenerateTestCredentials();
  ASSERT_THAT(credentials, IsOk());
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/http.crt") << credentials->cert_pem;
  std::ofstream(dir + "/http.key") << credentials->key_pem;
  ReloadingCertificates certificates({dir + "/http.crt", dir + "/http.key", ""}, "test-tls");
  ASSERT_THAT(certificates.Load(), IsOk());
  HttpServerOptions options;
  options.certificates = &certificates;
  options.header_timeout = absl::Seconds(3);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  HostileConnections idle(server->port(), 100, HostileConnections::Kind::kIdle);
  HostileConnections stalled(server->port(), 100, HostileConnections::Kind::kStalledTls);
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<std::string> probe =
        Exchange(server->port(), /*tls=*/true, "GET /healthz HTTP/1.1\r\n\r\n", kProbe);
    ASSERT_THAT(probe, IsOk());
    EXPECT_THAT(*probe, StartsWith("HTTP/1.1 200"));
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (stalled.Closed() < 100 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(stalled.Closed(), 100);
}

TEST(HttpServerTest, AFullTableClosesTheOldestWaitingConnectionToAdmitANewOne) {
  HttpServerOptions options;
  options.max_connections = 10;
  options.header_timeout = absl::Seconds(60);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  HostileConnections first(server->port(), 10, HostileConnections::Kind::kIdle);
  HostileConnections second(server->port(), 10, HostileConnections::Kind::kIdle);
  EXPECT_THAT(Exchange(server->port(), false, "GET /healthz HTTP/1.1\r\n\r\n", kProbe), IsOk());
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (first.Closed() < 10 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(first.Closed(), 10);
  EXPECT_LT(second.Closed(), 10);
}

TEST(HttpServerTest, ASlowHandlerDoesNotStallOtherRequests) {
  absl::Notification release;
  absl::Notification entered;
  HttpServerOptions options;
  options.worker_threads = 2;
  auto server = StartServer(options, [&](const HttpRequest& request) {
    if (request.path == "/slow") {
      entered.Notify();
      release.WaitForNotification();
    }
    return Echo(request);
  });
  ASSERT_NE(server, nullptr);
  std::thread slow([&] { Get(server->port(), "GET /slow HTTP/1.1\r\n\r\n"); });
  entered.WaitForNotification();
  EXPECT_THAT(Exchange(server->port(), false, "GET /healthz HTTP/1.1\r\n\r\n", kProbe), IsOk());
  release.Notify();
  slow.join();
}

TEST(HttpServerTest, FailsToBindAPortInUse) {
  auto first = StartServer({});
  ASSERT_NE(first, nullptr);
  HttpServerOptions options;
  options.host = "127.0.0.1";
  options.port = first->port();
  EXPECT_THAT(HttpServer::Start(options, Echo), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(ParseQueryTest, SplitsEachParameterAtItsFirstEquals) {
  EXPECT_THAT(
      ParseQuery("param=env=prod&param=a%3Db&x=a+b%20c&flag&&y="),
      ::testing::ElementsAre(::testing::Pair("flag", ""), ::testing::Pair("param", "env=prod"),
                             ::testing::Pair("param", "a=b"), ::testing::Pair("x", "a b c"),
                             ::testing::Pair("y", "")));
}

TEST(SplitHostPortTest, AcceptsBracketedIpv6AndAnEmptyHost) {
  EXPECT_EQ(SplitHostPort("[::1]:80")->first, "::1");
  EXPECT_EQ(SplitHostPort(":80")->first, "0.0.0.0");
  EXPECT_THAT(SplitHostPort("nocolon"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(JoinHostPortTest, BracketsIpv6HostsSoSplitHostPortReadsThemBack) {
  EXPECT_EQ(JoinHostPort("127.0.0.1", 80), "127.0.0.1:80");
  EXPECT_EQ(JoinHostPort("::1", 443), "[::1]:443");
  for (const std::string address : {"127.0.0.1:80", "[::1]:443", "localhost:0"}) {
    auto host_port = SplitHostPort(address);
    ASSERT_TRUE(host_port.ok()) << address;
    EXPECT_EQ(JoinHostPort(host_port->first, host_port->second), address);
  }
}

}  // namespace
}  // namespace facet::controller
