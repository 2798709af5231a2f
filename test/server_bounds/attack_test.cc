// Hostile clients against the xDS port, on the wire: the server that
// StartXdsListener builds, with each per-stream and server-wide bound under
// the attack it exists for (the figures are the ones measured before the
// bound). Each attack also runs with its bound set out of the way, so the
// test shows that the bound, not something else, stops it.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "controller/cli/serving_common.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/base_sink.h"
#include "spdlog/spdlog.h"
#include "test/ads_client/ads_test_client.h"
#include "test/support/test_snapshot.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/names/names.h"

namespace facet::testing {
namespace {

using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr absl::Duration kWait = absl::Seconds(30);
constexpr absl::Duration kStallTimeout = absl::Seconds(2);
const std::string kCds(kClusterTypeUrl);
const std::string kEds(kClusterLoadAssignmentTypeUrl);

// `count` ClusterLoadAssignments e-0, e-1, ...
std::string Endpoints(int count) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    absl::StrAppend(&out, "---\napiVersion: facet.dev/v1alpha1\nkind: XdsResource\n",
                    "metadata: {name: e-", i, ", namespace: demo}\nspec: {type: endpoint, ",
                    "name: e-", i, ", variants: [{resource: {endpoints: [{locality: {}, ",
                    "load_balancing_weight: 1, lb_endpoints: [{endpoint: {address: ",
                    "{socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}]}\n");
  }
  return out;
}

// One STATIC cluster "big" padded to about `bytes` bytes.
std::string BigCluster(size_t bytes) {
  return absl::StrCat(
      "---\napiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata: {name: big, namespace: "
      "demo}\nspec: {type: cluster, name: big, variants: [{resource: {type: STATIC, "
      "load_assignment: {cluster_name: big}, metadata: {filter_metadata: {pad: {p: ",
      std::string(bytes, 'x'), "}}}}}]}\n");
}

// Collects every formatted log line. Thread-safe (base_sink's mutex).
class CapturingSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    text_.append(formatted.data(), formatted.size());
  }
  void flush_() override {}

 private:
  std::string text_;
};

class AttackTest : public ::testing::Test {
 protected:
  void Start(controller::XdsServerOptions options, const std::string& manifests) {
    auto snapshot = BuildTestSnapshot(manifests);
    ASSERT_NE(snapshot, nullptr);
    store_.Publish(snapshot);
    options.keepalive_time = absl::ZeroDuration();
    options.max_connection_age = absl::ZeroDuration();
    ads_ = std::make_unique<xds::AdsService>(store_, options.ads);
    auto listener = controller::StartXdsListener("127.0.0.1:0", *ads_, options);
    ASSERT_THAT(listener, IsOk());
    server_ = std::move(listener->server);
    address_ = listener->address;
    auto client = AdsTestClient::Connect(address_);
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
  }

  void TearDown() override {
    client_.reset();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    ads_.reset();
  }

