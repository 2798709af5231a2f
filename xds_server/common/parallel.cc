#include "xds_server/common/parallel.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace facet::xds {

void ParallelFor(size_t count, size_t min_per_thread, absl::FunctionRef<void(size_t)> fn) {
  const size_t threads = std::min<size_t>({std::max(1u, std::thread::hardware_concurrency()), 8,
                                           (count + min_per_thread - 1) / std::max<size_t>(min_per_thread, 1)});
  auto work = [&](size_t first) {
    for (size_t i = first; i < count; i += std::max<size_t>(threads, 1)) fn(i);
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work, t);
  work(0);
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace facet::xds
