// Server-level bounds of the xDS port, on the wire: the server that
// StartXdsListener builds, real gRPC C++ client channels, and a raw HTTP/2
// connection where a test must see or send individual frames (PING, GOAWAY).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "controller/cli/flags.h"
#include "controller/cli/serving_common.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/ads_client/ads_test_client.h"
#include "test/support/test_snapshot.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/common/status_matchers.h"

namespace facet::testing {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(10);
const std::string kEds(kClusterLoadAssignmentTypeUrl);

// One ClusterLoadAssignment: a resource that references nothing.
constexpr char kEndpoints[] = R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: endpoints, namespace: demo}
spec: {type: endpoint, name: greeter, variants: [{resource: {endpoints: [{locality: {}, load_balancing_weight: 1, lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}]}
)";

// Returns options with every bound that could interfere with another test's
// observation turned off; each test sets the one it covers.
controller::XdsServerOptions Unbounded() {
  controller::XdsServerOptions options;
  options.keepalive_time = absl::ZeroDuration();
  options.max_connection_age = absl::ZeroDuration();
  return options;
}

DiscoveryRequest Subscription(const std::string& name = "greeter") {
  DiscoveryRequest request = MakeRequest(kEds, {name});
  *request.mutable_node() = MakeNode("bounds-test");
  return request;
}

// Subscribes `stream` to the endpoints and waits for them.
absl::Status Subscribe(SotwStream& stream) {
  if (absl::Status s = stream.Send(Subscription()); !s.ok()) return s;
  absl::StatusOr<DiscoveryResponse> response = stream.Next(kWait);
  if (!response.ok()) return response.status();
  if (response->resources_size() != 1) return absl::InternalError(response->DebugString());
  return absl::OkStatus();
}

// A raw HTTP/2 client connection: just enough to exchange frames with the
// server's transport (preface, SETTINGS, PING, GOAWAY). Owned by one thread.
class RawHttp2Connection {
 public:
  struct Frame {
    uint8_t type = 0;
    uint8_t flags = 0;
    std::string payload;
  };
  static constexpr uint8_t kSettings = 0x4;
  static constexpr uint8_t kPing = 0x6;
  static constexpr uint8_t kGoaway = 0x7;
  static constexpr uint8_t kAck = 0x1;

  ~RawHttp2Connection() {
    if (fd_ >= 0) close(fd_);
  }

  // Connects to 127.0.0.1:`port` and sends the client preface and an empty
  // SETTINGS frame.
  absl::Status Connect(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      return absl::UnavailableError("cannot connect");
    }
    if (absl::Status s = Write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); !s.ok()) return s;
    return SendFrame(kSettings, 0, "");
  }

  absl::Status SendFrame(uint8_t type, uint8_t flags, const std::string& payload) {
    std::string frame;
    frame.push_back(static_cast<char>((payload.size() >> 16) & 0xff));
    frame.push_back(static_cast<char>((payload.size() >> 8) & 0xff));
    frame.push_back(static_cast<char>(payload.size() & 0xff));
    frame.push_back(static_cast<char>(type));
    frame.push_back(static_cast<char>(flags));
    frame.append(4, '\0');  // Stream 0: connection-level frames only.
    frame += payload;
    return Write(frame);
  }

  absl::Status SendPing(int n) { return SendFrame(kPing, 0, absl::StrCat("ping", 1000 + n)); }

  // Returns the next frame, acknowledging SETTINGS on the way. NotFound when
  // the server closed the connection, DeadlineExceeded after `timeout`.
  absl::StatusOr<Frame> Next(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      std::string header;
      if (absl::Status s = Read(9, deadline, &header); !s.ok()) return s;
      const size_t length = (static_cast<uint8_t>(header[0]) << 16) |
                            (static_cast<uint8_t>(header[1]) << 8) |
                            static_cast<uint8_t>(header[2]);
      Frame frame;
      frame.type = static_cast<uint8_t>(header[3]);
      frame.flags = static_cast<uint8_t>(header[4]);
      if (absl::Status s = Read(length, deadline, &frame.payload); !s.ok()) return s;
      if (frame.type == kSettings && (frame.flags & kAck) == 0) {
        if (absl::Status s = SendFrame(kSettings, kAck, ""); !s.ok()) return s;
      }
      return frame;
    }
  }

  // Returns the next frame of one of `types`, skipping others.
  absl::StatusOr<Frame> NextOfType(const std::vector<uint8_t>& types, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      absl::StatusOr<Frame> frame = Next(deadline - absl::Now());
      if (!frame.ok() || absl::c_linear_search(types, frame->type)) return frame;
    }
  }

 private:
  absl::Status Write(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return absl::UnavailableError("write failed");
      done += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

  absl::Status Read(size_t length, absl::Time deadline, std::string* out) {
    while (out->size() < length) {
      pollfd p{fd_, POLLIN, 0};
      const int64_t millis = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (millis <= 0 || poll(&p, 1, static_cast<int>(millis)) == 0) {
        return absl::DeadlineExceededError("no frame");
      }
      char buffer[4096];
      const ssize_t n = recv(fd_, buffer, std::min(sizeof(buffer), length - out->size()), 0);
      if (n <= 0) return absl::NotFoundError("connection closed");
      out->append(buffer, static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }

  int fd_ = -1;
};

class ServerBoundsTest : public ::testing::Test {
 protected:
  void Start(const controller::XdsServerOptions& options) {
    auto snapshot = BuildTestSnapshot(kEndpoints);
    ASSERT_NE(snapshot, nullptr);
    store_.Publish(snapshot);
    ads_ = std::make_unique<xds::AdsService>(store_, options.ads);
    auto listener = controller::StartXdsListener("127.0.0.1:0", *ads_, options);
    ASSERT_THAT(listener, IsOk());
    server_ = std::move(listener->server);
    address_ = listener->address;
    ASSERT_TRUE(absl::SimpleAtoi(address_.substr(address_.rfind(':') + 1), &port_));
  }

  // Starts the server and connects client_ to it.
  void StartWithClient(const controller::XdsServerOptions& options) {
    Start(options);
    auto client = AdsTestClient::Connect(address_);
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
  }

  // Starts the server, connects raw_ to it and completes the HTTP/2
  // handshake: the server's SETTINGS (its first frame) read and acknowledged,
  // so that reading later writes nothing. A test whose server closes the
  // connection (GOAWAY) could otherwise see that acknowledgement fail before
  // it reads the frame under test.
  void StartWithRawConnection(const controller::XdsServerOptions& options) {
    Start(options);
    ASSERT_THAT(raw_.Connect(port_), IsOk());
    auto settings = raw_.NextOfType({RawHttp2Connection::kSettings}, kWait);
    ASSERT_THAT(settings, IsOk());
    ASSERT_EQ(settings->flags & RawHttp2Connection::kAck, 0);
  }

  // Opens a SotW stream on client_ and subscribes it to the endpoints.
  std::unique_ptr<SotwStream> SubscribedStream() {
    auto stream = client_->OpenSotw();
    EXPECT_THAT(stream, IsOk());
    if (!stream.ok()) return nullptr;
    EXPECT_THAT(Subscribe(**stream), IsOk());
    return *std::move(stream);
  }

  void TearDown() override {
    client_.reset();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  xds::SnapshotStore store_;
  std::unique_ptr<xds::AdsService> ads_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  int port_ = 0;
  std::unique_ptr<AdsTestClient> client_;
  RawHttp2Connection raw_;
};

TEST_F(ServerBoundsTest, StreamBeyondMaxConcurrentStreamsWaitsUntilOneEnds) {
  controller::XdsServerOptions options = Unbounded();
  options.max_concurrent_streams = 2;
  StartWithClient(options);
  std::unique_ptr<SotwStream> first = SubscribedStream();
  std::unique_ptr<SotwStream> second = SubscribedStream();
  ASSERT_FALSE(HasFailure());

  // The third stream on the same connection: the client holds it back
  // (SETTINGS_MAX_CONCURRENT_STREAMS) until another stream ends.
  absl::Notification answered;
  absl::Status third_status;
  std::thread third([&] {
    auto stream = client_->OpenSotw();
    third_status = stream.ok() ? Subscribe(**stream) : stream.status();
    answered.Notify();
  });
  EXPECT_FALSE(answered.WaitForNotificationWithTimeout(absl::Milliseconds(500)))
      << "a third stream was served while two were open: " << third_status;
  first.reset();  // Cancels the first stream.
  EXPECT_TRUE(answered.WaitForNotificationWithTimeout(kWait));
  third.join();
  EXPECT_THAT(third_status, IsOk());
}

TEST_F(ServerBoundsTest, ConnectionPastMaxAgeAndGraceIsClosedAndTheClientReconnects) {
  controller::XdsServerOptions options = Unbounded();
  options.max_connection_age = absl::Milliseconds(300);
  options.max_connection_age_grace = absl::Milliseconds(300);
  StartWithClient(options);
  std::unique_ptr<SotwStream> stream = SubscribedStream();
  ASSERT_FALSE(HasFailure());
  // The server sends GOAWAY at the age and closes the connection after the
  // grace: the ADS stream ends with UNAVAILABLE, as when a replica goes away.
  EXPECT_THAT(stream->Next(kWait), StatusIs(absl::StatusCode::kUnavailable));
  // A new stream on the same channel is served over a new connection.
  SubscribedStream();
}

TEST_F(ServerBoundsTest, OversizedRequestEndsTheStreamWithResourceExhausted) {
  controller::XdsServerOptions options = Unbounded();
  options.ads.max_request_bytes = 1024;
  StartWithClient(options);
  SubscribedStream();  // A request under the limit is served.
  ASSERT_FALSE(HasFailure());

  auto big = client_->OpenSotw();
  ASSERT_THAT(big, IsOk());
  ASSERT_THAT((*big)->Send(Subscription(std::string(2000, 'x'))), IsOk());
  EXPECT_THAT((*big)->Next(kWait), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(ServerBoundsTest, ServerPingsAnIdleConnectionAndClosesItWhenThePingIsUnanswered) {
  controller::XdsServerOptions options = Unbounded();
  options.keepalive_time = absl::Milliseconds(200);
  options.keepalive_timeout = absl::Milliseconds(200);
  StartWithRawConnection(options);
  auto ping = raw_.NextOfType({RawHttp2Connection::kPing}, kWait);
  ASSERT_THAT(ping, IsOk());
  EXPECT_EQ(ping->flags & RawHttp2Connection::kAck, 0);
  // Not answered: the server gives up on the connection.
  absl::StatusOr<RawHttp2Connection::Frame> frame;
  do {
    frame = raw_.Next(kWait);
  } while (frame.ok());
  EXPECT_THAT(frame.status(), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ServerBoundsTest, ClientMayPingAtTheMinimumIntervalWithoutCalls) {
  controller::XdsServerOptions options = Unbounded();
  options.min_client_ping_interval = absl::Milliseconds(50);
  StartWithRawConnection(options);
  // gRPC's default policy (5 minutes, 2 strikes) would answer the fourth of
  // these with GOAWAY; spaced above the configured interval they are all fine,
  // even on a connection without calls.
  for (int i = 0; i < 5; ++i) {
    if (i > 0) absl::SleepFor(absl::Milliseconds(150));  // The spacing under test.
    ASSERT_THAT(raw_.SendPing(i), IsOk());
    auto frame = raw_.NextOfType({RawHttp2Connection::kPing, RawHttp2Connection::kGoaway}, kWait);
    ASSERT_THAT(frame, IsOk());
    ASSERT_EQ(frame->type, RawHttp2Connection::kPing) << "GOAWAY after ping " << i;
    EXPECT_EQ(frame->flags, RawHttp2Connection::kAck);
    EXPECT_EQ(frame->payload, absl::StrCat("ping", 1000 + i));
  }
}

TEST_F(ServerBoundsTest, ClientPingingTooOftenIsSentGoawayTooManyPings) {
  controller::XdsServerOptions options = Unbounded();
  options.min_client_ping_interval = absl::Seconds(10);
  StartWithRawConnection(options);
  // Three pings reach the limit (two strikes); the server may answer with
  // GOAWAY and close before the later ones are written, so those may fail.
  for (int i = 0; i < 3; ++i) ASSERT_THAT(raw_.SendPing(i), IsOk());
  for (int i = 3; i < 5; ++i) raw_.SendPing(i).IgnoreError();
  auto goaway = raw_.NextOfType({RawHttp2Connection::kGoaway}, kWait);
  ASSERT_THAT(goaway, IsOk());
  ASSERT_GE(goaway->payload.size(), 8u);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(goaway->payload.data());
  EXPECT_EQ((p[4] << 24) | (p[5] << 16) | (p[6] << 8) | p[7], 0xb);  // ENHANCE_YOUR_CALM
  EXPECT_EQ(goaway->payload.substr(8), "too_many_pings");
}

TEST_F(ServerBoundsTest, GrpcClientPingingTooOftenLosesItsStreamWithUnavailable) {
  controller::XdsServerOptions options = Unbounded();
  options.min_client_ping_interval = absl::Seconds(10);
  Start(options);
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  auto channel = grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), args);
  auto stub = envoy::service::discovery::v3::AggregatedDiscoveryService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kWait));
  auto stream = stub->StreamAggregatedResources(&context);
  ASSERT_TRUE(stream->Write(Subscription()));
  DiscoveryResponse response;
  ASSERT_TRUE(stream->Read(&response));
  while (stream->Read(&response)) {
  }
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST(XdsServerFlagsTest, ParsesEveryBoundFlag) {
  controller::Flags flags;
  controller::DefineXdsServerFlags(flags);
  ASSERT_THAT(
      flags.Parse({"--grpc-keepalive-time=30s", "--grpc-keepalive-timeout=5s",
                   "--grpc-min-client-ping-interval=10s",
                   "--grpc-keepalive-permit-without-calls=false", "--grpc-max-connection-age=0",
                   "--grpc-max-connection-age-grace=2m", "--grpc-max-concurrent-streams=7",
                   "--grpc-memory-budget-bytes=0", "--max-request-bytes=1000",
                   "--max-names-per-stream=50", "--max-types-per-stream=4", "--max-nack-records=3",
                   "--max-error-detail-bytes=100", "--write-stall-timeout=90s",
                   "--response-memory-budget-bytes=0", "--max-subscription-bytes-per-stream=9000",
                   "--max-subscription-bytes-per-connection=20000", "--max-subscription-bytes=0"}),
      IsOk());
  auto options = controller::XdsServerOptionsFromFlags(flags);
  ASSERT_THAT(options, IsOk());
  EXPECT_EQ(options->keepalive_time, absl::Seconds(30));
  EXPECT_EQ(options->keepalive_timeout, absl::Seconds(5));
  EXPECT_EQ(options->min_client_ping_interval, absl::Seconds(10));
  EXPECT_FALSE(options->keepalive_permit_without_calls);
  EXPECT_EQ(options->max_connection_age, absl::ZeroDuration());
  EXPECT_EQ(options->max_connection_age_grace, absl::Minutes(2));
  EXPECT_EQ(options->max_concurrent_streams, 7);
  EXPECT_EQ(options->memory_budget_bytes, 0);
  EXPECT_EQ(options->ads.max_request_bytes, 1000);
  EXPECT_EQ(options->ads.stream_limits.max_names, 50);
  EXPECT_EQ(options->ads.stream_limits.max_types, 4);
  EXPECT_EQ(options->ads.max_nack_records, 3);
  EXPECT_EQ(options->ads.max_error_detail_bytes, 100);
  EXPECT_EQ(options->ads.write_stall_timeout, absl::Seconds(90));
  EXPECT_EQ(options->ads.response_memory_budget_bytes, 0);
  EXPECT_EQ(options->ads.stream_limits.max_bytes, 9000);
  EXPECT_EQ(options->ads.max_subscription_memory_per_connection, 20000);
  EXPECT_EQ(options->ads.max_subscription_memory, 0);
}

TEST(XdsServerFlagsTest, DefaultsAreTheOptionsDefaults) {
  controller::Flags flags;
  controller::DefineXdsServerFlags(flags);
  ASSERT_THAT(flags.Parse({}), IsOk());
  auto options = controller::XdsServerOptionsFromFlags(flags);
  ASSERT_THAT(options, IsOk());
  const controller::XdsServerOptions defaults;
  EXPECT_EQ(options->keepalive_time, defaults.keepalive_time);
  EXPECT_EQ(options->max_connection_age, defaults.max_connection_age);
  EXPECT_EQ(options->max_concurrent_streams, defaults.max_concurrent_streams);
  EXPECT_EQ(options->memory_budget_bytes, defaults.memory_budget_bytes);
  EXPECT_EQ(options->ads.max_request_bytes, defaults.ads.max_request_bytes);
  EXPECT_EQ(options->ads.write_stall_timeout, defaults.ads.write_stall_timeout);
  EXPECT_EQ(options->ads.response_memory_budget_bytes, defaults.ads.response_memory_budget_bytes);
  EXPECT_EQ(options->ads.max_subscription_memory_per_connection,
            defaults.ads.max_subscription_memory_per_connection);
  EXPECT_EQ(options->ads.max_subscription_memory, defaults.ads.max_subscription_memory);
}

TEST(XdsServerFlagsTest, RejectsBadValuesNamingTheFlag) {
  for (const auto& [arg, message] : std::vector<std::pair<std::string, std::string>>{
           {"--grpc-keepalive-time=soon", "--grpc-keepalive-time: \"soon\""},
           {"--grpc-max-connection-age=-1s", "--grpc-max-connection-age: \"-1s\""},
           {"--grpc-max-concurrent-streams=0", "--grpc-max-concurrent-streams: \"0\""},
           {"--max-request-bytes=4MiB", "--max-request-bytes: \"4MiB\""},
           {"--grpc-keepalive-timeout=0", "--grpc-keepalive-timeout: must be more than 0"},
       }) {
    controller::Flags flags;
    controller::DefineXdsServerFlags(flags);
    ASSERT_THAT(flags.Parse({arg}), IsOk());
    EXPECT_THAT(controller::XdsServerOptionsFromFlags(flags),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
  }
}

}  // namespace
}  // namespace facet::testing
