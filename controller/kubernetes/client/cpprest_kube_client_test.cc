#include "controller/kubernetes/client/cpprest_kube_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pplx/pplxtasks.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "controller/kubernetes/client/kube_errors.h"
#include "controller/kubernetes/client/reflector.h"
#include "controller/kubernetes/client/watch_stream.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller::kube {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// ---------------------------------------------------------------------------
// NDJSON splitting and event parsing.

std::vector<std::string> FeedAll(NdjsonSplitter& splitter, const std::vector<std::string>& reads) {
  std::vector<std::string> lines;
  for (const std::string& read : reads) EXPECT_THAT(splitter.Feed(read, lines), IsOk());
  return lines;
}

TEST(NdjsonSplitterTest, SplitsSeveralEventsInOneRead) {
  NdjsonSplitter splitter;
  EXPECT_THAT(FeedAll(splitter, {"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"}),
              ElementsAre("{\"a\":1}", "{\"b\":2}", "{\"c\":3}"));
  EXPECT_EQ(splitter.pending(), "");
}

TEST(NdjsonSplitterTest, JoinsAnEventSpanningReads) {
  NdjsonSplitter splitter;
  EXPECT_THAT(FeedAll(splitter, {"{\"type\":\"ADD", "ED\",\"obj", "ect\":{}}\n{\"x\"", ":1}\n"}),
              ElementsAre("{\"type\":\"ADDED\",\"object\":{}}", "{\"x\":1}"));
}

TEST(NdjsonSplitterTest, HandlesByteByByteReadsCrlfAndBlankLines) {
  NdjsonSplitter splitter;
  const std::string stream = "{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\"";
  std::vector<std::string> reads;
  for (char c : stream) reads.emplace_back(1, c);
  EXPECT_THAT(FeedAll(splitter, reads), ElementsAre("{\"a\":1}", "{\"b\":2}"));
  EXPECT_EQ(splitter.pending(), "{\"c\"");
}

