#include "xds_server/ads/writes_in_flight.h"

#include <utility>
#include <vector>

namespace facet::xds {

void WritesInFlight::Started(uint64_t id, absl::Time started, std::shared_ptr<Writer> writer) {
  absl::MutexLock lock(&mu_);
  writes_.insert_or_assign(id, Write{started, std::move(writer)});
}

void WritesInFlight::Ended(uint64_t id) {
  std::shared_ptr<Writer> last;  // Released outside the lock: it may be the stream's last owner.
  absl::MutexLock lock(&mu_);
  auto it = writes_.find(id);
  if (it == writes_.end()) return;
  last = std::move(it->second.writer);
  writes_.erase(it);
}

size_t WritesInFlight::CancelStalled(absl::Time limit) {
  std::vector<std::shared_ptr<Writer>> stalled;
  size_t looked_at = 0;
  {
    absl::MutexLock lock(&mu_);
    looked_at = writes_.size();
    for (const auto& [id, write] : writes_) {
      if (write.started < limit) stalled.push_back(write.writer);
    }
  }
  // No lock held: a cancel may run the stream's reactions on this thread.
  for (const auto& writer : stalled) writer->CancelIfStalled(limit);
  return looked_at;
}

size_t WritesInFlight::size() const {
  absl::MutexLock lock(&mu_);
  return writes_.size();
}

}  // namespace facet::xds
