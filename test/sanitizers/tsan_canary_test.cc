// Checks the ThreadSanitizer build itself (FACET_SANITIZE=thread only): a race
// in Facet code is reported, also in a function called through a
// std::function (left uninstrumented by test/sanitizers/tsan_ignorelist.txt),
// and the synchronization TSan cannot see in Debian's uninstrumented abseil
// (Mutex, Condition, CondVar, Notification) is made visible by
// test/sanitizers/tsan_absl_mutex.cc, so guarded code is not reported. Each
// case runs in a child process (a death test) with its own TSAN_OPTIONS, so
// the deliberate races do not fail the suite: the child exits 66 on a report
// and 0 otherwise.
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace facet::testing {
namespace {

constexpr int kReported = 66;
constexpr int kThreads = 4;
constexpr int kRounds = 1000;

class TsanCanaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    // The child's reports go to its stderr, not to the stage's report files
    // (TSan's runtime also reads UBSAN_OPTIONS, whose log_path the stage
    // sets).
    setenv("TSAN_OPTIONS", "halt_on_error=1:exitcode=66:report_signal_unsafe=0:log_path=stderr", 1);
    unsetenv("UBSAN_OPTIONS");
  }
};

// Runs `body` on kThreads threads at once.
void OnThreads(const std::function<void()>& body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(body);
  for (std::thread& thread : threads) thread.join();
}

// Volatile so that the compiler keeps every access for TSan to see.
void Increment(volatile int* counter) {
  for (int i = 0; i < kRounds; ++i) *counter = *counter + 1;
}

TEST_F(TsanCanaryTest, ReportsAnUnguardedCounter) {
  EXPECT_EXIT(
      {
        volatile int counter = 0;
        OnThreads([&] { Increment(&counter); });
        std::exit(0);
      },
      ::testing::ExitedWithCode(kReported), "data race");
}

TEST_F(TsanCanaryTest, ReportsARaceInAFunctionCalledThroughAStdFunction) {
  EXPECT_EXIT(
      {
        volatile int counter = 0;
        const std::function<void()> body = [&] { Increment(&counter); };
        OnThreads(body);
        std::exit(0);
      },
      ::testing::ExitedWithCode(kReported), "data race");
}

TEST_F(TsanCanaryTest, FollowsAbslMutex) {
  EXPECT_EXIT(
      {
        absl::Mutex mu;
        volatile int counter = 0;
        OnThreads([&] {
          for (int i = 0; i < kRounds; ++i) {
            absl::MutexLock lock(&mu);
            counter = counter + 1;
          }
        });
        std::exit(counter == kThreads * kRounds ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(TsanCanaryTest, FollowsReaderLocks) {
  EXPECT_EXIT(
      {
        absl::Mutex mu;
        volatile int value = 0;
        std::thread writer([&] {
          for (int i = 0; i < kRounds; ++i) {
            absl::MutexLock lock(&mu);
            value = value + 1;
          }
        });
        OnThreads([&] {
          for (int i = 0; i < kRounds; ++i) {
            absl::ReaderMutexLock lock(&mu);
            (void)value;
          }
        });
        writer.join();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// A waiter's Condition reads guarded state while abseil holds the mutex
// internally but TSan has been told it is released (Await) or not yet taken
// (LockWhen): here the waiter evaluates it before the producer's writes, so
// without the annotations every order of the two threads is a race.
constexpr size_t kItems = 3;

// Appends kItems items to `items`, each under `mu`.
void Produce(absl::Mutex* mu, std::vector<int>* items) {
  for (size_t i = 0; i < kItems; ++i) {
    absl::MutexLock lock(mu);
    items->push_back(static_cast<int>(i));
  }
}

bool HasAll(std::vector<int>* items) { return items->size() == kItems; }

TEST_F(TsanCanaryTest, FollowsAwaitConditions) {
  EXPECT_EXIT(
      {
        absl::Mutex mu;
        std::vector<int> items;
        std::thread producer;
        {
          absl::MutexLock lock(&mu);
          producer = std::thread(Produce, &mu, &items);
          mu.Await(absl::Condition(HasAll, &items));
        }
        producer.join();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(TsanCanaryTest, FollowsLockWhenConditions) {
  EXPECT_EXIT(
      {
        absl::Mutex mu;
        std::vector<int> items;
        std::thread producer(Produce, &mu, &items);
        mu.LockWhen(absl::Condition(HasAll, &items));
        mu.Unlock();
        producer.join();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(TsanCanaryTest, FollowsCondVarAndNotification) {
  EXPECT_EXIT(
      {
        absl::Mutex mu;
        absl::CondVar ready;
        int handed = 0;
        bool set = false;
        std::thread producer([&] {
          absl::MutexLock lock(&mu);
          handed = 42;
          set = true;
          ready.Signal();
        });
        {
          absl::MutexLock lock(&mu);
          while (!set) ready.Wait(&mu);
          handed += 1;
        }
        producer.join();
        int payload = 0;
        absl::Notification done;
        std::thread notifier([&] {
          payload = 7;
          done.Notify();
        });
        done.WaitForNotification();
        payload += 1;
        notifier.join();
        std::exit(handed == 43 && payload == 8 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace facet::testing