TEST(NdjsonSplitterTest, RejectsALineOverTheLimit) {
  NdjsonSplitter splitter(/*max_line_bytes=*/8);
  std::vector<std::string> lines;
  EXPECT_THAT(splitter.Feed("0123456789", lines), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST(ParseWatchEventTest, ParsesEachType) {
  const std::vector<std::pair<std::string, WatchEvent::Type>> cases = {
      {"ADDED", WatchEvent::Type::kAdded},
      {"MODIFIED", WatchEvent::Type::kModified},
      {"DELETED", WatchEvent::Type::kDeleted},
      {"BOOKMARK", WatchEvent::Type::kBookmark},
      {"ERROR", WatchEvent::Type::kError}};
  for (const auto& [name, type] : cases) {
    absl::StatusOr<WatchEvent> event = ParseWatchEvent(
        absl::StrCat(R"({"type":")", name, R"(","object":{"metadata":{"resourceVersion":"7"}}})"),
        "WATCH x");
    ASSERT_THAT(event, IsOk()) << name;
    EXPECT_EQ(event->type, type);
    EXPECT_EQ(ResourceVersionOf(event->object), "7");
  }
}

TEST(ParseWatchEventTest, RejectsMalformedEvents) {
  EXPECT_THAT(ParseWatchEvent(R"({"type":"ADDED"})", "WATCH x"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("without an object")));
  EXPECT_THAT(ParseWatchEvent(R"({"type":"RENAMED","object":{}})", "WATCH x"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("RENAMED")));
  EXPECT_THAT(ParseWatchEvent(R"({"type":"ADDED","object":{"metadata")", "WATCH x"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("WATCH x")));
}

// ---------------------------------------------------------------------------
// HTTP error mapping.

std::string StatusBody(int code, const std::string& reason, const std::string& message,
                       const std::string& details = "") {
  return absl::StrCat(R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":)", code,
                      R"(,"reason":")", reason, R"(","message":")", message, R"(")",
                      details.empty() ? "" : absl::StrCat(",\"details\":", details), "}");
}

TEST(KubeErrorsTest, MapsHttpCodesAndKeepsTheStatusMessage) {
  EXPECT_THAT(
      StatusFromHttpResponse("GET /x", 404,
                             StatusBody(404, "NotFound", "xdsresources \\\"web\\\" not found"), ""),
      StatusIs(absl::StatusCode::kNotFound,
               AllOf(HasSubstr("GET /x"), HasSubstr("404"), HasSubstr("\"web\" not found"))));
  EXPECT_THAT(
      StatusFromHttpResponse("POST /x", 409, StatusBody(409, "AlreadyExists", "exists"), ""),
      StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(StatusFromHttpResponse("POST /x", 409, "", "", /*is_create=*/true),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(StatusFromHttpResponse("PUT /x", 409, StatusBody(409, "Conflict", "modified"), ""),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("Conflict")));
  EXPECT_THAT(StatusFromHttpResponse("PUT /x", 422, StatusBody(422, "Invalid", "bad"), ""),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(StatusFromHttpResponse("GET /x", 401, "Unauthorized", ""),
              StatusIs(absl::StatusCode::kUnauthenticated));
  EXPECT_THAT(StatusFromHttpResponse("GET /x", 403, "", ""),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(StatusFromHttpResponse("GET /x", 503, "", ""),
              StatusIs(absl::StatusCode::kUnavailable));

  const absl::Status expired =
      StatusFromHttpResponse("LIST /x", 410, StatusBody(410, "Expired", "continue too old"), "");
  EXPECT_THAT(expired, StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("Expired")));
  EXPECT_TRUE(IsResourceExpired(expired));
  EXPECT_THAT(StatusFromHttpResponse("LIST /x", 410, "", ""),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("Gone")));

  const absl::Status too_large = StatusFromHttpResponse(
      "LIST /x", 504,
      StatusBody(504, "Timeout", "Too large resource version",
                 R"({"causes":[{"reason":"ResourceVersionTooLarge","message":"x"}]})"),
      "");
  EXPECT_THAT(too_large, StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_TRUE(IsTooLargeResourceVersion(too_large));
  EXPECT_THAT(StatusFromHttpResponse("LIST /x", 504, StatusBody(504, "Timeout", "slow"), ""),
              StatusIs(absl::StatusCode::kUnavailable));

  const absl::Status throttled = StatusFromHttpResponse("WATCH /x", 429, "", "7");
  EXPECT_THAT(throttled,
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("retry after 7s")));
  EXPECT_TRUE(IsTooManyRequests(throttled));
  EXPECT_EQ(GetApiErrorInfo(throttled)->retry_after, absl::Seconds(7));

  const absl::Status internal = StatusFromHttpResponse("WATCH /x", 500, "", "");
  EXPECT_THAT(internal, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(IsInternalError(internal));
}

TEST(KubeErrorsTest, MapsWatchErrorEventsAndConnectionErrors) {
  absl::StatusOr<YAML::Node> status =
      ParseDocumentText(StatusBody(410, "Expired", "too old resource version: 5 (10)"), "test");
  ASSERT_THAT(status, IsOk());
  const absl::Status expired = StatusFromStatusObject("WATCH /x", *status);
  EXPECT_THAT(expired,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("Expired"), HasSubstr("too old resource version"))));
  EXPECT_TRUE(IsResourceExpired(expired));

  const absl::Status refused = ConnectionError("WATCH /x", "Connection refused", /*refused=*/true);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(IsConnectionRefused(refused));
  EXPECT_FALSE(IsConnectionRefused(ConnectionError("WATCH /x", "reset", /*refused=*/false)));
  EXPECT_FALSE(IsResourceExpired(absl::FailedPreconditionError("Expired")));
}

// ---------------------------------------------------------------------------
// A scripted HTTP/1.1 server on 127.0.0.1 (port 0).

struct HttpRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // Lower-case names.
  std::string body;
};

class Connection {
 public:
  explicit Connection(int fd) : fd_(fd) {}

  void Send(absl::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent <= 0) return;
      bytes.remove_prefix(static_cast<size_t>(sent));
    }
  }
  void Respond(int code, absl::string_view body,
               const std::vector<std::string>& extra_headers = {}) {
    std::string head = absl::StrCat("HTTP/1.1 ", code, " X\r\nContent-Type: application/json\r\n",
                                    "Connection: close\r\nContent-Length: ", body.size(), "\r\n");
    for (const std::string& header : extra_headers) absl::StrAppend(&head, header, "\r\n");
    Send(absl::StrCat(head, "\r\n", body));
  }
  void StartChunked() {
    Send(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        "Transfer-Encoding: chunked\r\n\r\n");
  }
  void Chunk(absl::string_view data) {
    char size[32];
    std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
    Send(absl::StrCat(size, data, "\r\n"));
  }
  void EndChunks() { Send("0\r\n\r\n"); }

 private:
  const int fd_;
};