  bool WaitForStats(const std::function<bool(const xds::AdsStats&)>& done) {
    const absl::Time deadline = absl::Now() + kWait;
    while (!done(ads_->stats())) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(2));
    }
    return true;
  }

  // Returns the status the server ended `stream` with, reading (and
  // dropping) responses until then.
  template <typename Stream>
  absl::Status EndStatus(Stream& stream) {
    const absl::Time deadline = absl::Now() + kWait;
    while (absl::Now() < deadline) {
      auto response = stream.Next(deadline - absl::Now());
      if (!response.ok()) return response.status();
    }
    return absl::DeadlineExceededError("the stream did not end");
  }

  // Subscribes `stream` to endpoint `name` and reads until it is answered.
  template <typename Stream>
  void ExpectDeltaAnswer(Stream& stream, const std::string& name) {
    ASSERT_THAT(stream.Send(MakeDeltaRequest(kEds, {name})), IsOk());
    bool answered = false;
    while (!answered) {
      auto response = stream.Next(kWait);
      ASSERT_THAT(response, IsOk());
      for (const auto& resource : response->resources()) answered |= resource.name() == name;
    }
  }

  // Returns a stub on a connection of its own whose streams never read: a
  // small window, so each write of more than 16 KiB stays in flight.
  std::unique_ptr<envoy::service::discovery::v3::AggregatedDiscoveryService::Stub>
  NonReadingStub() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 10);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(-1);
    auto channel = grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), args);
    return envoy::service::discovery::v3::AggregatedDiscoveryService::NewStub(channel);
  }

  // SotW streams on a connection of their own (NonReadingStub) that
  // subscribe to cluster "big" and never read. Members are destroyed streams
  // first, then their contexts, then the stub.
  struct NonReaders {
    std::unique_ptr<envoy::service::discovery::v3::AggregatedDiscoveryService::Stub> stub;
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::unique_ptr<grpc::ClientReaderWriter<DiscoveryRequest, DiscoveryResponse>>>
        streams;

    // Cancels and ends every stream, then drops them.
    void Stop() {
      for (auto& context : contexts) context->TryCancel();
      for (auto& stream : streams) stream->Finish();
      streams.clear();
      contexts.clear();
    }
  };

  // Opens `count` non-reading streams into `out`.
  void OpenNonReaders(int count, NonReaders* out) {
    out->stub = NonReadingStub();
    for (int i = 0; i < count; ++i) {
      out->contexts.push_back(std::make_unique<grpc::ClientContext>());
      out->streams.push_back(out->stub->StreamAggregatedResources(out->contexts.back().get()));
      DiscoveryRequest request = MakeRequest(kCds, {"big"});
      *request.mutable_node() = MakeNode(absl::StrCat("never-reads-", i));
      ASSERT_TRUE(out->streams.back()->Write(request));
    }
  }

  // Starts a server with `manifests` whose response budget holds four
  // responses of 256 KiB and whose write-stall timeout is kStallTimeout.
  void StartWithSmallBudget(const std::string& manifests) {
    controller::XdsServerOptions options;
    options.ads.response_memory_budget_bytes = 1 << 20;
    options.ads.write_stall_timeout = kStallTimeout;
    options.memory_budget_bytes = 64 << 20;
    Start(options, manifests);
  }

  // Opens a SotW stream of node "reader" subscribed to `name` of `type`,
  // reads its first response into `*first` and ACKs it.
  void OpenReader(const std::string& type, const std::string& name,
                  std::unique_ptr<SotwStream>* reader, DiscoveryResponse* first) {
    auto stream = client_->OpenSotw();
    ASSERT_THAT(stream, IsOk());
    *reader = *std::move(stream);
    DiscoveryRequest request = MakeRequest(type, {name});
    *request.mutable_node() = MakeNode("reader");
    ASSERT_THAT((*reader)->Send(request), IsOk());
    auto response = (*reader)->Next(kWait);
    ASSERT_THAT(response, IsOk());
    *first = *std::move(response);
    ASSERT_THAT((*reader)->Send(Ack(*first, request)), IsOk());
  }

  xds::SnapshotStore store_;
  std::unique_ptr<xds::AdsService> ads_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<AdsTestClient> client_;
};

