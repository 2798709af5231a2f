#include "controller/server/console/console_routes.h"

#include <atomic>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/http_attack/http_attack.h"
#include "test/kube_api_server/tls.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller {
namespace {

using ::facet::testing::IsOk;
using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const EmbeddedFile kTestFiles[] = {
    {"/ui/", "text/html; charset=utf-8", "\"aaaa\"", "<!doctype html><title>t</title>"},
    {"/ui/console.css", "text/css; charset=utf-8", "\"bbbb\"", "body{}"},
};

class ConsoleRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = AdminServer::Start("127.0.0.1:0", ConsoleRoutes(kTestFiles));
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
  }
  std::string Get(const std::string& target, const std::string& headers = "") {
    const int port = SplitHostPort(server_->address())->second;
    absl::StatusOr<std::string> answer = facet::testing::Exchange(
        port, /*tls=*/false,
        absl::StrCat("GET ", target, " HTTP/1.1\r\nHost: x\r\n", headers, "\r\n"),
        absl::Seconds(10));
    return answer.ok() ? *answer : std::string(answer.status().message());
  }
  std::unique_ptr<AdminServer> server_;
};

TEST_F(ConsoleRoutesTest, ServesEachFileWithItsContentTypeAndETag) {
  const std::string page = Get("/ui/");
  EXPECT_THAT(page, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(page, HasSubstr("Content-Type: text/html; charset=utf-8\r\n"));
  EXPECT_THAT(page, HasSubstr("ETag: \"aaaa\"\r\n"));
  EXPECT_THAT(page, HasSubstr("Cache-Control: no-cache\r\n"));
  EXPECT_THAT(page, HasSubstr("Content-Security-Policy: default-src 'self';"));
  EXPECT_THAT(page, EndsWith("\r\n\r\n<!doctype html><title>t</title>"));
  const std::string css = Get("/ui/console.css");
  EXPECT_THAT(css, HasSubstr("Content-Type: text/css; charset=utf-8\r\n"));
  EXPECT_THAT(css, HasSubstr("ETag: \"bbbb\"\r\n"));
  EXPECT_THAT(css, EndsWith("body{}"));
}

TEST_F(ConsoleRoutesTest, AnswersNotModifiedWithoutBodyWhenTheETagMatches) {
  const std::string unchanged = Get("/ui/", "If-None-Match: \"zzzz\", W/\"aaaa\"\r\n");
  EXPECT_THAT(unchanged, StartsWith("HTTP/1.1 304"));
  EXPECT_THAT(unchanged, HasSubstr("ETag: \"aaaa\"\r\n"));
  EXPECT_THAT(unchanged, EndsWith("\r\n\r\n"));
  EXPECT_THAT(Get("/ui/", "If-None-Match: \"bbbb\"\r\n"), StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(Get("/ui/", "If-None-Match: *\r\n"), StartsWith("HTTP/1.1 304"));
}

TEST(ChangeTaggedRouteTest, AnswersNotModifiedUntilTheTagChangesWithoutRunningTheHandler) {
  std::atomic<int> version = 1;  // Read on the admin server's thread.
  std::atomic<int> built = 0;
  auto server = AdminServer::Start(
      "127.0.0.1:0",
      {{"/status", ChangeTaggedRoute([&] { return absl::StrCat("v", version.load()); },
                                     [&] {
                                       ++built;
                                       return AdminResponse{
                                           200, "application/json",
                                           absl::StrCat("{\"v\":", version.load(), "}")};
                                     })}});
  ASSERT_THAT(server, IsOk());
  const int port = SplitHostPort((*server)->address())->second;
  auto get = [&](const std::string& headers) {
    absl::StatusOr<std::string> answer = facet::testing::Exchange(
        port, /*tls=*/false, absl::StrCat("GET /status HTTP/1.1\r\nHost: x\r\n", headers, "\r\n"),
        absl::Seconds(10));
    return answer.ok() ? *answer : std::string(answer.status().message());
  };
  const std::string first = get("");
  EXPECT_THAT(first, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(first, HasSubstr("ETag: \"v1\"\r\n"));
  EXPECT_THAT(first, HasSubstr("Cache-Control: no-cache\r\n"));
  EXPECT_THAT(first, EndsWith("{\"v\":1}"));
  EXPECT_EQ(built, 1);

  // Unchanged: 304, no body, nothing built.
  const std::string unchanged = get("If-None-Match: \"v1\"\r\n");
  EXPECT_THAT(unchanged, StartsWith("HTTP/1.1 304"));
  EXPECT_THAT(unchanged, EndsWith("\r\n\r\n"));
  EXPECT_EQ(built, 1);

  // An edit moves the tag: the same request gets the new answer.
  version = 2;
  const std::string changed = get("If-None-Match: \"v1\"\r\n");
  EXPECT_THAT(changed, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(changed, HasSubstr("ETag: \"v2\"\r\n"));
  EXPECT_THAT(changed, EndsWith("{\"v\":2}"));
  EXPECT_EQ(built, 2);
}

TEST_F(ConsoleRoutesTest, AnswersNotFoundForUnknownPaths) {
  EXPECT_THAT(Get("/ui/nope.js"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Get("/ui/console.css/"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Get("/ui/index.html"), StartsWith("HTTP/1.1 404"));
}

TEST_F(ConsoleRoutesTest, ServesNoFileOutsideTheTableWhateverThePathSays) {
  for (const std::string target :
       {"/ui/../etc/passwd", "/ui/%2e%2e/%2e%2e/etc/passwd", "/ui/..%2fCMakeLists.txt",
        "/../../../../etc/passwd", "/ui//console.css", "/ui/./console.css",
        "/ui/console.css%00.html", "/UI/"}) {
    const std::string answer = Get(target);
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 404")) << target;
    EXPECT_THAT(answer, AllOf(Not(HasSubstr("root:")), Not(HasSubstr("body{}")))) << target;
  }
}

TEST_F(ConsoleRoutesTest, RedirectsTheBarePathToTheOverview) {
  const std::string answer = Get("/ui");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 308"));
  EXPECT_THAT(answer, HasSubstr("Location: /ui/\r\n"));
}

TEST(ConsoleRoutesTlsTest, ServesThePagesOverTheAdminPortsTls) {
  absl::StatusOr<facet::testing::TlsCredentials> credentials =
      facet::testing::GenerateTestCredentials();
  ASSERT_THAT(credentials, IsOk());
  const std::string dir = ::testing::TempDir();
  TlsFiles tls{dir + "/console-cert.pem", dir + "/console-key.pem", ""};
  std::ofstream(tls.cert_file) << credentials->cert_pem;
  std::ofstream(tls.key_file) << credentials->key_pem;
  auto server = AdminServer::Start("127.0.0.1:0", ConsoleRoutes(kTestFiles), tls);
  ASSERT_THAT(server, IsOk());
  EXPECT_STREQ((*server)->scheme(), "https");
  const int port = SplitHostPort((*server)->address())->second;
  absl::StatusOr<std::string> page = facet::testing::Exchange(
      port, /*tls=*/true, "GET /ui/ HTTP/1.1\r\nHost: x\r\n\r\n", absl::Seconds(10));
  ASSERT_THAT(page, IsOk());
  EXPECT_THAT(*page, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(*page, EndsWith("<!doctype html><title>t</title>"));
  // Plain HTTP on the TLS port gets no page.
  absl::StatusOr<std::string> plain = facet::testing::Exchange(
      port, /*tls=*/false, "GET /ui/ HTTP/1.1\r\nHost: x\r\n\r\n", absl::Seconds(10));
  EXPECT_FALSE(plain.ok() && absl::StrContains(*plain, "<!doctype html>"));
}

TEST(IfNoneMatchTest, ComparesEachListedTagWeakly) {
  EXPECT_TRUE(IfNoneMatchMatches("\"a\"", "\"a\""));
  EXPECT_TRUE(IfNoneMatchMatches("W/\"a\"", "\"a\""));
  EXPECT_TRUE(IfNoneMatchMatches(" \"b\" ,\"a\"", "\"a\""));
  EXPECT_TRUE(IfNoneMatchMatches("*", "\"a\""));
  EXPECT_FALSE(IfNoneMatchMatches("", "\"a\""));
  EXPECT_FALSE(IfNoneMatchMatches("\"ab\"", "\"a\""));
  EXPECT_FALSE(IfNoneMatchMatches("a", "\"a\""));
}

TEST(ConsoleFilesTest, EmbedsThePagesWithContentTypesAndDigestETags) {
  std::map<std::string, const EmbeddedFile*> by_path;
  for (const EmbeddedFile& file : ConsoleFiles()) by_path[std::string(file.path)] = &file;
  ASSERT_EQ(by_path.count("/ui/"), 1u);
  EXPECT_EQ(by_path["/ui/"]->content_type, "text/html; charset=utf-8");
  EXPECT_THAT(std::string(by_path["/ui/"]->body), HasSubstr("<!doctype html>"));
  ASSERT_EQ(by_path.count("/ui/console.js"), 1u);
  EXPECT_EQ(by_path["/ui/console.js"]->content_type, "text/javascript; charset=utf-8");
  ASSERT_EQ(by_path.count("/ui/console.css"), 1u);
  EXPECT_EQ(by_path["/ui/console.css"]->content_type, "text/css; charset=utf-8");
  ASSERT_EQ(by_path.count("/ui/clients"), 1u);
  EXPECT_EQ(by_path["/ui/clients"]->content_type, "text/html; charset=utf-8");
  ASSERT_EQ(by_path.count("/ui/explain"), 1u);
  EXPECT_EQ(by_path["/ui/explain"]->content_type, "text/html; charset=utf-8");
  for (const auto& [path, file] : by_path) {
    EXPECT_THAT(std::string(file->etag), AllOf(StartsWith("\""), EndsWith("\""))) << path;
    EXPECT_EQ(file->etag.size(), 34u) << path;
    EXPECT_FALSE(file->body.empty()) << path;
  }
  EXPECT_NE(by_path["/ui/"]->etag, by_path["/ui/console.js"]->etag);
}

}  // namespace
}  // namespace facet::controller
