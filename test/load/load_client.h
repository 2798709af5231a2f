// The load benchmark's client side: N ADS streams (SotW or delta) over C
// separate HTTP/2 connections to one server, each subscribing and ACKing the
// way a gRPC client does, and recording when it first holds every subscribed
// type and when a watched resource arrives in a new version.
#ifndef FACET_TEST_LOAD_LOAD_CLIENT_H_
#define FACET_TEST_LOAD_LOAD_CLIENT_H_

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "xds_server/common/backoff.h"

namespace facet::load {

// One subscription request of each stream: a type URL and the names
// subscribed (empty: the whole type, as a wildcard).
struct Subscription {
  std::string type_url;
  std::vector<std::string> names;
};

struct LoadOptions {
  // The server, 127.0.0.1:PORT.
  std::string address;
  int connections = 1;
  bool delta = false;
  // Send each stream's parameters as resource locators' dynamic parameters
  // rather than as node metadata.
  bool locators = false;
  // Advertise xds.config.resource-in-sotw, as gRPC C++ does (a server may
  // then send SotW resources in Resource wrappers); false: as grpc-js does.
  bool resource_in_sotw = true;
  std::vector<Subscription> subscriptions;
  // The resource whose new version is measured.
  std::string watched_type_url;
  std::string watched_name;
  // Reopen a stream that ends (other than at Shutdown) after a wait of
  // `backoff`, reset once a stream has had a response, as gRPC's xDS client
  // does; its channel reconnects when the new stream needs it. False: a
  // stream that ends is a failure.
  bool reconnect = false;
  xds::ConnectionBackoff::Params backoff;
  // Seeds the backoff's jitter.
  uint32_t seed = 1;
};

// One stream: its dynamic parameters, and whether it should receive the
// watched resource in a new version after the change.
struct StreamPlan {
  std::map<std::string, std::string> params;
  bool expects_edit = false;
};

// What the streams saw of the change.
struct EditResults {
  // Time from the trigger to arrival, for each stream that expects the edit
  // and received it, sorted.
  std::vector<absl::Duration> latencies;
  int expected = 0;
  // Streams that received a new version without expecting one.
  int unexpected = 0;
};

// When the streams ended and came back (with LoadOptions::reconnect).
struct ReconnectResults {
  // When streams ended other than at Shutdown, in order.
  std::vector<absl::Time> ended;
  // When each reopening was due (its end plus the backoff drawn), in order.
  std::vector<absl::Time> attempts;
  // How much later than due the most belated reopening was started (the
  // client's own lag when many are due at once).
  absl::Duration max_start_lag;
  // Per stream, when a reopened stream of it first synced.
  std::vector<std::optional<absl::Time>> resynced;
};

// Thread-safe. Owns the channels, the streams and (with reconnect) a thread
// that reopens them; the destructor cancels every stream and waits for them.
class LoadClient {
 public:
  LoadClient(LoadOptions options, std::vector<StreamPlan> plans);
  LoadClient(const LoadClient&) = delete;
  LoadClient& operator=(const LoadClient&) = delete;
  ~LoadClient();

  // Opens options.connections channels, each a separate connection, and waits
  // until each is connected. Unavailable if one is not by `deadline`.
  absl::Status Connect(absl::Time deadline);

  // Opens every stream (round-robin over the channels) and waits until each
  // has received a response for each of its subscriptions. Returns the time
  // from opening the first stream to the last one's sync. DeadlineExceeded
  // (naming how many synced) at `deadline`; Unavailable if a stream ends.
  absl::StatusOr<absl::Duration> OpenAndSync(absl::Time deadline);

  // Waits until every stream that expects edits has received the watched
  // resource in its (change+1)-th new version (change 0: the first). Returns
  // false at `deadline` or once a stream has ended.
  bool WaitForChange(int change, absl::Time deadline);

  // Returns what the streams saw of change `change`, triggered at `trigger`.
  EditResults Edits(int change, absl::Time trigger) const;

  // Waits until every stream has ended and been reopened and synced again.
  // False at `deadline`.
  bool WaitForResync(absl::Time deadline);

  // Returns when streams ended and came back so far.
  ReconnectResults Reconnections() const;

  // Returns, per stream, how many responses carried the watched resource after
  // the one it synced with (in any version: a repeated version counts too).
  std::vector<int> WatchedPushes() const;

  // Returns a description of the first stream that ended, if any ended.
  std::string FirstFailure() const;

  // Cancels every stream and waits for them to finish, until `deadline`.
  // Streams still running then are abandoned (leaked) rather than destroyed.
  void Shutdown(absl::Time deadline);

 private:
  class Stream;
  template <typename Request, typename Response>
  class Reactor;

  // Returns a new stream `index` of the protocol in options_ (not started).
  std::unique_ptr<Stream> NewStream(int index, int generation);

  // Called by streams: OnSynced and OnDone once each, OnEdited for each new
  // version of the watched resource (`change` counts them from 0).
  // `generation` counts the reopenings of stream `index`.
  void OnSynced(int index, int generation);
  void OnEdited(bool expected, int change);
  void OnDone(int index, const grpc::Status& status, bool responded);

  // With reconnect: starts the streams whose backoff is over, until Shutdown.
  void ReopenLoop();

  const LoadOptions options_;
  const std::vector<StreamPlan> plans_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<envoy::service::discovery::v3::AggregatedDiscoveryService::Stub>>
      stubs_;
  std::vector<std::unique_ptr<Stream>> streams_;  // The first of each index.
  std::thread reopener_;

  mutable absl::Mutex mu_;
  int synced_ ABSL_GUARDED_BY(mu_) = 0;
  // Per change: the streams expecting edits that have received it.
  std::map<int, int> edited_expected_ ABSL_GUARDED_BY(mu_);
  int started_ ABSL_GUARDED_BY(mu_) = 0;  // Streams started, reopened ones too.
  int done_ ABSL_GUARDED_BY(mu_) = 0;
  int failed_ ABSL_GUARDED_BY(mu_) = 0;  // Ended and not to be reopened.
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::string first_failure_ ABSL_GUARDED_BY(mu_);
  // With reconnect: each index's backoff, its streams after the first, and
  // when the next one is due.
  std::mt19937 jitter_ ABSL_GUARDED_BY(mu_);
  std::vector<xds::ConnectionBackoff> backoffs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Stream>> reopened_ ABSL_GUARDED_BY(mu_);
  std::multimap<absl::Time, int> due_ ABSL_GUARDED_BY(mu_);
  std::vector<int> generations_ ABSL_GUARDED_BY(mu_);
  int resynced_count_ ABSL_GUARDED_BY(mu_) = 0;
  ReconnectResults reconnections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace facet::load

#endif  // FACET_TEST_LOAD_LOAD_CLIENT_H_