// A node id, type URL and NACK detail with newlines, terminal escapes, a
// right-to-left override and a C1 control cannot forge a log line (invalid
// UTF-8 never reaches the stream's state: a proto3 string carrying it does
// not parse, see RequestBytesThatAreNotADiscoveryRequestEndTheStream): every
// line the server logs starts with the logger's own prefix.
TEST_F(AttackTest, ClientStringsCannotForgeLogLines) {
  auto sink = std::make_shared<CapturingSink>();
  sink->set_pattern("LOG %v");
  spdlog::default_logger()->sinks().push_back(sink);
  Start(controller::XdsServerOptions(), Endpoints(1));

  const std::string forged = "\n[error] forged\r\x1b[2J\xE2\x80\xAE\xC2\x85";
  auto stream = client_->OpenSotw();
  ASSERT_THAT(stream, IsOk());
  DiscoveryRequest request = MakeRequest(kEds, {"e-0"});
  *request.mutable_node() = MakeNode("client" + forged);
  ASSERT_THAT((*stream)->Send(request), IsOk());
  auto response = (*stream)->Next(kWait);
  ASSERT_THAT(response, IsOk());
  ASSERT_THAT((*stream)->Send(Nack(*response, MakeRequest(kEds, {"e-0"}), "", "bad" + forged)),
              IsOk());
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) { return stats.nacks >= 1; }));
  // A type URL of its own ends the stream when it is too long: logged too.
  ASSERT_THAT((*stream)->Send(MakeRequest("type" + forged + std::string(600, 'x'), {})), IsOk());
  EXPECT_THAT(EndStatus(**stream), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) { return stats.streams_open == 0; }));
  stream->reset();
  spdlog::default_logger()->flush();
  std::vector<std::string> lines = absl::StrSplit(sink->text(), '\n', absl::SkipEmpty());
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());

  EXPECT_THAT(lines, Each(StartsWith("LOG ")));
  EXPECT_THAT(lines, Each(Not(HasSubstr("\x1b"))));
  EXPECT_THAT(lines, Each(Not(HasSubstr("\xE2\x80\xAE"))));
  const std::string text = absl::StrJoin(lines, "\n");
  EXPECT_THAT(text, HasSubstr("client\\n[error] forged\\r\\x1b[2J\\u202e\\u0085"));  // Stream close.
  EXPECT_THAT(text, HasSubstr("bad\\n[error] forged"));                          // The NACK.
  EXPECT_THAT(text, HasSubstr("type\\n[error] forged"));                         // The type URL.
  // What /status and object status show is escaped the same way.
  auto nacks = ads_->nacks();
  ASSERT_EQ(nacks.size(), 1u);
  EXPECT_EQ(nacks[0].node_id, "client\\n[error] forged\\r\\x1b[2J\\u202e\\u0085");
  EXPECT_EQ(nacks[0].error_detail, "bad\\n[error] forged\\r\\x1b[2J\\u202e\\u0085");
}

// The first attack: delta subscriptions accumulate across requests
// (2.6 GB before the bound). Names are counted across requests, and so are
// their bytes.
TEST_F(AttackTest, CumulativeDeltaSubscriptionsEndTheStreamAtMaxNames) {
  for (const int max_names : {1000, 1000000}) {
    SCOPED_TRACE(max_names);
    controller::XdsServerOptions options;
    options.ads.stream_limits.max_names = max_names;
    Start(options, Endpoints(1));
    auto stream = client_->OpenDelta();
    ASSERT_THAT(stream, IsOk());
    // 20 requests of 100 new names each: 2,000 names in all.
    bool ended = false;
    for (int request = 0; request < 20 && !ended; ++request) {
      std::vector<std::string> names;
      for (int i = 0; i < 100; ++i) names.push_back(absl::StrCat("bogus-", request, "-", i));
      DeltaDiscoveryRequest delta = MakeDeltaRequest(kEds, names);
      if (request == 0) *delta.mutable_node() = MakeNode("accumulator");
      ended = !(*stream)->Send(delta).ok();
    }
    if (max_names == 1000) {
      EXPECT_THAT(EndStatus(**stream),
                  StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("1000 names")));
      EXPECT_EQ(ads_->stats().streams_closed_names_limit, 1);
    } else {
      // Without the bound in the way every name is held: the stream answers
      // a last subscription.
      ExpectDeltaAnswer(**stream, "e-0");
      EXPECT_EQ(ads_->stats().streams_closed_names_limit, 0);
    }
    stream->reset();
    TearDown();
  }
}

