#include "xds_server/ads/walk_pool.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <mutex>

namespace facet::xds {

WalkPool::WalkPool(int helpers)
    : helpers_(std::max(helpers, 0)),
      pool_(helpers_ > 0 ? std::make_unique<boost::asio::thread_pool>(helpers_) : nullptr) {}

WalkPool::~WalkPool() {
  if (pool_ != nullptr) pool_->join();
}

void WalkPool::Run(int walkers, const std::function<void(int k, int n)>& walk) {
  const int n = std::clamp(walkers, 1, this->walkers());
  // A plain mutex and condition variable (not absl's BlockingCounter): what
  // each helper wrote is then ordered before the return visibly to
  // ThreadSanitizer, whose view of Debian's uninstrumented abseil misses the
  // counter's atomics. Notified under the lock: the caller cannot return, and
  // free them, before the last helper lets go.
  std::mutex mu;
  std::condition_variable done;
  int left = n - 1;
  for (int k = 1; k < n; ++k) {
    boost::asio::post(*pool_, [&walk, &mu, &done, &left, k, n] {
      walk(k, n);
      std::lock_guard<std::mutex> lock(mu);
      if (--left == 0) done.notify_one();
    });
  }
  walk(0, n);
  std::unique_lock<std::mutex> lock(mu);
  done.wait(lock, [&left] { return left == 0; });
}

}  // namespace facet::xds
