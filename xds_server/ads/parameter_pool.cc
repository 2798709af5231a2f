#include "xds_server/ads/parameter_pool.h"

#include <algorithm>
#include <utility>

namespace facet::xds {

std::shared_ptr<const Parameters> ParameterPool::Intern(ParameterSet params) {
  // Made outside the lock: the canonical text is the key.
  auto made = std::make_shared<const Parameters>(std::move(params));
  absl::MutexLock lock(&mu_);
  std::weak_ptr<const Parameters>& entry = entries_[made->canonical];
  if (std::shared_ptr<const Parameters> shared = entry.lock()) return shared;
  entry = made;
  if (entries_.size() >= prune_at_) {
    // Sets no stream holds any more; the next prune waits until the table
    // has doubled, so each Intern pays O(1) of it on average.
    absl::erase_if(entries_, [](const auto& kv) { return kv.second.expired(); });
    prune_at_ = std::max<size_t>(64, 2 * entries_.size());
  }
  return made;
}

size_t ParameterPool::entries() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

ParameterPool& ParameterPool::Shared() {
  static ParameterPool* const pool = new ParameterPool();
  return *pool;
}

}  // namespace facet::xds
