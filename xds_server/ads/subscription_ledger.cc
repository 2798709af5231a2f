#include "xds_server/ads/subscription_ledger.h"

#include "absl/strings/str_cat.h"

namespace facet::xds {

SubscriptionLedger::SubscriptionLedger(int64_t max_per_connection, int64_t max_in_all,
                                       AdsObserver& observer)
    : max_per_connection_(max_per_connection), max_in_all_(max_in_all), observer_(observer) {}

SubscriptionLedger::~SubscriptionLedger() {
  // Streams charged and returned memory on gRPC's threads, under mu_: freed
  // under it, which orders their last change before this visibly to
  // ThreadSanitizer.
  absl::MutexLock lock(&mu_);
  by_connection_.clear();
}

absl::Status SubscriptionLedger::Take(const std::string& connection, int64_t bytes,
                                      RequestOutcome::Limit* limit) {
  {
    absl::MutexLock lock(&mu_);
    auto it = by_connection_.find(connection);
    const int64_t on_connection = it == by_connection_.end() ? 0 : it->second;
    if (max_per_connection_ > 0 && on_connection + bytes > max_per_connection_) {
      *limit = RequestOutcome::Limit::kConnectionMemory;
      return absl::ResourceExhaustedError(absl::StrCat(
          "the request would take the subscriptions of connection ", connection, " beyond ",
          max_per_connection_, " bytes of memory (--max-subscription-bytes-per-connection)"));
    }
    if (max_in_all_ > 0 && in_all_ + bytes > max_in_all_) {
      *limit = RequestOutcome::Limit::kServerMemory;
      return absl::ResourceExhaustedError(
          absl::StrCat("the request would take the subscriptions of all streams beyond ",
                       max_in_all_, " bytes of memory (--max-subscription-bytes)"));
    }
    by_connection_[connection] = on_connection + bytes;
    in_all_ += bytes;
  }
  observer_.OnSubscriptionMemoryChange(bytes);
  return absl::OkStatus();
}

void SubscriptionLedger::Adjust(const std::string& connection, int64_t bytes) {
  {
    absl::MutexLock lock(&mu_);
    in_all_ += bytes;
    auto [it, inserted] = by_connection_.try_emplace(connection, 0);
    it->second += bytes;
    if (it->second == 0) by_connection_.erase(it);
  }
  observer_.OnSubscriptionMemoryChange(bytes);
}

int64_t SubscriptionLedger::charged(const std::string& connection) const {
  absl::MutexLock lock(&mu_);
  auto it = by_connection_.find(connection);
  return it == by_connection_.end() ? 0 : it->second;
}

int64_t SubscriptionLedger::charged() const {
  absl::MutexLock lock(&mu_);
  return in_all_;
}

}  // namespace facet::xds