// The same attack with long names and locator parameters: fewer names, but
// more bytes each. --max-subscription-bytes-per-stream ends it.
TEST_F(AttackTest, CumulativeSubscriptionBytesEndTheStream) {
  for (const int64_t max_bytes : {int64_t{256} << 10, int64_t{64} << 20}) {
    SCOPED_TRACE(max_bytes);
    controller::XdsServerOptions options;
    options.ads.stream_limits.max_bytes = max_bytes;
    Start(options, Endpoints(1));
    auto stream = client_->OpenDelta();
    ASSERT_THAT(stream, IsOk());
    // 40 requests of 10 locators, each a 2,000-byte name with 2,000 bytes of
    // parameters: 40,000 bytes per request, 1.6 MB in all.
    bool ended = false;
    for (int request = 0; request < 40 && !ended; ++request) {
      std::vector<envoy::service::discovery::v3::ResourceLocator> locators;
      for (int i = 0; i < 10; ++i) {
        std::string name = absl::StrCat(request, "-", i, "-");
        name.resize(2000, 'n');
        locators.push_back(MakeLocator(name, {{"env", std::string(1997, 'v')}}));
      }
      DeltaDiscoveryRequest delta = MakeDeltaRequest(kEds, {}, {}, locators);
      if (request == 0) *delta.mutable_node() = MakeNode("heavy");
      ended = !(*stream)->Send(delta).ok();
    }
    if (max_bytes == int64_t{256} << 10) {
      EXPECT_THAT(EndStatus(**stream),
                  StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("262144 bytes")));
      EXPECT_EQ(ads_->stats().streams_closed_bytes_limit, 1);
    } else {
      ExpectDeltaAnswer(**stream, "e-0");
      EXPECT_EQ(ads_->stats().streams_closed_bytes_limit, 0);
    }
    stream->reset();
    TearDown();
  }
}

// The six streams of 62 MB of names on one connection (2.16 GB,
// each stream within its own bounds): what subscriptions cost in memory is
// counted per connection and over the server, and a request beyond either
// bound ends its stream with RESOURCE_EXHAUSTED naming the flag; the memory
// is given back when streams close.
TEST_F(AttackTest, SubscriptionMemoryIsBoundedPerConnectionAndServerWide) {
  constexpr int kNames = 2000;
  constexpr size_t kNameBytes = 500;
  const int64_t per_stream = xds::StreamState::SubscriptionMemory(kNames, kNames * kNameBytes);
  auto subscribe = [&](auto& stream, int tag) {
    std::vector<std::string> names;
    for (int i = 0; i < kNames; ++i) {
      names.push_back(absl::StrCat(tag, "-", i, "-"));
      names.back().resize(kNameBytes, 'n');
    }
    DeltaDiscoveryRequest request = MakeDeltaRequest(kEds, names);
    *request.mutable_node() = MakeNode(absl::StrCat("names-", tag));
    return stream.Send(request);
  };
  auto connect = [&]() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return AdsTestClient::Connect(address_, grpc::InsecureChannelCredentials(), args);
  };
  // Two streams' worth fit under each bound, a third does not: first on one
  // connection, then over three; then with both bounds out of the way.
  for (const bool one_connection : {true, false}) {
    for (const bool bounded : {true, false}) {
      SCOPED_TRACE(absl::StrCat(one_connection ? "one connection" : "three connections",
                                bounded ? "" : ", unbounded"));
      controller::XdsServerOptions options;
      const int64_t cap = bounded ? per_stream * 5 / 2 : 0;
      options.ads.max_subscription_memory_per_connection = one_connection ? cap : 0;
      options.ads.max_subscription_memory = one_connection ? 0 : cap;
      Start(options, Endpoints(1));
      std::vector<std::unique_ptr<AdsTestClient>> clients;
      std::vector<std::unique_ptr<DeltaStream>> streams;
      for (int i = 0; i < 3; ++i) {
        AdsTestClient* client = client_.get();
        if (!one_connection) {
          auto connected = connect();
          ASSERT_THAT(connected, IsOk());
          clients.push_back(*std::move(connected));
          client = clients.back().get();
        }
        auto stream = client->OpenDelta();
        ASSERT_THAT(stream, IsOk());
        streams.push_back(*std::move(stream));
        ASSERT_THAT(subscribe(*streams.back(), i), IsOk());
        if (i < 2 || !bounded) {
          ExpectDeltaAnswer(*streams.back(), "e-0");
          continue;
        }
        const std::string flag =
            one_connection ? "--max-subscription-bytes-per-connection" : "--max-subscription-bytes";
        EXPECT_THAT(EndStatus(*streams.back()),
                    StatusIs(absl::StatusCode::kResourceExhausted,
                             HasSubstr(absl::StrCat(cap, " bytes of memory (", flag, ")"))));
      }
      const xds::AdsStats stats = ads_->stats();
      EXPECT_EQ(stats.streams_closed_connection_subscription_limit,
                bounded && one_connection ? 1 : 0);
      EXPECT_EQ(stats.streams_closed_server_subscription_limit, bounded && !one_connection ? 1 : 0);
      EXPECT_GE(stats.subscription_memory_bytes, 2 * per_stream);
      if (bounded) {
        EXPECT_LE(stats.subscription_memory_bytes, cap);
      }
      // A stream on another connection is not the first connection's business.
      if (bounded && one_connection) {
        auto other = connect();
        ASSERT_THAT(other, IsOk());
        auto stream = (*other)->OpenDelta();
        ASSERT_THAT(stream, IsOk());
        ASSERT_THAT(subscribe(**stream, 3), IsOk());
        ExpectDeltaAnswer(**stream, "e-0");
        stream->reset();
      }
      streams.clear();
      clients.clear();
      EXPECT_TRUE(WaitForStats([](const xds::AdsStats& stats) {
        return stats.streams_open == 0 && stats.subscription_memory_bytes == 0;
      })) << ads_->stats().subscription_memory_bytes;
      TearDown();
    }
  }
}

