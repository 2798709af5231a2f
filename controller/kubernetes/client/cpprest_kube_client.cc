#include "controller/kubernetes/client/cpprest_kube_client.h"

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>
#include <cpprest/uri_builder.h>
#include <openssl/ssl.h>
#include <pplx/threadpool.h>

#include <algorithm>
#include <boost/asio/ssl.hpp>
#include <cerrno>
#include <chrono>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/kubernetes/client/kube_errors.h"
#include "controller/kubernetes/client/watch_stream.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "xds_server/common/status_macros.h"

namespace facet::controller::kube {

namespace http = web::http;
namespace http_client = web::http::client;

namespace {

constexpr size_t kReadBufferBytes = 64 * 1024;

std::chrono::milliseconds ToChrono(absl::Duration duration) {
  return std::chrono::milliseconds(absl::ToInt64Milliseconds(duration));
}

// Loads the config's TLS material into `ctx`; trusts ca_pem only when set.
boost::system::error_code ConfigureTls(const ClusterConfig& config, boost::asio::ssl::context& ctx,
                                       std::string* failed_field) {
  boost::system::error_code error;
  if (!config.ca_pem.empty()) {
    SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
    ctx.add_certificate_authority(boost::asio::buffer(config.ca_pem), error);
    if (error) {
      *failed_field = "certificate authority (ca_pem)";
      return error;
    }
  }
  if (!config.client_cert_pem.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(config.client_cert_pem), error);
    if (error) {
      *failed_field = "client certificate";
      return error;
    }
    ctx.use_private_key(boost::asio::buffer(config.client_key_pem), boost::asio::ssl::context::pem,
                        error);
    if (error) {
      *failed_field = "client key";
      return error;
    }
  }
  return error;
}

http_client::http_client_config MakeHttpConfig(const ClusterConfig& config,
                                               absl::Duration timeout) {
  http_client::http_client_config http_config;
  http_config.set_timeout(ToChrono(timeout));
  http_config.set_request_compressed_response(false);
  http_config.set_validate_certificates(!config.insecure_skip_tls_verify);
  http_config.set_ssl_context_callback([config](boost::asio::ssl::context& ctx) {
    std::string ignored;
    ConfigureTls(config, ctx, &ignored);  // Checked when the client was created.
  });
  return http_config;
}

absl::Status StatusFromException(absl::string_view what, const std::exception& e) {
  if (const auto* http_error = dynamic_cast<const http::http_exception*>(&e)) {
    // cpprestsdk's asio client reports a refused connect as EHOSTUNREACH.
    const int code = http_error->error_code().value();
    const bool refused = code == ECONNREFUSED || code == EHOSTUNREACH;
    return ConnectionError(what, absl::StrCat(http_error->what(), " (", code, ")"), refused);
  }
  if (dynamic_cast<const pplx::task_canceled*>(&e) != nullptr) {
    return absl::CancelledError(absl::StrCat(what, ": cancelled"));
  }
  return ConnectionError(what, e.what(), /*refused=*/false);
}

// Returns the list's items with kind and apiVersion filled in from the list
// (the API server omits them for built-in types).
absl::StatusOr<ListResult> ParseList(absl::string_view what, const std::string& body) {
  ASSIGN_OR_RETURN(YAML::Node list, ParseDocumentText(body, what, ListLimits()));
  ListResult result;
  result.resource_version = StringAt(list, {"metadata", "resourceVersion"});
  result.continue_token = StringAt(list, {"metadata", "continue"});
  std::string item_kind = StringAt(list, {"kind"});
  if (absl::EndsWith(item_kind, "List")) item_kind.resize(item_kind.size() - 4);
  const std::string api_version = StringAt(list, {"apiVersion"});
  const YAML::Node items = Field(list, "items");
  if (items.IsDefined() && !items.IsNull()) {
    if (!items.IsSequence()) {
      return absl::InternalError(absl::StrCat(what, ": field \"items\" is not a list"));
    }
    for (YAML::Node item : items) {
      if (!item.IsMap()) return absl::InternalError(absl::StrCat(what, ": an item is not a map"));
      if (StringAt(item, {"kind"}).empty() && !item_kind.empty()) item["kind"] = item_kind;
      if (StringAt(item, {"apiVersion"}).empty() && !api_version.empty()) {
        item["apiVersion"] = api_version;
      }
      result.items.push_back(item);
    }
  }
  return result;
}

// pplx's ambient scheduler, counting the continuations scheduled and not yet
// run. cpprestsdk finishes a response (closing its body, setting its
// completion event) in continuations of its own after the last one Facet
// chained has run, and a connection closed under a request completes it the
// same way; a process exiting while one is queued leaves that task graph
// behind (the thread pool drops it unrun, and LeakSanitizer reports it).
// Destroying a client waits until none is queued or running and none was
// scheduled for a short quiet period.
class TrackingScheduler final : public pplx::scheduler_interface {
 public:
  void schedule(pplx::TaskProc_t proc, void* param) override {
    {
      absl::MutexLock lock(&mu_);
      ++in_flight_;
      ++scheduled_;
    }
    try {
      crossplat::threadpool::shared_instance().service().post([this, proc, param] {
        proc(param);
        absl::MutexLock lock(&mu_);
        --in_flight_;
      });
    } catch (...) {
      absl::MutexLock lock(&mu_);
      --in_flight_;
      throw;
    }
  }

