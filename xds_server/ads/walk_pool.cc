#include "xds_server/ads/walk_pool.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "absl/synchronization/blocking_counter.h"

namespace facet::xds {

WalkPool::WalkPool(int helpers)
    : helpers_(std::max(helpers, 0)),
      pool_(helpers_ > 0 ? std::make_unique<boost::asio::thread_pool>(helpers_) : nullptr) {}

WalkPool::~WalkPool() {
  if (pool_ != nullptr) pool_->join();
}

void WalkPool::Run(int walkers, const std::function<void(int k, int n)>& walk) {
  const int n = std::clamp(walkers, 1, this->walkers());
  absl::BlockingCounter helped(n - 1);
  for (int k = 1; k < n; ++k) {
    boost::asio::post(*pool_, [&walk, &helped, k, n] {
      walk(k, n);
      helped.DecrementCount();
    });
  }
  walk(0, n);
  helped.Wait();
}

}  // namespace facet::xds