// A name no served resource can have (longer than kMaxResourceNameLength) is
// refused at once, naming the limit, instead of being kept at any size.
TEST_F(AttackTest, OverlongNamesAndTypeUrlsEndTheStreamNamingTheLimit) {
  Start(controller::XdsServerOptions(), Endpoints(1));
  auto sotw = client_->OpenSotw();
  ASSERT_THAT(sotw, IsOk());
  DiscoveryRequest request = MakeRequest(kEds, {std::string(1 << 20, 'n')});
  *request.mutable_node() = MakeNode("long-name");
  ASSERT_THAT((*sotw)->Send(request), IsOk());
  EXPECT_THAT(EndStatus(**sotw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("1048576 bytes; the limit is ",
                                              xds::kMaxResourceNameLength, " bytes"))));
  auto delta = client_->OpenDelta();
  ASSERT_THAT(delta, IsOk());
  ASSERT_THAT((*delta)->Send(MakeDeltaRequest(std::string(100000, 't'), {"x"})), IsOk());
  EXPECT_THAT(EndStatus(**delta), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("100000 bytes; the limit is 512 bytes")));
}

// Bytes that are not a DiscoveryRequest (here field 1, version_info, holding
// invalid UTF-8, which proto3 refuses), sent on a raw stream: the server
// parses requests itself and ends that stream with INVALID_ARGUMENT naming
// the message type; other streams are served as before.
TEST_F(AttackTest, RequestBytesThatAreNotADiscoveryRequestEndTheStream) {
  Start(controller::XdsServerOptions(), Endpoints(1));
  auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  auto call = stub.PrepareCall(
      &context, "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
      &cq);
  auto await = [&cq](intptr_t expected) {
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(reinterpret_cast<intptr_t>(tag), expected);
    return ok;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(await(1));
  const char bytes[] = "\x0a\x02\xff\xfe";
  grpc::Slice slice(bytes, sizeof(bytes) - 1);
  call->Write(grpc::ByteBuffer(&slice, 1), reinterpret_cast<void*>(2));
  ASSERT_TRUE(await(2));
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(3));
  EXPECT_FALSE(await(3));  // The stream ends without a response.
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(4));
  ASSERT_TRUE(await(4));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("not a valid envoy.service.discovery.v3.DiscoveryRequest"));
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }

  auto sotw = client_->OpenSotw();
  ASSERT_THAT(sotw, IsOk());
  ASSERT_THAT((*sotw)->Send(MakeRequest(kEds, {"e-0"})), IsOk());
  auto answer = (*sotw)->Next(kWait);
  ASSERT_THAT(answer, IsOk());
  EXPECT_EQ(answer->resources_size(), 1);
}

