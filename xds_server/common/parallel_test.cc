#include "xds_server/common/parallel.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace facet::xds {
namespace {

TEST(ParallelForTest, CallsEveryIndexOnce) {
  for (size_t count : {0u, 1u, 7u, 1000u}) {
    std::vector<std::atomic<int>> calls(count);
    ParallelFor(count, /*min_per_thread=*/4, [&](size_t i) { calls[i]++; });
    for (size_t i = 0; i < count; ++i) EXPECT_EQ(calls[i].load(), 1) << count << " " << i;
  }
}

TEST(ParallelForTest, SmallBatchesStayOnTheCallingThread) {
  std::set<std::thread::id> threads;
  std::mutex mu;
  ParallelFor(10, /*min_per_thread=*/256, [&](size_t) {
    std::lock_guard<std::mutex> lock(mu);
    threads.insert(std::this_thread::get_id());
  });
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(*threads.begin(), std::this_thread::get_id());
}

TEST(ParallelForTest, LargeBatchesUseTheCores) {
  std::set<std::thread::id> threads;
  std::mutex mu;
  ParallelFor(4096, /*min_per_thread=*/16, [&](size_t) {
    std::lock_guard<std::mutex> lock(mu);
    threads.insert(std::this_thread::get_id());
  });
  // Every core takes part (one thread where there is one core).
  EXPECT_EQ(threads.size(), std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), 8));
}

}  // namespace
}  // namespace facet::xds