  int in_flight() const {
    absl::MutexLock lock(&mu_);
    return in_flight_;
  }

  // Waits until nothing is in flight and nothing was scheduled for `quiet`;
  // false when `timeout` passed first.
  bool AwaitQuiet(absl::Duration timeout, absl::Duration quiet) const {
    const absl::Time deadline = absl::Now() + timeout;
    absl::MutexLock lock(&mu_);
    while (true) {
      if (!mu_.AwaitWithDeadline(
              absl::Condition(
                  +[](const int* in_flight) { return *in_flight == 0; }, &in_flight_),
              deadline)) {
        return false;
      }
      const Seen seen{&scheduled_, scheduled_};
      const bool more = mu_.AwaitWithDeadline(
          absl::Condition(
              +[](const Seen* s) { return *s->scheduled != s->value; }, &seen),
          std::min(absl::Now() + quiet, deadline));
      if (!more) return true;
      if (absl::Now() >= deadline) return false;
    }
  }

 private:
  struct Seen {
    const uint64_t* scheduled;
    uint64_t value;
  };

  mutable absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t scheduled_ ABSL_GUARDED_BY(mu_) = 0;
};

constexpr absl::Duration kContinuationsQuiet = absl::Milliseconds(50);

// Installed before the first request of the process; null when pplx's
// scheduler was already in use (it can be set only once, before first use).
TrackingScheduler* InstallTrackingScheduler() {
  static TrackingScheduler* installed = []() -> TrackingScheduler* {
    auto scheduler = std::make_shared<TrackingScheduler>();
    try {
      pplx::set_ambient_scheduler(scheduler);
    } catch (const std::exception&) {
      return nullptr;
    }
    return scheduler.get();  // The ambient scheduler lives as long as the process.
  }();
  return installed;
}

}  // namespace

struct CpprestKubeClient::State {
  State(ClusterConfig config_in, Options options_in)
      : config(std::move(config_in)),
        options(std::move(options_in)),
        tokens(config, options.clock != nullptr ? *options.clock : RealClock::Get()),
        client(utility::conversions::to_string_t(config.server),
               MakeHttpConfig(config, options.request_timeout)) {}

  // Returns a request with the standard headers and the current token.
  absl::StatusOr<http::http_request> NewRequest(const http::method& method,
                                                const std::string& path_and_query) {
    ASSIGN_OR_RETURN(std::string token, tokens.Token());
    http::http_request request(method);
    request.set_request_uri(utility::conversions::to_string_t(path_and_query));
    http::http_headers& headers = request.headers();
    headers.add(http::header_names::accept, "application/json");
    headers.add(http::header_names::user_agent, options.user_agent);
    if (!token.empty()) headers.add(http::header_names::authorization, "Bearer " + token);
    if (!config.tls_server_name.empty())
      headers.add(http::header_names::host, config.tls_server_name);
    return request;
  }

  struct Reply {
    int code = 0;
    std::string body;
    std::string retry_after;
  };

  // Sends a request and reads the whole reply; on 401 invalidates the token
  // and sends it once more.
  absl::StatusOr<Reply> Send(const http::method& method, const std::string& path_and_query,
                             const std::string& json, absl::string_view what) {
    for (int attempt = 0;; ++attempt) {
      ASSIGN_OR_RETURN(http::http_request request, NewRequest(method, path_and_query));
      if (!json.empty()) {
        // As bytes: cpprestsdk's set_body(std::string) reads its string buffer, a
        // streambuf<char>, through a streambuf<unsigned char> (undefined behaviour that UBSan
        // reports).
        request.set_body(concurrency::streams::bytestream::open_istream(
                             std::vector<unsigned char>(json.begin(), json.end())),
                         json.size(), "application/json");
      }
      Reply reply;
      try {
        http::http_response response = client.request(request).get();
        reply.code = response.status_code();
        reply.body = response.extract_utf8string(/*ignore_content_type=*/true).get();
        const auto retry = response.headers().find(U("Retry-After"));
        if (retry != response.headers().end()) {
          reply.retry_after = utility::conversions::to_utf8string(retry->second);
        }
      } catch (const std::exception& e) {
        return StatusFromException(what, e);
      }
      if (reply.code == http::status_codes::Unauthorized && attempt == 0) {
        tokens.Invalidate();
        continue;
      }
      return reply;
    }
  }

