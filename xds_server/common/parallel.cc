#include "xds_server/common/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace facet::xds {

void ParallelFor(size_t count, size_t min_per_thread, absl::FunctionRef<void(size_t)> fn) {
  min_per_thread = std::max<size_t>(min_per_thread, 1);
  const size_t threads = std::min<size_t>({std::max(1u, std::thread::hardware_concurrency()), 8,
                                           (count + min_per_thread - 1) / min_per_thread});
  // Threads take runs of neighbouring indices as they become free: runs
  // taken on demand keep the threads equally busy whatever else runs on the
  // machine, and neighbours (the objects of one file) mostly stay on one
  // thread.
  constexpr size_t kRun = 16;
  std::atomic<size_t> next(0);
  auto work = [&] {
    for (size_t start = next.fetch_add(kRun); start < count; start = next.fetch_add(kRun)) {
      const size_t end = std::min(count, start + kRun);
      for (size_t i = start; i < end; ++i) fn(i);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace facet::xds
