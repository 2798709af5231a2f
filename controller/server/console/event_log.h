// A bounded log of what the ADS server did, for the console's timeline.
#ifndef FACET_CONTROLLER_SERVER_CONSOLE_EVENT_LOG_H_
#define FACET_CONTROLLER_SERVER_CONSOLE_EVENT_LOG_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "xds_server/ads/ads_observer.h"

namespace facet::controller {

// Keeps the last `capacity` events the ADS server reports: each snapshot
// published (with the streams it woke and the responses pushed since the one
// before), each NACK (by type) and each stream the server ended (by reason).
// A push costs one relaxed atomic add; the rest take a short lock. Read with
// Json(after) as /events?after=SEQ. Thread-safe.
class EventLog final : public xds::AdsObserver {
 public:
  static constexpr size_t kDefaultCapacity = 256;

  struct Event {
    uint64_t seq = 0;  // 1, 2, ... in the order added.
    absl::Time time;
    std::string kind;  // "snapshot", "nack", "stream_ended".
    std::string text;
  };

  // `now` is the clock (absl::Now when empty).
  explicit EventLog(size_t capacity = kDefaultCapacity, std::function<absl::Time()> now = nullptr);

  void OnSnapshot(int64_t streams_woken) override;
  void OnPush(absl::string_view type_url) override;
  void OnNack(absl::string_view type_url) override;
  void OnStreamEnding(xds::StreamEndReason reason) override;

  // Returns the kept events with seq > `after`, oldest first.
  std::deque<Event> After(uint64_t after) const;

  // Returns {"events":[{"kind","seq","text","time"}...],"last_seq":N,
  // "pushes_since_snapshot":N} with the events after `after` (keys sorted,
  // times RFC 3339 UTC with milliseconds). "last_seq" lets a caller ask for
  // what is new next time.
  std::string Json(uint64_t after) const;

 private:
  void Add(std::string kind, std::string text);

  const size_t capacity_;
  const std::function<absl::Time()> now_;
  std::atomic<int64_t> pushes_{0};  // Since the last snapshot event.
  mutable absl::Mutex mu_;
  std::deque<Event> events_ ABSL_GUARDED_BY(mu_);
  uint64_t last_seq_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_CONSOLE_EVENT_LOG_H_