class ScriptedServer {
 public:
  using Handler = std::function<void(const HttpRequest&, Connection&)>;

  explicit ScriptedServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listen_fd_, 16), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~ScriptedServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    ::close(listen_fd_);
    for (std::thread& thread : connections_) thread.join();
  }

  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }

  std::vector<HttpRequest> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

 private:
  void AcceptLoop() {
    while (true) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      connections_.emplace_back([this, fd] {
        std::optional<HttpRequest> request = ReadRequest(fd);
        if (request.has_value()) {
          {
            absl::MutexLock lock(&mu_);
            requests_.push_back(*request);
          }
          Connection connection(fd);
          handler_(*request, connection);
        }
        ::shutdown(fd, SHUT_RDWR);
        ::close(fd);
      });
    }
  }

  static std::optional<HttpRequest> ReadRequest(int fd) {
    std::string data;
    char buffer[4096];
    size_t header_end = std::string::npos;
    while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
      if (got <= 0) return std::nullopt;
      data.append(buffer, static_cast<size_t>(got));
    }
    HttpRequest request;
    std::vector<std::string> lines = absl::StrSplit(data.substr(0, header_end), "\r\n");
    std::vector<std::string> first = absl::StrSplit(lines[0], ' ');
    request.method = first[0];
    request.target = first.size() > 1 ? first[1] : "";
    for (size_t i = 1; i < lines.size(); ++i) {
      const size_t colon = lines[i].find(':');
      if (colon == std::string::npos) continue;
      request.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
          std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    }
    size_t length = 0;
    if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
      (void)absl::SimpleAtoi(it->second, &length);
    }
    request.body = data.substr(header_end + 4);
    while (request.body.size() < length) {
      const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
      if (got <= 0) break;
      request.body.append(buffer, static_cast<size_t>(got));
    }
    return request;
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> connections_;  // Acceptor thread only, then the destructor.
  mutable absl::Mutex mu_;
  std::vector<HttpRequest> requests_ ABSL_GUARDED_BY(mu_);
};

// Collects watch callbacks; tests wait on it.
class WatchLog {
 public:
  std::function<void(WatchEvent)> OnEvent() {
    return [this](WatchEvent event) {
      absl::MutexLock lock(&mu_);
      events_.push_back(std::move(event));
    };
  }
  std::function<void(absl::Status)> OnEnd() {
    return [this](absl::Status status) {
      absl::MutexLock lock(&mu_);
      end_ = std::move(status);
    };
  }
  bool WaitForEvents(size_t count) {
    absl::MutexLock lock(&mu_);
    auto done = [this, count]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return events_.size() >= count; };
    return mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(20));
  }
  std::optional<absl::Status> WaitForEnd() {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return end_.has_value(); };
    mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(20));
    return end_;
  }
  std::vector<WatchEvent> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  std::optional<absl::Status> end() {
    absl::MutexLock lock(&mu_);
    return end_;
  }

 private:
  absl::Mutex mu_;
  std::vector<WatchEvent> events_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> end_ ABSL_GUARDED_BY(mu_);
};

std::string Event(const std::string& type, const std::string& name, int resource_version) {
  return absl::StrCat(
      R"({"type":")", type, R"(","object":{"kind":"XdsResource","metadata":{"name":")", name,
      R"(","namespace":"demo","resourceVersion":")", resource_version, R"("}}})", "\n");
}

std::unique_ptr<CpprestKubeClient> NewClient(const std::string& url,
                                             const std::string& token = "t0k3n",
                                             const std::string& token_file = "") {
  ClusterConfig config;
  config.server = url;
  config.token = token;
  config.token_file = token_file;
  absl::StatusOr<std::unique_ptr<CpprestKubeClient>> client = CpprestKubeClient::Create(config);
  EXPECT_THAT(client, IsOk());
  return client.ok() ? *std::move(client) : nullptr;
}

constexpr char kCollection[] = "/apis/facet.dev/v1alpha1/xdsresources";

// Watches kCollection until the watch ends; returns its final status.
absl::Status RunWatch(KubeClient& client, WatchLog& log, const WatchOptions& options = {}) {
  absl::StatusOr<std::unique_ptr<WatchHandle>> handle =
      client.Watch(kCollection, options, log.OnEvent(), log.OnEnd());
  if (!handle.ok()) return handle.status();
  std::optional<absl::Status> end = log.WaitForEnd();
  if (!end.has_value()) return absl::DeadlineExceededError("the watch did not end");
  return *end;
}