  // Sends a request expecting a 2xx object reply.
  absl::StatusOr<YAML::Node> SendForObject(const http::method& method, const std::string& path,
                                           const std::string& json, bool is_create) {
    const std::string what = absl::StrCat(utility::conversions::to_utf8string(method), " ", path);
    ASSIGN_OR_RETURN(Reply reply, Send(method, path, json, what));
    if (reply.code < 200 || reply.code > 299) {
      return StatusFromHttpResponse(what, reply.code, reply.body, reply.retry_after, is_create);
    }
    return ParseDocumentText(reply.body, what);
  }

  const ClusterConfig config;
  const Options options;
  TokenSource tokens;
  http_client::http_client client;  // For non-watch requests; thread-safe.
  // WatchStreams alive: each lives until its last continuation has run.
  mutable absl::Mutex streams_mu;
  int live_streams ABSL_GUARDED_BY(streams_mu) = 0;
};

namespace {

// One watch: the request, then the body read chunk by chunk. Owned jointly
// by the pplx continuations and the handle; the continuations run one at a
// time, so the splitter and buffer need no lock.
class WatchStream : public std::enable_shared_from_this<WatchStream> {
 public:
  WatchStream(std::shared_ptr<CpprestKubeClient::State> client_state, std::string what,
              std::string path_and_query, int timeout_seconds,
              std::function<void(WatchEvent)> on_event, std::function<void(absl::Status)> on_end)
      : client_state_(std::move(client_state)),
        what_(std::move(what)),
        path_and_query_(std::move(path_and_query)),
        http_(utility::conversions::to_string_t(client_state_->config.server),
              MakeHttpConfig(client_state_->config, absl::Seconds(timeout_seconds) +
                                                        client_state_->options.watch_idle_margin)),
        sink_(std::move(on_event), std::move(on_end)),
        buffer_(kReadBufferBytes) {
    absl::MutexLock lock(&client_state_->streams_mu);
    ++client_state_->live_streams;
  }
  ~WatchStream() {
    absl::MutexLock lock(&client_state_->streams_mu);
    --client_state_->live_streams;
  }

  // Sends the request; the outcome arrives in OnResponse. Never throws.
  void Start(int attempt) {
    absl::StatusOr<http::http_request> request =
        client_state_->NewRequest(http::methods::GET, path_and_query_);
    if (!request.ok()) {
      sink_.End(request.status());
      return;
    }
    try {
      auto self = shared_from_this();
      http_.request(*request, cancel_.get_token())
          .then([self, attempt](pplx::task<http::http_response> task) {
            self->OnResponse(std::move(task), attempt);
          });
    } catch (const std::exception& e) {
      sink_.End(StatusFromException(what_, e));
    }
  }

  void Cancel() {
    sink_.Cancel();
    cancel_.cancel();
  }

 private:
  void OnResponse(pplx::task<http::http_response> task, int attempt) {
    try {
      http::http_response response = task.get();
      const int code = response.status_code();
      if (code == http::status_codes::OK) {
        body_ = response.body();
        ReadMore();
        return;
      }
      std::string retry_after;
      const auto retry = response.headers().find(U("Retry-After"));
      if (retry != response.headers().end()) {
        retry_after = utility::conversions::to_utf8string(retry->second);
      }
      auto self = shared_from_this();
      response.extract_utf8string(/*ignore_content_type=*/true)
          .then([self, code, retry_after, attempt](pplx::task<std::string> body_task) {
            std::string body;
            try {
              body = body_task.get();
            } catch (const std::exception&) {
              // The status line is enough.
            }
            if (code == http::status_codes::Unauthorized && attempt == 0 && !self->sink_.done()) {
              self->client_state_->tokens.Invalidate();
              self->Start(attempt + 1);
              return;
            }
            self->sink_.End(StatusFromHttpResponse(self->what_, code, body, retry_after));
          });
    } catch (const std::exception& e) {
      sink_.End(StatusFromException(what_, e));
    }
  }

