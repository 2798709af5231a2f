#include "xds_server/ads/walk_pool.h"

#include <algorithm>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::xds {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// What one Run saw: each walker's (k, n) and whether it ran on the caller.
struct Seen {
  absl::Mutex mu;
  std::vector<std::pair<int, int>> walks;
  std::set<std::thread::id> threads;
  int on_caller_k = -1;
  int on_caller_walks = 0;
};

void RunAndRecord(WalkPool& pool, int walkers, Seen& seen) {
  const std::thread::id caller = std::this_thread::get_id();
  pool.Run(walkers, [&](int k, int n) {
    absl::MutexLock lock(&seen.mu);
    seen.walks.emplace_back(k, n);
    seen.threads.insert(std::this_thread::get_id());
    if (std::this_thread::get_id() == caller) {
      seen.on_caller_k = k;
      ++seen.on_caller_walks;
    }
  });
  std::sort(seen.walks.begin(), seen.walks.end());
}

TEST(WalkPoolTest, EveryWalkerWalksOnceTheFirstOnTheCallerTheOthersOnHelpers) {
  WalkPool pool(2);
  EXPECT_EQ(pool.walkers(), 3);
  Seen seen;
  RunAndRecord(pool, 3, seen);
  EXPECT_THAT(seen.walks, ElementsAre(Pair(0, 3), Pair(1, 3), Pair(2, 3)));
  // The caller walks once (a helper done early may take a second walk).
  EXPECT_GE(seen.threads.size(), 2u);
  EXPECT_EQ(seen.on_caller_k, 0);
  EXPECT_EQ(seen.on_caller_walks, 1);
}

TEST(WalkPoolTest, AWalkHasTheWalkersAskedForWithinOneAndThePoolsWalkers) {
  struct Case {
    int helpers;
    int asked;
    int walkers;
  };
  for (const Case& c : {Case{1, 5, 2}, Case{1, 0, 1}, Case{0, 4, 1}, Case{3, 2, 2}}) {
    WalkPool pool(c.helpers);
    EXPECT_EQ(pool.walkers(), c.helpers + 1);
    Seen seen;
    RunAndRecord(pool, c.asked, seen);
    std::vector<std::pair<int, int>> want;
    for (int k = 0; k < c.walkers; ++k) want.emplace_back(k, c.walkers);
    EXPECT_EQ(seen.walks, want) << c.helpers << " helpers, " << c.asked << " asked";
    EXPECT_EQ(seen.on_caller_k, 0);
    EXPECT_EQ(seen.on_caller_walks, 1);
  }
}

TEST(WalkPoolTest, RunReturnsOnlyOnceEveryWalkerHasReturned) {
  WalkPool pool(3);
  absl::Mutex mu;
  int done = 0;
  pool.Run(4, [&](int k, int) {
    if (k != 0) absl::SleepFor(absl::Milliseconds(20 * k));  // Helpers finish after the caller.
    absl::MutexLock lock(&mu);
    ++done;
  });
  absl::MutexLock lock(&mu);
  EXPECT_EQ(done, 4);
}

TEST(WalkPoolTest, WalksFromSeveralCallersAtOnceEachComplete) {
  WalkPool pool(2);
  constexpr int kCallers = 4;
  std::vector<int> walked(kCallers, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&pool, &walked, c] {
      for (int round = 0; round < 50; ++round) {
        absl::Mutex mu;
        int n_seen = 0;
        pool.Run(3, [&](int, int) {
          absl::MutexLock lock(&mu);
          ++n_seen;
        });
        absl::MutexLock lock(&mu);
        walked[c] += n_seen;
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(walked[c], 150) << c;
}

}  // namespace
}  // namespace facet::xds