TEST(CpprestKubeClientTest, ListSendsQueryAndTokenAndFillsKinds) {
  ScriptedServer server([](const HttpRequest&, Connection& connection) {
    connection.Respond(200, R"({"kind":"XdsResourceList","apiVersion":"facet.dev/v1alpha1",
      "metadata":{"resourceVersion":"42","continue":"next=="},
      "items":[{"metadata":{"name":"a","namespace":"demo","resourceVersion":"40"}}]})");
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url());
  ListOptions options;
  options.resource_version = "0";
  options.limit = 500;
  options.continue_token = "tok=en";
  absl::StatusOr<ListResult> list = client->List(kCollection, options);
  ASSERT_THAT(list, IsOk());
  EXPECT_EQ(list->resource_version, "42");
  EXPECT_EQ(list->continue_token, "next==");
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(StringAt(list->items[0], {"kind"}), "XdsResource");
  EXPECT_EQ(StringAt(list->items[0], {"apiVersion"}), "facet.dev/v1alpha1");

  const std::vector<HttpRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].target,
            absl::StrCat(kCollection, "?resourceVersion=0&limit=500&continue=tok%3Den"));
  EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer t0k3n");
  EXPECT_EQ(requests[0].headers.count("accept-encoding"), 0u);
}

TEST(CpprestKubeClientTest, SendsLabelSelectorsAndDeletes) {
  ScriptedServer server([](const HttpRequest& request, Connection& connection) {
    if (request.method == "DELETE") {
      if (absl::EndsWith(request.target, "/gone")) {
        connection.Respond(404, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
          "reason":"NotFound","code":404,"message":"\"gone\" not found"})");
      } else {
        connection.Respond(200, R"({"kind":"Status","apiVersion":"v1","status":"Success"})");
      }
      return;
    }
    connection.Respond(200, R"({"kind":"XdsResourceList","metadata":{"resourceVersion":"7"},
      "items":[]})");
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url());
  ListOptions options;
  options.label_selector = "kubernetes.io/service-name=web";
  ASSERT_THAT(client->List(kCollection, options), IsOk());
  EXPECT_THAT(client->Delete(absl::StrCat(kCollection, "/a")), IsOk());
  EXPECT_THAT(client->Delete(absl::StrCat(kCollection, "/gone")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("not found")));
  const std::vector<HttpRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].target,
            absl::StrCat(kCollection, "?labelSelector=kubernetes.io/service-name%3Dweb"));
  EXPECT_EQ(requests[1].method, "DELETE");
  EXPECT_EQ(requests[1].target, absl::StrCat(kCollection, "/a"));
}

TEST(CpprestKubeClientTest, RereadsTheTokenFileAndRetriesOnceAfter401) {
  const std::string token_file = absl::StrCat(::testing::TempDir(), "/cpprest_token");
  std::ofstream(token_file) << "old-token";
  ScriptedServer server([&](const HttpRequest& request, Connection& connection) {
    if (request.headers.at("authorization") == "Bearer old-token") {
      std::ofstream(token_file) << "new-token";  // Rotated meanwhile.
      connection.Respond(401, StatusBody(401, "Unauthorized", "Unauthorized"));
      return;
    }
    connection.Respond(200, R"({"kind":"XdsResource","metadata":{"name":"web"}})");
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url(), "", token_file);
  absl::StatusOr<YAML::Node> object = client->Get(absl::StrCat(kCollection, "/web"));
  ASSERT_THAT(object, IsOk());
  EXPECT_EQ(StringAt(*object, {"metadata", "name"}), "web");
  const std::vector<HttpRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].headers.at("authorization"), "Bearer new-token");
}

TEST(CpprestKubeClientTest, MapsErrorRepliesWithTheirMessages) {
  ScriptedServer server([](const HttpRequest& request, Connection& connection) {
    if (request.method == "GET") {
      connection.Respond(404, StatusBody(404, "NotFound", "xdsresources.facet.dev web not found"));
    } else if (request.method == "POST") {
      connection.Respond(409, StatusBody(409, "AlreadyExists", "web already exists"));
    } else {
      connection.Respond(409, StatusBody(409, "Conflict", "the object has been modified"));
    }
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url());
  EXPECT_THAT(client->Get(absl::StrCat(kCollection, "/web")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("web not found")));
  EXPECT_THAT(client->Create(kCollection, R"({"metadata":{"name":"web"}})"),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("web already exists")));
  EXPECT_THAT(client->Update(absl::StrCat(kCollection, "/web/status"), "{}"),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("has been modified")));
  const std::vector<HttpRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].body, R"({"metadata":{"name":"web"}})");
  EXPECT_EQ(requests[1].headers.at("content-type"), "application/json");
  EXPECT_EQ(requests[2].method, "PUT");
}

