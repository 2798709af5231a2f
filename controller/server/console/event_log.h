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
// before), each NACK (by type) and each stream the server ended (by reason);
// and what the source reports: rejected objects, objects accepted again,
// manifest files that stop or start parsing. A push costs one relaxed atomic
// add; the rest take a short lock. Read with Json(after) as
// /events?after=SEQ. Thread-safe.
class EventLog final : public xds::AdsObserver {
 public:
  static constexpr size_t kDefaultCapacity = 256;

  struct Event {
    uint64_t seq = 0;  // 1, 2, ... in the order added.
    absl::Time time;
    // "snapshot", "nack", "stream_ended", "rejected", "accepted",
    // "unparsed", "parsed".
    std::string kind;
    std::string text;
    // Rejections: the object ("namespace/name"), the first error's field
    // ("" for the whole object) and message, and when the rejection began;
    // files: the path and the parse error. Empty (InfinitePast) otherwise.
    std::string object;
    std::string file;
    std::string field;
    std::string reason;
    absl::Time since = absl::InfinitePast();
    bool serving_previous = false;
  };

  // `now` is the clock (absl::Now when empty).
  explicit EventLog(size_t capacity = kDefaultCapacity, std::function<absl::Time()> now = nullptr);

  void OnSnapshot(int64_t streams_woken) override;
  void OnPush(absl::string_view type_url) override;
  void OnNack(absl::string_view type_url) override;
  void OnStreamEnding(xds::StreamEndReason reason) override;

  // Records that the latest revision of `object` is rejected (for `field`:
  // `reason`) since `since`, with its previous revision serving or not.
  void OnRejected(absl::string_view object, absl::string_view field, absl::string_view reason,
                  bool serving_previous, absl::Time since);
  // Records that `object`, rejected before, is accepted again.
  void OnAccepted(absl::string_view object);
  // Records that the file `path` stopped parsing (`problem` set) or parses
  // again (`problem` empty).
  void OnFileRead(absl::string_view path, absl::string_view problem);

  // Returns the kept events with seq > `after`, oldest first.
  std::deque<Event> After(uint64_t after) const;

  // Returns {"events":[{"kind","seq","text","time"}...],"last_seq":N,
  // "pushes_since_snapshot":N} with the events after `after` (keys sorted,
  // times RFC 3339 UTC with milliseconds); a rejection adds "object",
  // "field", "reason", "serving_previous" and "since", a file "file" (and
  // "reason" when it stopped parsing). "last_seq" lets a caller ask for
  // what is new next time.
  std::string Json(uint64_t after) const;

 private:
  void Add(std::string kind, std::string text);
  void Add(Event event);  // Sets its seq and time.

  const size_t capacity_;
  const std::function<absl::Time()> now_;
  std::atomic<int64_t> pushes_{0};  // Since the last snapshot event.
  mutable absl::Mutex mu_;
  std::deque<Event> events_ ABSL_GUARDED_BY(mu_);
  uint64_t last_seq_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_CONSOLE_EVENT_LOG_H_
