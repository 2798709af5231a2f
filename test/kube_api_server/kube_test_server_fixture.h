// The fixture of the test Kubernetes API server's HTTP tests: a server on
// loopback with namespaces demo and other, a one-request client (Call), watch
// readers, and checks of Status answers.
#ifndef FACET_TEST_KUBE_API_SERVER_KUBE_TEST_SERVER_FIXTURE_H_
#define FACET_TEST_KUBE_API_SERVER_KUBE_TEST_SERVER_FIXTURE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test/kube_api_server/json.h"
#include "test/kube_api_server/kube_test_server.h"
#include "test/kube_api_server/test_http_client.h"
#include "xds_server/common/status_matchers.h"

namespace facet::testing {

inline constexpr char kMerge[] = "application/merge-patch+json";
inline constexpr absl::Duration kTimeout = absl::Seconds(10);

struct Reply {
  int code = 0;
  HttpHead head;
  std::string raw;
  Json body;

  std::string Header(const std::string& name) const {
    auto it = head.headers.find(name);
    return it == head.headers.end() ? "" : it->second;
  }
  std::string rv() const { return GetString(body, {"metadata", "resourceVersion"}); }
  int64_t generation() const {
    const Json* g = FindPath(body, {"metadata", "generation"});
    return g != nullptr && g->is_number_integer() ? g->get<int64_t>() : 0;
  }
};

// An XdsResource named `name` in JSON (with a status, which create strips).
inline std::string XrBody(const std::string& name, const std::string& type = "listener",
                          const std::string& extra_metadata = "") {
  return absl::StrCat(
      R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsResource","metadata":{"name":")", name, "\"",
      extra_metadata, R"(},"spec":{"type":")", type,
      R"(","name":"greeter","variants":[{"resource":{}}]},"status":{"servedName":"x"}})");
}

inline Json ParseOrDie(const std::string& text) {
  auto json = ParseJson(text);
  EXPECT_THAT(json, IsOk()) << text;
  return json.ok() ? *json : Json();
}

class KubeTestServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(KubeTestServer::Options()); }

  void Start(KubeTestServer::Options options) {
    server_.reset();
    auto server = KubeTestServer::Start(std::move(options));
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
    ASSERT_THAT(server_->CreateNamespace("demo"), IsOk());
    ASSERT_THAT(server_->CreateNamespace("other"), IsOk());
  }

  Reply Call(const std::string& method, const std::string& path, const std::string& body = "",
             const std::string& content_type = "application/json",
             std::vector<std::pair<std::string, std::string>> headers = {},
             std::optional<std::string> token = std::nullopt) {
    Reply reply;
    auto connection = HttpConnection::Connect(server_->port());
    EXPECT_THAT(connection, IsOk());
    if (!connection.ok()) return reply;
    std::string bearer = token.value_or(server_->token());
    if (!bearer.empty()) headers.emplace_back("Authorization", absl::StrCat("Bearer ", bearer));
    if (!body.empty()) headers.emplace_back("Content-Type", content_type);
    EXPECT_THAT((*connection)->Send(method, path, headers, body), IsOk());
    auto head = (*connection)->ReadHead(kTimeout);
    EXPECT_THAT(head, IsOk());
    if (!head.ok()) return reply;
    reply.head = *head;
    reply.code = head->code;
    auto raw = (*connection)->ReadBody(*head, kTimeout);
    EXPECT_THAT(raw, IsOk());
    reply.raw = raw.value_or("");
    if (absl::StrContains(reply.Header("content-type"), "json")) reply.body = ParseOrDie(reply.raw);
    return reply;
  }

  Reply CreateXr(const std::string& name, const std::string& ns = "demo") {
    Reply reply =
        Call("POST", absl::StrCat("/apis/facet.dev/v1alpha1/namespaces/", ns, "/xdsresources"),
             XrBody(name));
    EXPECT_EQ(reply.code, 201) << reply.raw;
    return reply;
  }

  // Opens a watch and checks the response head (200, chunked).
  std::unique_ptr<WatchReader> Watch(const std::string& path) {
    auto connection = HttpConnection::Connect(server_->port());
    EXPECT_THAT(connection, IsOk());
    if (!connection.ok()) return nullptr;
    EXPECT_THAT(
        (*connection)
            ->Send("GET", path, {{"Authorization", absl::StrCat("Bearer ", server_->token())}}, ""),
        IsOk());
    auto head = (*connection)->ReadHead(kTimeout);
    EXPECT_THAT(head, IsOk());
    if (!head.ok()) return nullptr;
    EXPECT_EQ(head->code, 200);
    EXPECT_TRUE(head->chunked());
    return std::make_unique<WatchReader>(*std::move(connection));
  }

  // Reads the next event as {type, object}.
  static Json NextEvent(WatchReader& reader, absl::Duration timeout = kTimeout) {
    auto line = reader.NextLine(timeout);
    EXPECT_THAT(line, IsOk());
    if (!line.ok()) return Json();
    return ParseOrDie(*line);
  }

  static std::string Type(const Json& event) { return GetString(event, {"type"}); }
  static std::string Name(const Json& event) {
    return GetString(event, {"object", "metadata", "name"});
  }

  std::unique_ptr<KubeTestServer> server_;
};

inline void ExpectStatus(const Reply& reply, int code, const std::string& reason) {
  EXPECT_EQ(reply.code, code) << reply.raw;
  EXPECT_EQ(GetString(reply.body, {"kind"}), "Status") << reply.raw;
  EXPECT_EQ(GetString(reply.body, {"apiVersion"}), "v1");
  EXPECT_EQ(GetString(reply.body, {"status"}), "Failure");
  EXPECT_EQ(GetString(reply.body, {"reason"}), reason) << reply.raw;
  const Json* body_code = Find(reply.body, "code");
  ASSERT_NE(body_code, nullptr);
  EXPECT_EQ(body_code->get<int64_t>(), code);
  EXPECT_NE(Find(reply.body, "metadata"), nullptr);
  EXPECT_FALSE(GetString(reply.body, {"message"}).empty());
}

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_KUBE_TEST_SERVER_FIXTURE_H_