TEST(CpprestKubeClientTest, WatchStreamsEventsSplitAndCoalescedAcrossChunks) {
  WatchLog log;
  absl::Notification first_seen;
  ScriptedServer server([&](const HttpRequest&, Connection& connection) {
    const std::string second = Event("MODIFIED", "b", 12);
    connection.StartChunked();
    connection.Chunk(Event("ADDED", "a", 11) + second.substr(0, 20));
    // Streaming, not buffered until the end: the first event arrives alone.
    log.WaitForEvents(1);
    connection.Chunk(
        second.substr(20) + Event("DELETED", "a", 13) +
        R"({"type":"BOOKMARK","object":{"kind":"XdsResource","metadata":{"resourceVersion":"20"}}})" +
        "\n");
    connection.EndChunks();
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url());
  WatchOptions options;
  options.resource_version = "10";
  EXPECT_THAT(RunWatch(*client, log, options), IsOk());
  std::vector<std::string> seen;
  for (const WatchEvent& event : log.events()) {
    seen.push_back(
        absl::StrCat(WatchEventTypeName(event.type), " ", ResourceVersionOf(event.object)));
  }
  EXPECT_THAT(seen, ElementsAre("ADDED 11", "MODIFIED 12", "DELETED 13", "BOOKMARK 20"));
  const std::vector<HttpRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target,
            absl::StrCat(kCollection, "?watch=true&resourceVersion=10&allowWatchBookmarks=true",
                         "&timeoutSeconds=300"));
}

TEST(CpprestKubeClientTest, WatchDeliversErrorEventThenCleanEnd) {
  WatchLog log;
  ScriptedServer server([](const HttpRequest&, Connection& connection) {
    connection.StartChunked();
    connection.Chunk(absl::StrCat(R"({"type":"ERROR","object":)",
                                  StatusBody(410, "Expired", "too old resource version: 1 (5)"),
                                  "}\n"));
    connection.EndChunks();
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url());
  ASSERT_THAT(RunWatch(*client, log), IsOk());
  const std::vector<WatchEvent> events = log.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::kError);
  EXPECT_TRUE(IsResourceExpired(StatusFromStatusObject("WATCH", events[0].object)));
}