// The 10,000 distinct bogus type URLs on one stream (quadratic time
// before the bound): the stream ends at --max-types-per-stream.
TEST_F(AttackTest, TenThousandBogusTypeUrlsEndTheStreamAtMaxTypes) {
  for (const int max_types : {16, 100}) {
    SCOPED_TRACE(max_types);
    controller::XdsServerOptions options;
    options.ads.stream_limits.max_types = max_types;
    Start(options, Endpoints(1));
    auto stream = client_->OpenSotw();
    ASSERT_THAT(stream, IsOk());
    // Every accepted type is answered (an empty SotW response); the first
    // one beyond the bound ends the stream.
    int answered = 0;
    absl::Status end;
    for (int i = 0; i < 10000; ++i) {
      DiscoveryRequest request =
          MakeRequest(absl::StrCat("type.googleapis.com/bogus.Type", i), {"x"});
      if (i == 0) *request.mutable_node() = MakeNode("type-spammer");
      if (!(*stream)->Send(request).ok()) break;
      auto response = (*stream)->Next(kWait);
      if (!response.ok()) {
        end = response.status();
        break;
      }
      ++answered;
    }
    EXPECT_EQ(answered, max_types);
    EXPECT_THAT(end, StatusIs(absl::StatusCode::kResourceExhausted,
                              HasSubstr(absl::StrCat(max_types, " type URLs"))));
    EXPECT_EQ(ads_->stats().streams_closed_types_limit, 1);
    stream->reset();
    TearDown();
  }
}

// The 4 MB NACK detail stored once per NACKed variant (850 MB, and
// /status crashed): the detail is cut to --max-error-detail-bytes and kept
// once per NACK, shared by the records of every variant the response carried.
TEST_F(AttackTest, HugeNackDetailIsCutAndStoredOncePerResponse) {
  constexpr int kVariants = 200;
  for (const int max_detail : {4096, 1 << 30}) {
    SCOPED_TRACE(max_detail);
    controller::XdsServerOptions options;
    options.ads.max_error_detail_bytes = max_detail;
    Start(options, Endpoints(kVariants));
    spdlog::set_level(spdlog::level::err);  // Not 4 MB of NACK in the test log.
    auto stream = client_->OpenSotw();
    ASSERT_THAT(stream, IsOk());
    std::vector<std::string> names;
    for (int i = 0; i < kVariants; ++i) names.push_back(absl::StrCat("e-", i));
    DiscoveryRequest request = MakeRequest(kEds, names);
    *request.mutable_node() = MakeNode("nacker");
    ASSERT_THAT((*stream)->Send(request), IsOk());
    auto response = (*stream)->Next(kWait);
    ASSERT_THAT(response, IsOk());
    ASSERT_EQ(response->resources_size(), kVariants);
    const std::string detail(4000000, 'd');
    ASSERT_THAT((*stream)->Send(Nack(*response, MakeRequest(kEds, names), "", detail)), IsOk());
    ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) { return stats.nacks >= 1; }));
    const xds::AdsStats stats = ads_->stats();
    if (max_detail == 4096) {
      EXPECT_EQ(stats.nack_details_truncated, 1);
      // One 4 KiB detail for 200 records (200 x 4 KiB if each kept a copy).
      EXPECT_EQ(stats.nack_detail_bytes, 4096);
      const auto nacks = ads_->nacks();
      ASSERT_EQ(nacks.size(), static_cast<size_t>(kVariants));
      for (const auto& record : nacks) EXPECT_EQ(record.error_detail.size(), 4096u);
    } else {
      // With the cut out of the way the detail is still held once: 4 MB,
      // not 200 x 4 MB.
      EXPECT_EQ(stats.nack_details_truncated, 0);
      EXPECT_EQ(stats.nack_detail_bytes, 4000000);
    }
    spdlog::set_level(spdlog::level::info);
    stream->reset();
    TearDown();
  }
}

