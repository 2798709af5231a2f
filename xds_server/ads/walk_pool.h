// Threads that share a walk with its caller: a snapshot's pushes to
// thousands of streams, split among the walkers.
#ifndef FACET_XDS_SERVER_ADS_WALK_POOL_H_
#define FACET_XDS_SERVER_ADS_WALK_POOL_H_

#include <functional>
#include <memory>

namespace boost::asio {
class thread_pool;
}  // namespace boost::asio

namespace facet::xds {

// Runs a walk on the calling thread and up to `helpers` threads of its own
// (boost::asio's thread_pool), started once. Thread-safe; walks from
// several callers share the helpers.
class WalkPool {
 public:
  // `helpers` zero or less: every walk runs on its caller alone.
  explicit WalkPool(int helpers);
  ~WalkPool();  // Waits for walks in progress.
  WalkPool(const WalkPool&) = delete;
  WalkPool& operator=(const WalkPool&) = delete;

  // Walkers a walk may have: the caller and the helpers.
  int walkers() const { return helpers_ + 1; }

  // Calls walk(k, n) once for each k in [0, n), n = min(walkers, walkers()),
  // walk(0, n) on the calling thread and the others on helpers, and returns
  // once every one has returned. `walkers` below 1 counts as 1.
  void Run(int walkers, const std::function<void(int k, int n)>& walk);

 private:
  const int helpers_;
  std::unique_ptr<boost::asio::thread_pool> pool_;  // Null without helpers.
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_WALK_POOL_H_