TEST(CpprestKubeClientTest, WatchRetriesOnceWithARereadTokenAfter401) {
  const std::string token_file = absl::StrCat(::testing::TempDir(), "/cpprest_watch_token");
  std::ofstream(token_file) << "old-token";
  ScriptedServer server([&](const HttpRequest& request, Connection& connection) {
    if (request.headers.at("authorization") == "Bearer old-token") {
      std::ofstream(token_file) << "new-token";
      connection.Respond(401, StatusBody(401, "Unauthorized", "Unauthorized"));
      return;
    }
    connection.StartChunked();
    connection.Chunk(Event("ADDED", "a", 11));
    connection.EndChunks();
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url(), "", token_file);
  WatchLog log;
  ASSERT_THAT(RunWatch(*client, log), IsOk());
  EXPECT_EQ(log.events().size(), 1u);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(CpprestKubeClientTest, WatchStartErrorsEndTheWatch) {
  ScriptedServer server([](const HttpRequest&, Connection& connection) {
    connection.Respond(429, StatusBody(429, "TooManyRequests", "slow down"), {"Retry-After: 7"});
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url());
  WatchLog log;
  const absl::Status end = RunWatch(*client, log);
  EXPECT_THAT(end, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("slow down")));
  EXPECT_TRUE(IsTooManyRequests(end));
  EXPECT_EQ(GetApiErrorInfo(end)->retry_after, absl::Seconds(7));
  EXPECT_THAT(log.events(), IsEmpty());
}

TEST(CpprestKubeClientTest, WatchReportsConnectionRefused) {
  // A port that was just free: nothing listens on it.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  std::unique_ptr<CpprestKubeClient> client =
      NewClient(absl::StrCat("http://127.0.0.1:", ntohs(addr.sin_port)));
  WatchLog log;
  const absl::Status end = RunWatch(*client, log);
  EXPECT_THAT(end, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(IsConnectionRefused(end)) << end;
}

TEST(CpprestKubeClientTest, WatchCutInsideAnEventIsABrokenStream) {
  ScriptedServer server([](const HttpRequest&, Connection& connection) {
    connection.StartChunked();
    const std::string event = Event("ADDED", "a", 11);
    connection.Chunk(event + event.substr(0, 15));
    // Closed without the last chunk.
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url());
  WatchLog log;
  const absl::Status end = RunWatch(*client, log);
  EXPECT_THAT(end, Not(IsOk()));
  EXPECT_EQ(log.events().size(), 1u);
}

TEST(CpprestKubeClientTest, DestroyingTheHandleCancelsAQuietWatch) {
  absl::Notification release;
  ScriptedServer server([&](const HttpRequest&, Connection& connection) {
    connection.StartChunked();
    connection.Chunk(Event("ADDED", "a", 11));
    release.WaitForNotification();  // Holds the connection open.
    connection.Chunk(Event("ADDED", "b", 12));
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url());
  WatchLog log;
  absl::StatusOr<std::unique_ptr<WatchHandle>> handle =
      client->Watch(kCollection, WatchOptions{}, log.OnEvent(), log.OnEnd());
  ASSERT_THAT(handle, IsOk());
  ASSERT_TRUE(log.WaitForEvents(1));
  handle->reset();  // Returns without waiting for the server.
  // The cancelled stream's read chain ends while the server still holds the
  // connection open: nothing is left reading when the process exits.
  EXPECT_TRUE(client->AwaitWatchStreamsEnded(absl::Seconds(10)));
  EXPECT_EQ(client->watch_streams(), 0);
  release.Notify();
  EXPECT_EQ(log.events().size(), 1u);
  EXPECT_FALSE(log.end().has_value());
}

TEST(CpprestKubeClientTest, DestructionWaitsForContinuationsAlreadyScheduled) {
  // cpprestsdk completes a cancelled response in continuations of its own,
  // after the watch's last one; a process exiting while one is queued leaves
  // its task graph behind. A continuation that is slow to run stands in for it.
  absl::Notification server_done;
  ScriptedServer server([&](const HttpRequest&, Connection& connection) {
    connection.StartChunked();
    connection.Chunk(Event("ADDED", "a", 11));
    server_done.WaitForNotificationWithTimeout(absl::Seconds(10));
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url());
  ASSERT_TRUE(CpprestKubeClient::tracking_continuations());
  WatchLog log;
  absl::StatusOr<std::unique_ptr<WatchHandle>> handle =
      client->Watch(kCollection, WatchOptions{}, log.OnEvent(), log.OnEnd());
  ASSERT_THAT(handle, IsOk());
  ASSERT_TRUE(log.WaitForEvents(1));

  absl::Notification release;
  std::atomic<bool> ran{false};
  pplx::create_task([&] {
    release.WaitForNotification();
    ran = true;
  });
  EXPECT_GE(CpprestKubeClient::continuations_in_flight(), 1);
  EXPECT_FALSE(CpprestKubeClient::AwaitContinuationsRun(absl::Milliseconds(50)));
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(200));
    release.Notify();
  });
  handle->reset();
  client.reset();  // Returns once the continuation has run.
  EXPECT_TRUE(ran);
  EXPECT_EQ(CpprestKubeClient::continuations_in_flight(), 0);
  releaser.join();
  server_done.Notify();
}

// A self-signed test certificate (no key needed to trust it as a CA).
constexpr char kTestCaPem[] = R"(-----BEGIN CERTIFICATE-----
MIIBgTCCASegAwIBAgIUZrh6KxEuWGHacC+zUn/r3zM9SaowCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKZmFjZXQtdGVzdDAgFw0yNjExMjIwNjEyMjRaGA8yMTI2MTAy
OTA2MTIyNFowFTETMBEGA1UEAwwKZmFjZXQtdGVzdDBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABM46JdWTVI2TAfW+0ueccqbYwn3dD5uONPPf+533msRa+J7yxXY1
QhZkfqYJSF7CNR6PPlxWy3fY9Izx7j/h4I6jUzBRMB0GA1UdDgQWBBSAl8nI0et3
CiVq8dDSe9kUTkiDZzAfBgNVHSMEGDAWgBSAl8nI0et3CiVq8dDSe9kUTkiDZzAP
BgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQCCQdkIggO8MTHLNZQ0
u1y48bJrIkmWO1tR8hZBDyIaHQIgZ8FJt5M+OGvbahT8+m6axkjvuZYSlS8Rbvdw
UUn/px4=
-----END CERTIFICATE-----
)";

// ---------------------------------------------------------------------------
// A Reflector over the real client: what the API server sends is bounded.

// An object of kCollection whose `spec` nests lists so that it is `depth`
// levels deep.
std::string ObjectOfDepth(const std::string& name, int resource_version, int depth) {
  return absl::StrCat(R"({"kind":"XdsResource","metadata":{"name":")", name,
                      R"(","namespace":"demo","resourceVersion":")", resource_version,
                      R"("},"spec":)", std::string(depth - 1, '['), std::string(depth - 1, ']'),
                      "}");
}

