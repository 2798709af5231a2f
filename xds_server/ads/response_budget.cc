#include "xds_server/ads/response_budget.h"

namespace facet::xds {

ResponseBudget::ResponseBudget(int64_t budget_bytes, AdsObserver& observer)
    : budget_bytes_(budget_bytes), observer_(observer) {}

ResponseBudget::~ResponseBudget() {
  // Streams waiting at the end were queued on gRPC's threads: emptied under
  // the lock they were queued under, which orders the two visibly to
  // ThreadSanitizer.
  absl::MutexLock lock(&mu_);
  while (!waiting_readers_.empty()) waiting_readers_.Pop();
  while (!waiting_untried_.empty()) waiting_untried_.Pop();
}

bool ResponseBudget::Admit(Waiter& waiter, absl::string_view connection, bool reader) {
  if (budget_bytes_ <= 0 || in_flight_.load() < budget_bytes_) return true;
  absl::MutexLock lock(&mu_);
  const size_t waiting = waiting_readers_.size() + waiting_untried_.size();
  waiting_count_.store(waiting + 1);
  // A write that completed since the first look may have found no stream
  // waiting (it reads waiting_count_ after it releases its bytes, this reads
  // the bytes after it counts itself in): look again before waiting.
  if (in_flight_.load() < budget_bytes_) {
    waiting_count_.store(waiting);
    return true;
  }
  (reader ? waiting_readers_ : waiting_untried_).Push(connection, waiter.shared_from_this());
  observer_.OnResponseDeferred();
  return false;
}

void ResponseBudget::Add(int64_t bytes) {
  in_flight_.fetch_add(bytes);
  observer_.OnResponseBytesInFlightChange(bytes);
}

void ResponseBudget::Release(int64_t bytes) {
  in_flight_.fetch_sub(bytes);
  observer_.OnResponseBytesInFlightChange(-bytes);
  if (waiting_count_.load() == 0) return;
  // One stream at a time, each admitted (or not) before the next is looked
  // at: O(1) per resumed stream. Readers first: a stream that never
  // completed a write gets the budget only when no reader waits. Within
  // each, connections take turns.
  while (true) {
    std::shared_ptr<Waiter> next;
    {
      absl::MutexLock lock(&mu_);
      auto& queue = waiting_readers_.empty() ? waiting_untried_ : waiting_readers_;
      if (queue.empty() || in_flight_.load() >= budget_bytes_) return;
      next = queue.Pop();
      waiting_count_.store(waiting_readers_.size() + waiting_untried_.size());
    }
    next->Resume();  // No lock held: it may write.
  }
}

}  // namespace facet::xds
