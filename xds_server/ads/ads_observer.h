// What the ADS server reports as it serves, for metrics: events, and changes
// to the gauges it keeps.
#ifndef FACET_XDS_SERVER_ADS_ADS_OBSERVER_H_
#define FACET_XDS_SERVER_ADS_ADS_OBSERVER_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace facet::xds {

// Why the server ends a stream.
enum class StreamEndReason {
  kNamesLimit,                   // StreamState::Limits::max_names.
  kTypesLimit,                   // StreamState::Limits::max_types.
  kBytesLimit,                   // StreamState::Limits::max_bytes.
  kConnectionSubscriptionLimit,  // --max-subscription-bytes-per-connection.
  kServerSubscriptionLimit,      // --max-subscription-bytes.
  kWriteStall,                   // A write did not complete within the write-stall timeout.
  kInvalidRequest,               // A request that does not parse or breaks the protocol.
  kShutdown,                     // AdsService::Drain.
};

// Told what an AdsService does. The metric each call feeds is named beside
// it (AdsStatsCounter keeps them as AdsStats); every method does nothing
// unless overridden.
//
// Threads: called concurrently from gRPC's threads, the write-stall check's
// thread and the publishing thread (OnSnapshot), some calls with a stream's
// lock held. An implementation must be thread-safe, must not block and must
// not call into the AdsService. Counters and gauge changes are deltas, so
// their order across threads does not matter; the calls about one stream
// (opened, ending, closed) arrive in that order.
class AdsObserver {
 public:
  virtual ~AdsObserver() = default;

  // A stream was accepted (facet_xds_streams_total; facet_xds_streams_open
  // until OnStreamClosed). Not called for streams refused while draining.
  virtual void OnStreamOpened() {}
  // The server ends an open stream for `reason`
  // (facet_xds_streams_closed_*_total): at most once per stream, when it
  // decides to, before the client hears of it.
  virtual void OnStreamEnding(StreamEndReason /*reason*/) {}
  // An opened stream is gone, whoever ended it: after its last reaction.
  virtual void OnStreamClosed() {}

  // A snapshot was published to the server (facet_snapshots_published_total)
  // and woke `streams_woken` streams to re-examine names
  // (facet_xds_stream_wakes_total).
  virtual void OnSnapshot(int64_t /*streams_woken*/) {}
  // A response of `type_url` starts being written (facet_xds_pushes_total).
  virtual void OnPush(absl::string_view /*type_url*/) {}
  // A write that carried a published snapshot's change to a stream
  // completed, `since_publish` after the snapshot reached the server (a
  // facet_push_seconds histogram). Reported for every write a stream starts
  // from the wake until it has nothing more due, not for answers to
  // requests on an idle stream.
  virtual void OnPushCompleted(absl::Duration /*since_publish*/) {}
  // A client ACKed a response of `type_url` (facet_xds_acks_total).
  virtual void OnAck(absl::string_view /*type_url*/) {}
  // A client NACKed a response of `type_url` (facet_xds_nacks_total): called
  // once AdsService::nacks() holds the NACK's records.
  virtual void OnNack(absl::string_view /*type_url*/) {}
  // A NACK record was not kept: the NACK log was full
  // (facet_xds_nack_records_dropped_total).
  virtual void OnNackRecordDropped() {}
  // A NACK's error detail was cut to its bound
  // (facet_xds_nack_details_truncated_total).
  virtual void OnNackDetailTruncated() {}
  // A response waited for the response memory budget
  // (facet_xds_responses_deferred_total).
  virtual void OnResponseDeferred() {}

  // Gauges, each reported as a change (positive or negative) from its
  // value before; they start at zero.
  // facet_xds_subscription_memory_bytes: what the subscriptions of every
  // stream hold (StreamState::SubscriptionMemory).
  virtual void OnSubscriptionMemoryChange(int64_t /*bytes*/) {}
  // facet_xds_response_bytes_in_flight: bytes of responses being written.
  virtual void OnResponseBytesInFlightChange(int64_t /*bytes*/) {}
  // facet_xds_nack_detail_bytes: bytes of NACK error details kept, each
  // once however many records share it.
  virtual void OnNackDetailBytesChange(int64_t /*bytes*/) {}
  // facet_xds_streams_by_authority{authority}: streams holding at least one
  // resource of `authority` ("" for old-style names). A label whose count
  // returns to zero is one no stream holds.
  virtual void OnStreamsByAuthorityChange(const std::string& /*authority*/, int64_t /*streams*/) {}
};

// Forwards every call to `first` and, when set, to `second`. Thread-safe
// when they are.
class AdsObserverPair final : public AdsObserver {
 public:
  // Neither is owned; both must outlive this.
  AdsObserverPair(AdsObserver& first, AdsObserver* second) : first_(first), second_(second) {}

  void OnStreamOpened() override;
  void OnStreamEnding(StreamEndReason reason) override;
  void OnStreamClosed() override;
  void OnSnapshot(int64_t streams_woken) override;
  void OnPush(absl::string_view type_url) override;
  void OnPushCompleted(absl::Duration since_publish) override;
  void OnAck(absl::string_view type_url) override;
  void OnNack(absl::string_view type_url) override;
  void OnNackRecordDropped() override;
  void OnNackDetailTruncated() override;
  void OnResponseDeferred() override;
  void OnSubscriptionMemoryChange(int64_t bytes) override;
  void OnResponseBytesInFlightChange(int64_t bytes) override;
  void OnNackDetailBytesChange(int64_t bytes) override;
  void OnStreamsByAuthorityChange(const std::string& authority, int64_t streams) override;

 private:
  AdsObserver& first_;
  AdsObserver* const second_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_ADS_OBSERVER_H_
