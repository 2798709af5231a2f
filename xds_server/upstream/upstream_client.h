// The relay's client side: one ADS stream to one upstream xDS server at a
// time (the first of an ordered list that answers), carrying TP2 resource
// locator subscriptions, with reconnection, backoff and failover.
#ifndef FACET_XDS_SERVER_UPSTREAM_UPSTREAM_CLIENT_H_
#define FACET_XDS_SERVER_UPSTREAM_UPSTREAM_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "envoy/config/core/v3/base.pb.h"
#include "xds_server/constraints/constraints.h"

namespace facet::xds {

// One server of an ordered failover list (A47 bootstrap `xds_servers` entry).
struct UpstreamServer {
  std::string server_uri;
  // "insecure" or "tls"; the first supported entry of the bootstrap's
  // channel_creds list.
  std::string channel_creds = "insecure";
  // With "tls" (gRFC A65's config): PEM files, re-read when they change. The
  // CA the server's certificate must chain to (empty: the system roots), and
  // the client's own certificate and key (both empty: none sent).
  std::string tls_ca_certificate_file;
  std::string tls_certificate_file;
  std::string tls_private_key_file;
  std::vector<std::string> server_features;
};

// One resource variant as an upstream sent it (the TP2 Resource wrapper
// decoded).
struct UpstreamVariant {
  std::string name;  // resource_name.name (or Resource.name), as sent.
  Constraint constraints;
  std::string version;
  std::string serialized;  // The resource message bytes (the Any's value).
};

// A variant or a subscription the upstream withdrew: removed_resource_names
// (name and constraints) or removed_resources (name, unconstrained).
struct UpstreamRemoval {
  std::string name;
  Constraint constraints;
};

// What one upstream response said, applied by the listener as one
// transaction.
struct UpstreamUpdate {
  std::string type_url;
  std::vector<UpstreamVariant> variants;
  std::vector<UpstreamRemoval> removals;
  // SotW responses of listener and cluster types list every subscribed
  // resource of the type: a subscription no variant in `variants` matches
  // does not exist. False for delta and for other SotW types.
  bool full_state = false;
  int server_index = 0;  // Which server of the list sent it.
};

// One subscription: a resource locator (name plus dynamic parameters).
struct UpstreamSubscription {
  std::string type_url;
  std::string name;
  ParameterSet params;
};

struct UpstreamClientStats {
  bool connected = false;  // A stream is open and has received a response.
  int server_index = -1;   // The server of the open stream, -1 when none.
  int64_t streams_started = 0;
  int64_t reconnects = 0;  // Streams started after the first.
  int64_t failovers = 0;   // Moves to another server of the list.
  int64_t responses = 0;
  int64_t requests_sent = 0;  // Requests written (subscriptions, ACKs, NACKs).
  int64_t nacks_sent = 0;
  int64_t subscriptions = 0;  // Locators subscribed now.
};

// Owns its streams and a thread for backoff timers. Thread-safe; the
// listener is called from gRPC threads, one call at a time, never with the
// client's lock held.
class UpstreamClient {
 public:
  enum class Protocol { kDelta, kSotw };

  class Listener {
   public:
    virtual ~Listener() = default;
    // Applies one response. An error NACKs it upstream with the status
    // message as error_detail (the response is then not applied). A response
    // that does not decode (a resource of another type or whose bytes do not
    // parse, constraints that do not compile) is NACKed without a call.
    virtual absl::Status OnUpdate(const UpstreamUpdate& update) = 0;
    // A stream to server `server_index` opened (after its first response) or
    // ended. After a reconnection every subscription is sent again and the
    // upstream answers them all again.
    virtual void OnConnected(int server_index) = 0;
    virtual void OnDisconnected(int server_index, const absl::Status& status) = 0;
  };

  struct Options {
    Protocol protocol = Protocol::kDelta;
    // The node, sent on the first request of each type on every stream (so
    // on each stream's first request), with the client feature
    // xds.config.resource-in-sotw added: Facet's server then wraps every SotW
    // resource in Resource.
    envoy::config::core::v3::Node node;
    // Reconnection backoff (exponential with jitter, as gRPC's connection
    // backoff), reset once a stream has received a response.
    absl::Duration initial_backoff = absl::Milliseconds(100);
    absl::Duration max_backoff = absl::Seconds(10);
    // A server that has not answered this long after a stream started is
    // given up for the next one in the list. Also the time one connection
    // attempt gets (up to the server's HTTP/2 SETTINGS).
    absl::Duration failover_timeout = absl::Seconds(5);
    // Largest response accepted, in bytes (gRPC's receive limit on each
    // channel): a larger one ends the stream with RESOURCE_EXHAUSTED.
    int max_receive_bytes = 64 << 20;
  };

  // Connects lazily: the first stream opens with the first subscription.
  // `servers` must not be empty; `listener` must outlive the client. A
  // server whose channel_creds is neither "insecure" nor "tls" is skipped as
  // if unreachable.
  UpstreamClient(std::vector<UpstreamServer> servers, Options options, Listener& listener);
  // Cancels the stream and blocks until its reactor is gone and the timer
  // thread joined; the listener is not called once it returns. Must not be
  // called from the listener.
  ~UpstreamClient();
  UpstreamClient(const UpstreamClient&) = delete;
  UpstreamClient& operator=(const UpstreamClient&) = delete;

  // Adds or removes one locator subscription (idempotent). Sent on the open
  // stream (delta: resource_locators_subscribe / _unsubscribe; SotW: the
  // type's full locator list) and on every stream opened later.
  void Subscribe(const UpstreamSubscription& subscription);
  void Unsubscribe(const UpstreamSubscription& subscription);

  UpstreamClientStats stats() const;
  const std::vector<UpstreamServer>& servers() const;

 private:
  class Core;
  std::shared_ptr<Core> core_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_UPSTREAM_UPSTREAM_CLIENT_H_