// The 2,000 streams that never read on a 2 MB snapshot (the server
// crashed): a few hundred here. Responses being written count against
// --response-memory-budget-bytes, so the server holds about the budget
// rather than one response per stream, and --write-stall-timeout ends each
// stalled stream in turn. A well-behaved client is served meanwhile.
TEST_F(AttackTest, ManyStreamsThatNeverReadStayWithinTheResponseBudget) {
  constexpr int kStreams = 200;
  constexpr int64_t kResponseBytes = 256 << 10;
  constexpr int64_t kBudget = 4 << 20;
  for (const int64_t budget : {kBudget, int64_t{0}}) {
    SCOPED_TRACE(budget);
    controller::XdsServerOptions options;
    options.ads.response_memory_budget_bytes = budget;
    options.ads.write_stall_timeout = absl::Milliseconds(200);
    options.memory_budget_bytes = 64 << 20;
    Start(options, BigCluster(kResponseBytes) + Endpoints(1));

    NonReaders stalled;
    ASSERT_NO_FATAL_FAILURE(OpenNonReaders(kStreams, &stalled));

    if (budget > 0) {
      // A client that reads is served while the attack goes on.
      auto healthy = client_->OpenSotw();
      ASSERT_THAT(healthy, IsOk());
      DiscoveryRequest eds = MakeRequest(kEds, {"e-0"});
      *eds.mutable_node() = MakeNode("healthy");
      ASSERT_THAT((*healthy)->Send(eds), IsOk());
      ASSERT_THAT((*healthy)->Next(kWait), IsOk());
      // Every stalled stream gets its turn and is closed.
      ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) {
        return stats.streams_closed_write_stall == kStreams;
      })) << ads_->stats().streams_closed_write_stall;
      const xds::AdsStats stats = ads_->stats();
      EXPECT_GT(stats.responses_deferred, 0);
      // At most the budget plus the responses admitted at the same moment
      // (one per server thread); without it, one response per stream.
      EXPECT_LE(stats.response_bytes_in_flight_peak, kBudget + 8 * (kResponseBytes + 1024));
      // A cancelled write returns its bytes when gRPC completes it, after
      // the stream was counted as closed.
      EXPECT_TRUE(WaitForStats(
          [](const xds::AdsStats& stats) { return stats.response_bytes_in_flight == 0; }))
          << ads_->stats().response_bytes_in_flight;
    } else {
      // Without the budget every stream's response is held until the stall
      // check cancels it: at the peak, most of them at once (the first may
      // be cancelled before the last are written), several times the budget.
      ASSERT_TRUE(WaitForStats([&](const xds::AdsStats& stats) {
        return stats.response_bytes_in_flight_peak >= kStreams / 2 * kResponseBytes;
      })) << ads_->stats().response_bytes_in_flight_peak;
      ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) {
        return stats.streams_closed_write_stall == kStreams;
      }));
    }
    stalled.Stop();
    TearDown();
  }
}

