#include "xds_server/common/parallel.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
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
  // Every core takes part (one thread where there is one core): each call
  // waits until that many threads have made one.
  const size_t expected = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), 8);
  std::set<std::thread::id> threads;
  std::mutex mu;
  absl::Notification all_in;
  ParallelFor(4096, /*min_per_thread=*/16, [&](size_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      threads.insert(std::this_thread::get_id());
      if (threads.size() == expected && !all_in.HasBeenNotified()) all_in.Notify();
    }
    all_in.WaitForNotificationWithTimeout(absl::Seconds(30));
  });
  EXPECT_EQ(threads.size(), expected);
}

}  // namespace
}  // namespace facet::xds