TEST(CpprestKubeClientTest, ReflectorKeepsItsObjectsWhenAListOrWatchIsOverTheBounds) {
  // The first list is good. Then a watch event and every later list carry
  // an object nested more than 100 levels deep (and the lists lack "b").
  absl::Mutex mu;
  int lists = 0;
  int watches = 0;
  ScriptedServer server([&](const HttpRequest& request, Connection& connection) {
    const bool watch = absl::StrContains(request.target, "watch=true");
    int count = 0;
    {
      absl::MutexLock lock(&mu);
      count = watch ? ++watches : ++lists;
    }
    if (watch) {
      connection.StartChunked();
      connection.Chunk(absl::StrCat(R"({"type":"MODIFIED","object":)",
                                    ObjectOfDepth("a", 12, 101), "}\n"));
      connection.EndChunks();
      return;
    }
    const std::string items = count == 1 ? absl::StrCat(ObjectOfDepth("a", 10, 100), ",",
                                                        ObjectOfDepth("b", 11, 2))
                                         : ObjectOfDepth("a", 13, 101);
    connection.Respond(200, absl::StrCat(R"({"kind":"XdsResourceList","apiVersion":"v1",)",
                                         R"("metadata":{"resourceVersion":")",
                                         count == 1 ? 11 : 13, R"("},"items":[)", items, "]}"));
  });
  std::unique_ptr<CpprestKubeClient> client = NewClient(server.url());
  Reflector::Options options;
  options.collection_path = kCollection;
  options.backoff.initial = absl::Milliseconds(1);
  options.backoff.cap = absl::Milliseconds(5);
  options.internal_error_retry = absl::ZeroDuration();
  Reflector reflector(*client, options);
  reflector.Start();
  {
    // Two refused relists (or, were the bounds missing, three watches).
    absl::MutexLock lock(&mu);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return lists >= 3 || watches >= 3; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(30)));
  }
  reflector.Stop();
  EXPECT_TRUE(reflector.has_synced());
  EXPECT_GE(reflector.counters().watch_errors, 2);
  EXPECT_EQ(reflector.last_sync_resource_version(), "11");
  std::shared_ptr<const ObjectCache::Objects> objects = reflector.Snapshot();
  std::vector<std::string> held;
  for (const auto& [key, object] : *objects) {
    held.push_back(absl::StrCat(key, "@", ResourceVersionOf(object)));
  }
  EXPECT_THAT(held, ElementsAre("demo/a@10", "demo/b@11"));
}

TEST(CpprestKubeClientTest, CreateAcceptsAValidCaAndRejectsABadClientKey) {
  ClusterConfig config;
  config.server = "https://example:6443";
  config.ca_pem = kTestCaPem;
  EXPECT_THAT(CpprestKubeClient::Create(config), IsOk());
  config.client_cert_pem = kTestCaPem;
  config.client_key_pem = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
  EXPECT_THAT(CpprestKubeClient::Create(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("client key")));
}

TEST(CpprestKubeClientTest, CreateRejectsBadUrlsAndPem) {
  ClusterConfig config;
  config.server = "ftp://example";
  EXPECT_THAT(CpprestKubeClient::Create(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ftp://example")));
  config.server = "https://example";
  config.ca_pem = "-----BEGIN CERTIFICATE-----\nnot a cert\n-----END CERTIFICATE-----\n";
  EXPECT_THAT(CpprestKubeClient::Create(config),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("certificate authority")));
}

}  // namespace
}  // namespace facet::controller::kube