  // Reads what is available (at least one byte, waiting for it).
  void ReadMore() {
    if (sink_.done()) return;
    try {
      auto buffer = body_.streambuf();
      const size_t want = std::clamp<size_t>(buffer.in_avail(), 1, buffer_.size());
      auto self = shared_from_this();
      buffer.getn(buffer_.data(), want).then([self](pplx::task<size_t> task) {
        self->OnRead(std::move(task));
      });
    } catch (const std::exception& e) {
      sink_.End(ConnectionError(what_, absl::StrCat("watch stream broken: ", e.what()), false));
    }
  }

  void OnRead(pplx::task<size_t> task) {
    size_t bytes = 0;
    try {
      bytes = task.get();
    } catch (const std::exception& e) {
      sink_.End(ConnectionError(what_, absl::StrCat("watch stream broken: ", e.what()), false));
      return;
    }
    if (bytes == 0) {
      Finish();
      return;
    }
    std::vector<std::string> lines;
    const absl::Status fed = splitter_.Feed(
        absl::string_view(reinterpret_cast<const char*>(buffer_.data()), bytes), lines);
    if (!Deliver(lines)) return;
    if (!fed.ok()) {
      sink_.End(absl::Status(fed.code(), absl::StrCat(what_, ": ", fed.message())));
      return;
    }
    ReadMore();
  }

  // Delivers parsed lines; returns false when the watch is over.
  bool Deliver(const std::vector<std::string>& lines) {
    for (const std::string& line : lines) {
      absl::StatusOr<WatchEvent> event = ParseWatchEvent(line, what_);
      if (!event.ok()) {
        sink_.End(event.status());
        return false;
      }
      if (!sink_.Event(*std::move(event))) return false;
    }
    return true;
  }

  // The body ended: clean unless it stopped inside an event.
  void Finish() {
    if (splitter_.pending().empty()) {
      sink_.End(absl::OkStatus());
      return;
    }
    absl::StatusOr<WatchEvent> last = ParseWatchEvent(splitter_.pending(), what_);
    if (!last.ok()) {
      sink_.End(ConnectionError(what_, "watch stream ended inside an event", false));
      return;
    }
    if (sink_.Event(*std::move(last))) sink_.End(absl::OkStatus());
  }

  const std::shared_ptr<CpprestKubeClient::State> client_state_;
  const std::string what_;
  const std::string path_and_query_;
  http_client::http_client http_;  // Own connection: idle timeout per watch.
  WatchSink sink_;
  pplx::cancellation_token_source cancel_;
  concurrency::streams::istream body_;
  NdjsonSplitter splitter_;
  std::vector<uint8_t> buffer_;
};

class CpprestWatchHandle final : public WatchHandle {
 public:
  explicit CpprestWatchHandle(std::shared_ptr<WatchStream> stream) : stream_(std::move(stream)) {}
  ~CpprestWatchHandle() override { stream_->Cancel(); }

