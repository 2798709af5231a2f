// The load benchmark's null ADS server: the least work a server can do to
// deliver the world's resources and one change, to measure Facet against. It
// answers each subscription request with a response serialized once per
// distinct subscription and shared by every stream, ignores ACKs and NACKs,
// and on PushEdit() writes one shared, pre-serialized response with the
// edited route to every open stream (one write in flight per stream); the
// next PushEdit() writes the route as it was, and so on, alternating.
#ifndef FACET_TEST_LOAD_NULL_ADS_SERVICE_H_
#define FACET_TEST_LOAD_NULL_ADS_SERVICE_H_

#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/support/byte_buffer.h"

namespace facet::load {

// Thread-safe. Streams are gRPC callback reactors; PushEdit may be called from
// any thread. Must outlive the server it is registered with.
class NullAdsService final : public grpc::CallbackGenericService {
 public:
  struct Options {
    // Services of the world, for wildcard Listener and Cluster subscriptions.
    int services = 1;
    // Whether PushEdit writes only to streams whose parameters select the
    // edited route variant (node metadata, or a locator's dynamic
    // parameters), rather than to every stream subscribed to routes.
    bool push_selected_only = false;
  };

  // The two responses for one subscription, serialized once.
  struct Responses {
    grpc::ByteBuffer initial;
    grpc::ByteBuffer edited;  // The same, with the edited route; version and nonce "2".
  };

  explicit NullAdsService(Options options);

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override;

  // Queues the edited response (on the first call, the third, ...; the
  // original one on the second, ...) for every open stream that subscribed to
  // routes (and, with push_selected_only, selects the edited variant). Returns
  // how many streams it queued a write for.
  int PushEdit();

 private:
  class Stream;

  // Returns the responses for a subscription of `type_url` to `names`
  // (empty: wildcard), building and caching them on first use. Null for a type
  // URL the world has no resources of.
  std::shared_ptr<const Responses> ResponsesFor(bool delta, const std::string& type_url,
                                                const std::set<std::string>& names)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Register(Stream* stream);
  void Unregister(Stream* stream);

  const Options options_;
  absl::Mutex mu_;
  // Streams between their first request and OnDone. PushEdit holds mu_ while
  // it queues writes, so a stream cannot be deleted meanwhile.
  std::set<Stream*> streams_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const Responses>> cache_ ABSL_GUARDED_BY(mu_);
  int pushes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace facet::load

#endif  // FACET_TEST_LOAD_NULL_ADS_SERVICE_H_
