#include "controller/server/http/http_server.h"

#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/optional.hpp>
#include <chrono>
#include <cstdint>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace facet::controller {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// After an answer, what the peer still sends is read and dropped for this
// long (or this many bytes) before the socket is closed: closing with unread
// data would reset the connection, and the peer could lose the answer (a
// 413 sent while it is still sending its body).
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kLingerBytes = 1 << 20;
// How long accepting pauses when the process is out of file descriptors.
constexpr auto kAcceptRetry = std::chrono::milliseconds(50);

std::chrono::steady_clock::duration ToChrono(absl::Duration d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      absl::ToChronoNanoseconds(d));
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes %XX (and, in a query, + as a space); a malformed escape is kept
// as written.
std::string PercentDecode(absl::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && HexDigit(text[i + 1]) >= 0 &&
        HexDigit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(text[i + 1]) * 16 + HexDigit(text[i + 2])));
      i += 2;
    } else if (plus_is_space && text[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace

// The I/O side. Everything here but `workers` is used on the I/O thread
// only (and by the destructor once that thread has ended). Declaration
// order matters for destruction: pending operations, destroyed with
// `context`, end sessions, which leave `waiting`.
struct HttpServer::Io {
  // Sessions in their handshake or head, oldest first: the ones closed
  // first when the connection bound is reached.
  std::list<SessionBase*> waiting;
  asio::io_context context{1};
  std::unique_ptr<asio::ssl::context> ssl;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<asio::steady_timer> retry;
  std::unique_ptr<asio::thread_pool> workers;
};

class HttpServer::SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  // `io` is the server's (not read through `server`: the server's pointer
  // to it is already null while it is being destroyed).
  SessionBase(HttpServer& server, Io& io) : server_(server), io_(io) {
    server_.connection_count_.fetch_add(1, std::memory_order_relaxed);
    io_.waiting.push_back(this);
    waiting_ = std::prev(io_.waiting.end());
    in_waiting_ = true;
  }
  virtual ~SessionBase() {
    LeaveWaiting();
    ReleaseBody();
    server_.connection_count_.fetch_sub(1, std::memory_order_relaxed);
  }
  SessionBase(const SessionBase&) = delete;
  SessionBase& operator=(const SessionBase&) = delete;

  virtual void Start() = 0;
  // Closes the socket; pending operations end with operation_aborted.
  virtual void Close() = 0;

  // Removes the session from the waiting list (it has a complete head, or
  // is being closed to admit another).
  void LeaveWaiting() {
    if (!in_waiting_) return;
    io_.waiting.erase(waiting_);
    in_waiting_ = false;
  }

 protected:
  bool ReserveBody(size_t bytes) {
    if (!server_.ReserveBody(bytes)) return false;
    reserved_ += bytes;
    return true;
  }
  void ReleaseBody() {
    server_.ReleaseBody(reserved_);
    reserved_ = 0;
  }

  HttpServer& server_;
  Io& io_;

 private:
  std::list<SessionBase*>::iterator waiting_;
  bool in_waiting_ = false;
  size_t reserved_ = 0;
};

template <typename Stream>
class HttpServer::Session : public SessionBase {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(HttpServer& server, tcp::socket socket)
      : SessionBase(server, *server.io_), stream_(MakeStream(server, std::move(socket))) {}

  void Start() override {
    Lowest().expires_after(ToChrono(server_.options_.header_timeout));
    if constexpr (kTls) {
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = Self()](beast::error_code ec) {
                                if (ec) return self->Close();
                                self->ReadHead();
                              });
    } else {
      ReadHead();
    }
  }

  void Close() override {
    LeaveWaiting();
    Lowest().close();
  }

 private:
  static Stream MakeStream(HttpServer& server, tcp::socket socket) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *server.io_->ssl);
    } else {
      return Stream(std::move(socket));
    }
  }

  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void ReadHead() {
    const HttpServerOptions& options = server_.options_;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
    parser_->body_limit(options.max_body_bytes);
    // A chunk's size is known (and checked against the body bound) before
    // its bytes are read: reserve them then.
    on_chunk_ = [this](std::uint64_t size, beast::string_view, beast::error_code& ec) {
      if (size > 0 && !ReserveBody(size)) ec = asio::error::no_buffer_space;
    };
    parser_->on_chunk_header(on_chunk_);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = Self()](beast::error_code ec, size_t) { self->OnHead(ec); });
  }

  void OnHead(beast::error_code ec) {
    LeaveWaiting();
    if (ec) {
      if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
        return Reply(431, "request head too large\n");
      }
      if (ec == http::error::body_limit) return Reply(413, BodyTooLarge());
      if (IsHangUp(ec)) return Close();
      return Reply(400, absl::StrCat("bad request: ", ec.message(), "\n"));
    }
    const auto& head = parser_->get();
    method_ = std::string(head.method_string());
    const std::vector<std::string>& methods = server_.options_.methods;
    if (std::find(methods.begin(), methods.end(), method_) == methods.end()) {
      return Reply(405, server_.options_.method_not_allowed_body);
    }
    if (parser_->is_done()) return Dispatch();
    if (boost::optional<std::uint64_t> length = parser_->content_length();
        length.has_value() && !ReserveBody(*length)) {
      return Reply(503, "server busy: too many request bodies in flight; retry\n");
    }
    Lowest().expires_after(ToChrono(server_.options_.body_timeout));
    http::async_read(stream_, buffer_, *parser_,
                     [self = Self()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    if (ec) {
      if (ec == http::error::body_limit) return Reply(413, BodyTooLarge());
      if (ec == asio::error::no_buffer_space) {
        return Reply(503, "server busy: too many request bodies in flight; retry\n");
      }
      if (IsHangUp(ec)) return Close();
      return Reply(400, absl::StrCat("bad request body: ", ec.message(), "\n"));
    }
    Dispatch();
  }

  bool IsHangUp(beast::error_code ec) const {
    return ec == beast::error::timeout || ec == http::error::end_of_stream ||
           ec == http::error::partial_message || ec == asio::error::operation_aborted ||
           ec == asio::error::eof || ec == asio::error::connection_reset ||
           ec == asio::ssl::error::stream_truncated;
  }

  std::string BodyTooLarge() const {
    return absl::StrCat("request body larger than ", server_.options_.max_body_bytes, " bytes\n");
  }

  void Dispatch() {
    auto request = std::make_shared<HttpRequest>();
    request->method = method_;
    const beast::string_view target = parser_->get().target();
    const size_t question = target.find('?');
    request->path =
        PercentDecode(absl::string_view(target.data(), std::min(question, target.size())),
                      /*plus_is_space=*/false);
    if (question != beast::string_view::npos) {
      request->query = std::string(target.substr(question + 1));
    }
    for (const auto& field : parser_->get()) {
      std::string name = absl::AsciiStrToLower(
          absl::string_view(field.name_string().data(), field.name_string().size()));
      std::string& value = request->headers[name];
      if (!value.empty()) value += ", ";
      value.append(field.value().data(), field.value().size());
    }
    request->body = std::move(parser_->get().body());
    parser_.reset();
    asio::post(*io_.workers, [self = Self(), request] {
      auto response = std::make_shared<HttpResponse>(self->server_.handler_(*request));
      asio::post(self->io_.context, [self, response] { self->Write(*response); });
    });
  }

  void Reply(int code, std::string body) {
    Write(HttpResponse{code, "text/plain; charset=utf-8", std::move(body)});
  }

  void Write(const HttpResponse& answer) {
    ReleaseBody();
    response_.version(11);
    response_.result(static_cast<unsigned>(answer.code));
    response_.set(http::field::content_type, answer.content_type);
    response_.set(http::field::connection, "close");
    for (const auto& [name, value] : answer.headers) response_.set(name, value);
    if (method_ == "HEAD") {
      response_.content_length(answer.body.size());
    } else {
      response_.body() = answer.body;
      response_.prepare_payload();
    }
    Lowest().expires_after(ToChrono(server_.options_.write_timeout));
    http::async_write(stream_, response_,
                      [self = Self()](beast::error_code ec, size_t) { self->OnWritten(ec); });
  }

  void OnWritten(beast::error_code ec) {
    if (ec) return Close();
    // Only the socket: what the peer sends now is dropped unread by TLS.
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    Lowest().expires_after(kLingerTime);
    Linger();
  }

  void Linger() {
    Lowest().async_read_some(asio::buffer(linger_buffer_),
                             [self = Self()](beast::error_code ec, size_t n) {
                               self->lingered_ += n;
                               if (ec || self->lingered_ > kLingerBytes) return self->Close();
                               self->Linger();
                             });
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  boost::optional<http::request_parser<http::string_body>> parser_;
  std::function<void(std::uint64_t, beast::string_view, beast::error_code&)> on_chunk_;
  std::string method_;
  http::response<http::string_body> response_;
  char linger_buffer_[4096];
  size_t lingered_ = 0;
};

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address) {
  std::string host;
  std::string port;
  if (!address.empty() && address[0] == '[') {
    size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return absl::InvalidArgumentError(
          absl::StrCat("address \"", address, "\": expected [HOST]:PORT"));
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("address \"", address, "\": expected HOST:PORT"));
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

std::string JoinHostPort(absl::string_view host, int port) {
  return host.find(':') != absl::string_view::npos ? absl::StrCat("[", host, "]:", port)
                                                   : absl::StrCat(host, ":", port);
}

std::multimap<std::string, std::string> ParseQuery(absl::string_view query) {
  std::multimap<std::string, std::string> params;
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const size_t equals = pair.find('=');
    absl::string_view name = pair.substr(0, equals);
    absl::string_view value =
        equals == absl::string_view::npos ? absl::string_view() : pair.substr(equals + 1);
    params.emplace(PercentDecode(name, /*plus_is_space=*/true),
                   PercentDecode(value, /*plus_is_space=*/true));
  }
  return params;
}

long RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return static_cast<long>(limit.rlim_cur);
}

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : options_(std::move(options)), handler_(std::move(handler)), io_(std::make_unique<Io>()) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                              HttpHandler handler) {
  auto server = std::unique_ptr<HttpServer>(new HttpServer(std::move(options), std::move(handler)));
  Io& io = *server->io_;
  const HttpServerOptions& o = server->options_;
  if (o.certificates != nullptr) {
    io.ssl = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    if (io.ssl->native_handle() == nullptr) {
      return absl::InternalError("cannot set up a TLS context");
    }
    UseReloadingCertificates(*io.ssl->native_handle(), *o.certificates);
  }
  beast::error_code ec;
  tcp::resolver resolver(io.context);
  tcp::resolver::results_type endpoints = resolver.resolve(
      o.host, std::to_string(o.port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return absl::UnavailableError(absl::StrCat("cannot resolve \"", o.host, "\": ", ec.message()));
  }
  std::string failure;
  for (const auto& entry : endpoints) {
    auto acceptor = std::make_unique<tcp::acceptor>(io.context);
    // SO_REUSEADDR, not SO_REUSEPORT: a second process must fail to bind,
    // not share the port.
    acceptor->open(entry.endpoint().protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(entry.endpoint(), ec);
    if (!ec) acceptor->listen(o.listen_backlog, ec);
    if (!ec) {
      server->port_ = acceptor->local_endpoint().port();
      io.acceptor = std::move(acceptor);
      break;
    }
    failure = ec.message();
  }
  if (io.acceptor == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", o.host, ":", o.port, ": ", failure));
  }
  io.retry = std::make_unique<asio::steady_timer>(io.context);
  io.workers = std::make_unique<asio::thread_pool>(std::max(1, o.worker_threads));
  server->Accept();
  HttpServer* raw = server.get();
  server->io_thread_ = std::thread([raw] { raw->io_->context.run(); });
  return server;
}

HttpServer::~HttpServer() {
  io_->context.stop();
  if (io_thread_.joinable()) io_thread_.join();
  // Handlers that run finish; those not started are dropped.
  if (io_->workers != nullptr) {
    io_->workers->stop();
    io_->workers->join();
  }
  // Ends every session (destroying the pending operations that hold them)
  // while the rest of the server is still there.
  io_.reset();
}

void HttpServer::Accept() {
  io_->acceptor->async_accept(io_->context, [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors (EMFILE) or a transient error: make room and
      // try again shortly rather than spin.
      if (!io_->waiting.empty()) io_->waiting.front()->Close();
      io_->retry->expires_after(kAcceptRetry);
      io_->retry->async_wait([this](beast::error_code wait) {
        if (!wait) Accept();
      });
      return;
    }
    if (connection_count_.load(std::memory_order_relaxed) >= options_.max_connections) {
      if (io_->waiting.empty()) {
        beast::error_code ignored;
        socket.close(ignored);
        return Accept();
      }
      io_->waiting.front()->Close();
    }
    std::shared_ptr<SessionBase> session;
    if (io_->ssl != nullptr) {
      session =
          std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(*this, std::move(socket));
    } else {
      session = std::make_shared<Session<beast::tcp_stream>>(*this, std::move(socket));
    }
    session->Start();
    Accept();
  });
}

bool HttpServer::ReserveBody(size_t bytes) {
  size_t held = buffered_body_bytes_.load(std::memory_order_relaxed);
  do {
    if (bytes >
        options_.max_buffered_body_bytes - std::min(held, options_.max_buffered_body_bytes)) {
      return false;
    }
  } while (
      !buffered_body_bytes_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  return true;
}

void HttpServer::ReleaseBody(size_t bytes) {
  if (bytes > 0) buffered_body_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace facet::controller