 private:
  std::shared_ptr<WatchStream> stream_;
};

std::string WithQuery(const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& query) {
  web::uri_builder builder;
  builder.set_path(utility::conversions::to_string_t(path));
  for (const auto& [name, value] : query) {
    builder.append_query(utility::conversions::to_string_t(name),
                         utility::conversions::to_string_t(value), /*do_encoding=*/true);
  }
  return utility::conversions::to_utf8string(builder.to_string());
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpprestKubeClient>> CpprestKubeClient::Create(
    const ClusterConfig& config, Options options) {
  try {
    const web::uri uri(utility::conversions::to_string_t(config.server));
    if (uri.scheme() != U("https") && uri.scheme() != U("http")) {
      return absl::InvalidArgumentError(
          absl::StrCat("server \"", config.server, "\" is not an http(s) URL"));
    }
    boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
    std::string field;
    if (const boost::system::error_code error = ConfigureTls(config, ctx, &field); error) {
      return absl::InvalidArgumentError(
          absl::StrCat("the ", field, " is not valid PEM: ", error.message()));
    }
    InstallTrackingScheduler();
    return std::unique_ptr<CpprestKubeClient>(
        new CpprestKubeClient(std::make_shared<State>(config, std::move(options))));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("server \"", config.server, "\": ", e.what()));
  }
}

CpprestKubeClient::CpprestKubeClient(std::shared_ptr<State> state) : state_(std::move(state)) {}

// (spdlog cannot be included beside cpprestsdk's headers: a wait that runs
// out is not logged.)
CpprestKubeClient::~CpprestKubeClient() {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  AwaitWatchStreamsEnded(absl::Seconds(10));
  // Closes the client's connections (when no watch holds them still): what
  // they carried completes in continuations of its own.
  state_.reset();
  AwaitContinuationsRun(std::max(deadline - absl::Now(), absl::ZeroDuration()));
}

bool CpprestKubeClient::tracking_continuations() { return InstallTrackingScheduler() != nullptr; }

int CpprestKubeClient::continuations_in_flight() {
  const TrackingScheduler* scheduler = InstallTrackingScheduler();
  return scheduler == nullptr ? 0 : scheduler->in_flight();
}

bool CpprestKubeClient::AwaitContinuationsRun(absl::Duration timeout) {
  const TrackingScheduler* scheduler = InstallTrackingScheduler();
  return scheduler == nullptr || scheduler->AwaitQuiet(timeout, kContinuationsQuiet);
}

int CpprestKubeClient::watch_streams() const {
  absl::MutexLock lock(&state_->streams_mu);
  return state_->live_streams;
}

bool CpprestKubeClient::AwaitWatchStreamsEnded(absl::Duration timeout) const {
  absl::MutexLock lock(&state_->streams_mu);
  return state_->streams_mu.AwaitWithTimeout(
      absl::Condition(
          +[](State* state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->streams_mu) {
            return state->live_streams == 0;
          },
          state_.get()),
      timeout);
}

absl::StatusOr<ListResult> CpprestKubeClient::List(const std::string& collection_path,
                                                   const ListOptions& options) {
  std::vector<std::pair<std::string, std::string>> query;
  if (!options.resource_version.empty())
    query.emplace_back("resourceVersion", options.resource_version);
  if (options.limit > 0) query.emplace_back("limit", absl::StrCat(options.limit));
  if (!options.continue_token.empty()) query.emplace_back("continue", options.continue_token);
  if (!options.label_selector.empty()) query.emplace_back("labelSelector", options.label_selector);
  const std::string what = absl::StrCat("LIST ", collection_path);
  ASSIGN_OR_RETURN(State::Reply reply,
                   state_->Send(http::methods::GET, WithQuery(collection_path, query), "", what));
  if (reply.code != http::status_codes::OK) {
    return StatusFromHttpResponse(what, reply.code, reply.body, reply.retry_after);
  }
  return ParseList(what, reply.body);
}

absl::StatusOr<std::unique_ptr<WatchHandle>> CpprestKubeClient::Watch(
    const std::string& collection_path, const WatchOptions& options,
    std::function<void(WatchEvent)> on_event, std::function<void(absl::Status)> on_end) {
  if (options.timeout_seconds <= 0) {
    return absl::InvalidArgumentError("watch timeout_seconds must be positive");
  }
  std::vector<std::pair<std::string, std::string>> query = {{"watch", "true"}};
  if (!options.resource_version.empty())
    query.emplace_back("resourceVersion", options.resource_version);
  if (options.allow_bookmarks) query.emplace_back("allowWatchBookmarks", "true");
  if (!options.label_selector.empty()) query.emplace_back("labelSelector", options.label_selector);
  query.emplace_back("timeoutSeconds", absl::StrCat(options.timeout_seconds));
  std::shared_ptr<WatchStream> stream;
  try {
    stream = std::make_shared<WatchStream>(
        state_, absl::StrCat("WATCH ", collection_path), WithQuery(collection_path, query),
        options.timeout_seconds, std::move(on_event), std::move(on_end));
    stream->Start(/*attempt=*/0);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("WATCH ", collection_path, ": ", e.what()));
  }
  return std::make_unique<CpprestWatchHandle>(std::move(stream));
}

absl::StatusOr<YAML::Node> CpprestKubeClient::Get(const std::string& path) {
  return state_->SendForObject(http::methods::GET, path, "", /*is_create=*/false);
}

absl::StatusOr<YAML::Node> CpprestKubeClient::Create(const std::string& collection_path,
                                                     const std::string& json) {
  return state_->SendForObject(http::methods::POST, collection_path, json, /*is_create=*/true);
}

absl::StatusOr<YAML::Node> CpprestKubeClient::Update(const std::string& path,
                                                     const std::string& json) {
  return state_->SendForObject(http::methods::PUT, path, json, /*is_create=*/false);
}

absl::Status CpprestKubeClient::Delete(const std::string& path) {
  const std::string what = absl::StrCat("DELETE ", path);
  ASSIGN_OR_RETURN(State::Reply reply, state_->Send(http::methods::DEL, path, "", what));
  if (reply.code == http::status_codes::OK || reply.code == http::status_codes::Accepted) {
    return absl::OkStatus();
  }
  return StatusFromHttpResponse(what, reply.code, reply.body, reply.retry_after);
}

}  // namespace facet::controller::kube
