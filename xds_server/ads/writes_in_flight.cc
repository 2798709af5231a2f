#include "xds_server/ads/writes_in_flight.h"

#include <utility>
#include <vector>

namespace facet::xds {

void WritesInFlight::Started(uint64_t id, absl::Time started, std::shared_ptr<Writer> writer) {
  Shard& shard = ShardOf(id);
  absl::MutexLock lock(&shard.mu);
  shard.writes.insert_or_assign(id, Write{started, std::move(writer)});
}

void WritesInFlight::Ended(uint64_t id) {
  std::shared_ptr<Writer> last;  // Released outside the lock: it may be the stream's last owner.
  Shard& shard = ShardOf(id);
  absl::MutexLock lock(&shard.mu);
  auto it = shard.writes.find(id);
  if (it == shard.writes.end()) return;
  last = std::move(it->second.writer);
  shard.writes.erase(it);
}

size_t WritesInFlight::CancelStalled(absl::Time limit) {
  std::vector<std::shared_ptr<Writer>> stalled;
  size_t looked_at = 0;
  for (Shard& shard : shards_) {
    absl::MutexLock lock(&shard.mu);
    looked_at += shard.writes.size();
    for (const auto& [id, write] : shard.writes) {
      if (write.started < limit) stalled.push_back(write.writer);
    }
  }
  // No lock held: a cancel may run the stream's reactions on this thread.
  for (const auto& writer : stalled) writer->CancelIfStalled(limit);
  return looked_at;
}

size_t WritesInFlight::size() const {
  size_t size = 0;
  for (const Shard& shard : shards_) {
    absl::MutexLock lock(&shard.mu);
    size += shard.writes.size();
  }
  return size;
}

}  // namespace facet::xds