// The non-reading streams that delayed a reading client's push far
// beyond the write-stall timeout (190 s with the 2 min default): the budget
// was handed out in arrival order, so the reader waited behind every
// non-reader still queued, tried one budget-load per timeout. A stream that
// has completed a write is admitted first, so the reader's push goes out as
// soon as the stall check cancels the writes filling the budget: within the
// timeout plus the check period, however many non-readers wait.
TEST_F(AttackTest, ReadersGetAPushWithinTheStallTimeoutWhateverTheNonReadersQueued) {
  constexpr int kStreams = 40;  // Four fill the budget: ten timeouts to try every stream.
  constexpr int64_t kResponseBytes = 256 << 10;
  StartWithSmallBudget(BigCluster(kResponseBytes));

  // The reader holds the cluster before the attack.
  std::unique_ptr<SotwStream> reader;
  DiscoveryResponse first;
  ASSERT_NO_FATAL_FAILURE(OpenReader(kCds, "big", &reader, &first));

  // Streams that never read: four writes fill the budget, the other streams
  // wait for it.
  NonReaders stalled;
  ASSERT_NO_FATAL_FAILURE(OpenNonReaders(kStreams, &stalled));
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) {
    return stats.streams_open == kStreams + 1 && stats.responses_deferred >= kStreams - 8;
  })) << ads_->stats().responses_deferred;

  // The cluster changes: the reader's push waits at most for the writes
  // filling the budget now to be found stalled.
  store_.Publish(
      BuildTestSnapshot(absl::StrReplaceAll(BigCluster(kResponseBytes), {{"p: x", "p: y"}})));
  const absl::Time pushed = absl::Now();
  auto push = reader->Next(kWait);
  const absl::Duration waited = absl::Now() - pushed;
  ASSERT_THAT(push, IsOk());
  EXPECT_NE(push->version_info(), first.version_info());
  // The timeout, a check period and generous slack for a loaded machine;
  // before, about ten timeouts (one budget-load of non-readers each).
  EXPECT_LT(waited, 2 * kStallTimeout + absl::Seconds(3)) << waited;
  EXPECT_GT(ads_->stats().streams_closed_write_stall, 0);

  stalled.Stop();
}

// The probe as it likely ran: the non-readers read their first
// response (small enough for the transport's window, so the write
// completed), then the resource grew and every one of them was pushed a
// response it never reads. They count as readers then, so admitting readers
// first does not help: in arrival order, a reading client's push waited
// behind every one of them, a budget-load per timeout. The budget goes round
// the connections instead, so the non-readers sharing a connection get one
// turn between two of the reader's: its push goes out as soon as the stall
// check cancels the writes filling the budget. The reader watches another
// resource, changed after the non-readers queued, so that its push arrives
// last (the order a single change wakes streams in is the index's); each
// snapshot follows the one before, so a change wakes only its watchers.
TEST_F(AttackTest, ReadersGetAPushWithinTheStallTimeoutWhenNonReadersReadTheirFirstResponse) {
  constexpr int kStreams = 40;  // Four fill the budget: ten timeouts to try every stream.
  constexpr int64_t kResponseBytes = 256 << 10;
  StartWithSmallBudget(BigCluster(64) + Endpoints(1));

  // The reader holds endpoint e-0 before the attack.
  std::unique_ptr<SotwStream> reader;
  DiscoveryResponse first;
  ASSERT_NO_FATAL_FAILURE(OpenReader(kEds, "e-0", &reader, &first));

  // Streams on one connection that take the small cluster "big" (their
  // writes complete without a read) and never read.
  NonReaders stalled;
  ASSERT_NO_FATAL_FAILURE(OpenNonReaders(kStreams, &stalled));
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) {
    return stats.pushes == kStreams + 1 && stats.response_bytes_in_flight == 0;
  })) << ads_->stats().pushes;

  // The cluster grows: four of its pushes fill the budget, the others wait.
  store_.Publish(
      BuildTestSnapshot(BigCluster(kResponseBytes) + Endpoints(1), store_.Current().get()));
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) {
    return stats.responses_deferred >= kStreams - 8;
  })) << ads_->stats().responses_deferred;

  // The reader's endpoint changes: its push waits at most for the writes
  // filling the budget now to be found stalled.
  store_.Publish(
      BuildTestSnapshot(BigCluster(kResponseBytes) +
                            absl::StrReplaceAll(Endpoints(1), {{"port_value: 1", "port_value: 2"}}),
                        store_.Current().get()));
  const absl::Time pushed = absl::Now();
  auto push = reader->Next(kWait);
  const absl::Duration waited = absl::Now() - pushed;
  ASSERT_THAT(push, IsOk());
  EXPECT_NE(push->version_info(), first.version_info());
  // The timeout, a check period and generous slack for a loaded machine;
  // before, about ten timeouts (one budget-load of non-readers each).
  EXPECT_LT(waited, 2 * kStallTimeout + absl::Seconds(3)) << waited;
  EXPECT_GT(ads_->stats().streams_closed_write_stall, 0);

  stalled.Stop();
}

}  // namespace
}  // namespace facet::testing
