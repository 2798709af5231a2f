// The memory budget of ADS responses being written at once, over every
// stream, and the order in which streams waiting for it get it.
#ifndef FACET_XDS_SERVER_ADS_RESPONSE_BUDGET_H_
#define FACET_XDS_SERVER_ADS_RESPONSE_BUDGET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "xds_server/ads/ads_observer.h"
#include "xds_server/ads/fair_queue.h"

namespace facet::xds {

// Bytes of responses being written, within a budget: while it is spent
// (clients that read slowly or not at all), further responses wait until
// writes complete or stalled streams are cancelled. One response is always
// allowed. Waiting streams are resumed one at a time while the budget lasts:
// streams that have completed a write (readers) before streams that have
// not, each class round-robin by connection, so a reader waits for at most
// one response of each other connection waiting, however many streams share
// it. Thread-safe; lock-free unless the budget is spent.
class ResponseBudget {
 public:
  // A stream that may wait for the budget. Owned by a shared_ptr while it
  // may (the budget holds one while it waits).
  class Waiter : public std::enable_shared_from_this<Waiter> {
   public:
    virtual ~Waiter() = default;
    // Called once the budget admits the waiter (on the thread that released
    // bytes, with no budget lock held): it asks Admit again and may write.
    virtual void Resume() = 0;
  };

  // `budget_bytes` zero or less: unlimited. `observer` (not owned) hears of
  // the bytes in flight and of responses deferred; it must outlive this.
  ResponseBudget(int64_t budget_bytes, AdsObserver& observer);
  ~ResponseBudget();

  // Returns whether `waiter` may build a response now. When not, `waiter`
  // is queued under `connection` and resumed once the budget allows:
  // `reader`s first. Called with the waiter's own lock held, at most once
  // before each Resume.
  bool Admit(Waiter& waiter, absl::string_view connection, bool reader);
  // Counts `bytes` of a response being written.
  void Add(int64_t bytes);
  // Returns a written response's bytes and resumes waiting streams while
  // the budget lasts. Called with no lock held.
  void Release(int64_t bytes);

  int64_t in_flight() const { return in_flight_.load(); }

 private:
  const int64_t budget_bytes_;
  AdsObserver& observer_;
  // Bytes of responses being written: counted without a lock (every push
  // and every completed write touches them).
  std::atomic<int64_t> in_flight_{0};
  // A stream is tried at most once before the stall check finds it out.
  // Taken after a stream's own lock, and only once the budget is spent.
  mutable absl::Mutex mu_;
  FairQueue<std::shared_ptr<Waiter>> waiting_readers_ ABSL_GUARDED_BY(mu_);
  FairQueue<std::shared_ptr<Waiter>> waiting_untried_ ABSL_GUARDED_BY(mu_);
  // Streams in both queues, read without the lock by Release.
  std::atomic<size_t> waiting_count_{0};
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_RESPONSE_BUDGET_H_
