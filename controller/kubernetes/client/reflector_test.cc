#include "controller/kubernetes/client/reflector.h"

#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "absl/synchronization/mutex.h"
#include "controller/kubernetes/client/backoff.h"
#include "controller/kubernetes/client/object_cache.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_client.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller::kube {
namespace {

using ::facet::testing::FakeClock;
using ::facet::testing::FakeKubeClient;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kCollection[] = "/apis/facet.dev/v1alpha1/xdsresources";

YAML::Node MakeObject(const std::string& ns, const std::string& name, int value = 0) {
  YAML::Node object;
  object["apiVersion"] = "facet.dev/v1alpha1";
  object["kind"] = "XdsResource";
  object["metadata"]["name"] = name;
  if (!ns.empty()) object["metadata"]["namespace"] = ns;
  object["spec"]["value"] = value;
  return object;
}

// "type key final_state_unknown?" for compact assertions.
std::string Describe(const ObjectDelta& delta) {
  const char* type = delta.type == ObjectDelta::Type::kAdded     ? "added"
                     : delta.type == ObjectDelta::Type::kUpdated ? "updated"
                                                                 : "deleted";
  return absl::StrCat(type, " ", delta.key, delta.final_state_unknown ? " (unknown)" : "");
}

// Records on_change calls; tests wait on it.
class ChangeLog {
 public:
  std::function<void(const std::vector<ObjectDelta>&)> Callback() {
    return [this](const std::vector<ObjectDelta>& deltas) {
      absl::MutexLock lock(&mu_);
      ++calls_;
      for (const ObjectDelta& delta : deltas) described_.push_back(Describe(delta));
    };
  }

  // Waits until `condition` holds; it is re-evaluated (on this thread) after
  // every on_change.
  bool WaitUntil(const std::function<bool()>& condition) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (true) {
      const int seen = calls();
      if (condition()) return true;
      absl::MutexLock lock(&mu_);
      auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_ > seen; };
      if (!mu_.AwaitWithDeadline(absl::Condition(&changed), deadline)) return false;
    }
  }
  bool WaitForDeltas(size_t count) {
    absl::MutexLock lock(&mu_);
    auto done = [this, count]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return described_.size() >= count; };
    return mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10));
  }
  bool WaitForCalls(int count) {
    absl::MutexLock lock(&mu_);
    auto done = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_ >= count; };
    return mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10));
  }
  std::vector<std::string> described() {
    absl::MutexLock lock(&mu_);
    return described_;
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  absl::Mutex mu_;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> described_ ABSL_GUARDED_BY(mu_);
};

class ReflectorTest : public ::testing::Test {
 protected:
  Reflector::Options DefaultOptions() {
    Reflector::Options options;
    options.collection_path = kCollection;
    options.clock = &clock_;
    options.random = [] { return 0.0; };
    options.on_change = changes_.Callback();
    return options;
  }

  Reflector& Start(Reflector::Options options) {
    reflector_ = std::make_unique<Reflector>(fake_, std::move(options));
    reflector_->Start();
    return *reflector_;
  }
  Reflector& Start() { return Start(DefaultOptions()); }

  std::string Put(const std::string& name, int value = 0, bool deliver = true) {
    return fake_.Put(kCollection, MakeObject("demo", name, value), deliver);
  }

  // Waits until the reflector's cache holds exactly the fake's objects, at
  // the same resourceVersions.
  bool WaitForCacheToMatchServer() {
    return changes_.WaitUntil([this] { return CacheVersions() == ServerVersions(); });
  }
  std::map<std::string, std::string> CacheVersions() {
    std::map<std::string, std::string> versions;
    const std::shared_ptr<const ObjectCache::Objects> snapshot = reflector_->Snapshot();
    for (const auto& [key, object] : *snapshot) {
      versions[key] = ResourceVersionOf(object);
    }
    return versions;
  }
  std::map<std::string, std::string> ServerVersions() {
    std::map<std::string, std::string> versions;
    for (const auto& [key, object] : fake_.Objects(kCollection)) {
      versions[key] = ResourceVersionOf(object);
    }
    return versions;
  }

  // Lets the current watch count as long enough (client-go relists after a
  // watch that ends within a second without events).
  void LetTimePass() { clock_.Advance(absl::Seconds(5)); }

  FakeKubeClient fake_;
  FakeClock clock_;
  ChangeLog changes_;
  std::unique_ptr<Reflector> reflector_;  // Destroyed first: it holds a watch on fake_.
};

TEST_F(ReflectorTest, PaginatesTheFirstListFromResourceVersionZero) {
  for (int i = 0; i < 5; ++i) Put(absl::StrCat("obj-", i));
  Reflector::Options options = DefaultOptions();
  options.page_size = 2;
  Reflector& reflector = Start(std::move(options));
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));

  const std::vector<FakeKubeClient::ListCall> lists = fake_.list_calls();
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[0].options.resource_version, "0");
  EXPECT_EQ(lists[0].options.limit, 2);
  EXPECT_EQ(lists[0].options.continue_token, "");
  for (int page : {1, 2}) {
    EXPECT_EQ(lists[page].options.resource_version, "") << page;
    EXPECT_EQ(lists[page].options.limit, 2) << page;
    EXPECT_NE(lists[page].options.continue_token, "") << page;
  }
  EXPECT_TRUE(reflector.has_synced());
  EXPECT_EQ(reflector.Snapshot()->size(), 5u);
  EXPECT_EQ(changes_.described().size(), 5u);
}

TEST_F(ReflectorTest, WatchesFromTheListResourceVersionNotTheItems) {
  Put("web");
  fake_.Put("/apis/facet.dev/v1alpha1/other", MakeObject("demo", "x"));  // Global RV moves on.
  const std::string list_version = fake_.resource_version();
  Start();
  ASSERT_TRUE(fake_.WaitForWatchCalls(1));
  const FakeKubeClient::WatchCall watch = fake_.watch_calls()[0];
  EXPECT_EQ(watch.path, kCollection);
  EXPECT_EQ(watch.options.resource_version, list_version);
  EXPECT_TRUE(watch.options.allow_bookmarks);
  EXPECT_EQ(watch.options.timeout_seconds, 300);
  EXPECT_EQ(reflector_->last_sync_resource_version(), list_version);
}

TEST_F(ReflectorTest, WatchTimeoutIsRandomInFiveToTenMinutes) {
  Reflector::Options options = DefaultOptions();
  options.random = [] { return 0.75; };
  Start(std::move(options));
  ASSERT_TRUE(fake_.WaitForWatchCalls(1));
  EXPECT_EQ(fake_.watch_calls()[0].options.timeout_seconds, 525);
}

TEST_F(ReflectorTest, CleanCloseRewatchesFromTheLastResourceVersionWithoutRelisting) {
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  const std::string version = Put("web");
  ASSERT_TRUE(changes_.WaitForDeltas(1));
  LetTimePass();
  fake_.EndWatches(absl::OkStatus());
  ASSERT_TRUE(fake_.WaitForWatchCalls(2));
  EXPECT_EQ(fake_.watch_calls()[1].options.resource_version, version);
  EXPECT_EQ(fake_.list_calls().size(), 1u);
  EXPECT_THAT(clock_.sleeps(), IsEmpty());
}

TEST_F(ReflectorTest, VeryShortEmptyWatchRelistsAfterBackoff) {
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  fake_.EndWatches(absl::OkStatus());  // No event, no time passed.
  ASSERT_TRUE(fake_.WaitForListCalls(2));
  EXPECT_THAT(clock_.sleeps(), ElementsAre(absl::Milliseconds(800)));
}

TEST_F(ReflectorTest, ExpiredErrorEventRelistsFromTheLastResourceVersion) {
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  const std::string version = Put("web");
  ASSERT_TRUE(changes_.WaitForDeltas(1));
  fake_.ExpireWatches();
  ASSERT_TRUE(fake_.WaitForWatchCalls(2));
  const std::vector<FakeKubeClient::ListCall> lists = fake_.list_calls();
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[1].options.resource_version, version);
  EXPECT_EQ(lists[1].options.limit, 0);  // Relists are unpaginated.
  EXPECT_EQ(fake_.watch_calls()[1].options.resource_version, fake_.resource_version());
  EXPECT_THAT(clock_.sleeps(), ElementsAre(absl::Milliseconds(800)));
}

TEST_F(ReflectorTest, WatchFromCompactedHistoryRelists) {
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  const std::string seen = Put("web");
  ASSERT_TRUE(changes_.WaitForDeltas(1));
  Put("web", 1, /*deliver=*/false);  // Missed by the watch, then compacted away.
  fake_.Compact();
  LetTimePass();
  fake_.EndWatches(absl::OkStatus());
  ASSERT_TRUE(fake_.WaitForListCalls(2));  // The re-watch got ERROR 410.
  ASSERT_TRUE(WaitForCacheToMatchServer());
  ASSERT_TRUE(fake_.WaitForWatchCalls(3));
  const std::vector<FakeKubeClient::WatchCall> watches = fake_.watch_calls();
  EXPECT_EQ(watches[1].options.resource_version, seen);
  EXPECT_EQ(watches[2].options.resource_version, fake_.resource_version());
}

TEST_F(ReflectorTest, BrokenStreamRelists) {
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  fake_.EndWatches(FakeKubeClient::BrokenStreamError());
  ASSERT_TRUE(fake_.WaitForListCalls(2));
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
}

TEST_F(ReflectorTest, RelistReportsMissedDeletions) {
  Put("a");
  Put("b");
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  ASSERT_TRUE(changes_.WaitForDeltas(2));
  fake_.Delete(kCollection, "demo", "b", /*deliver=*/false);
  Put("c", 0, /*deliver=*/false);
  Put("a", 7, /*deliver=*/false);
  fake_.ExpireWatches();
  ASSERT_TRUE(changes_.WaitForDeltas(5));
  EXPECT_EQ(CacheVersions(), ServerVersions());
  EXPECT_THAT(changes_.described(), ElementsAre("added demo/a", "added demo/b", "updated demo/a",
                                                "added demo/c", "deleted demo/b (unknown)"));
  EXPECT_THAT(CacheVersions(),
              UnorderedElementsAre(Pair("demo/a", ::testing::_), Pair("demo/c", ::testing::_)));
}

TEST_F(ReflectorTest, WatchEventsUpdateTheCache) {
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  Put("a");
  Put("a", 2);
  Put("b");
  fake_.Delete(kCollection, "demo", "a");
  ASSERT_TRUE(changes_.WaitForDeltas(4));
  EXPECT_THAT(changes_.described(),
              ElementsAre("added demo/a", "updated demo/a", "added demo/b", "deleted demo/a"));
  EXPECT_EQ(CacheVersions(), ServerVersions());
  EXPECT_EQ(reflector_->last_sync_resource_version(), fake_.resource_version());
}

TEST_F(ReflectorTest, BookmarksAdvanceTheResourceVersionOnly) {
  Put("a");
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  const int64_t generation = reflector_->generation();
  const int calls = changes_.calls();
  const std::string bookmark = fake_.SendBookmark();
  LetTimePass();
  fake_.EndWatches(absl::OkStatus());
  ASSERT_TRUE(fake_.WaitForWatchCalls(2));
  EXPECT_EQ(fake_.watch_calls()[1].options.resource_version, bookmark);
  EXPECT_EQ(reflector_->generation(), generation);
  EXPECT_EQ(changes_.calls(), calls);
  EXPECT_EQ(fake_.list_calls().size(), 1u);
}

TEST_F(ReflectorTest, SyntheticAddedEventsDoNotAdvanceTheResourceVersion) {
  const std::string b_version = Put("b");
  const std::string a_version = Put("a");     // Synthetic ADDED come by key: a (newer) first.
  fake_.OverrideNextListResourceVersion("");  // The watch then starts at "".
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  EXPECT_EQ(fake_.watch_calls()[0].options.resource_version, "");
  ASSERT_TRUE(changes_.WaitForDeltas(4));  // Two from the list, two synthetic ADDED.
  LetTimePass();
  fake_.EndWatches(absl::OkStatus());
  ASSERT_TRUE(fake_.WaitForWatchCalls(2));
  EXPECT_EQ(fake_.watch_calls()[1].options.resource_version, "");  // Not a_version or b_version.

  const std::string modified = Put("b", 1);  // The first non-ADDED event.
  ASSERT_TRUE(
      changes_.WaitUntil([&] { return reflector_->last_sync_resource_version() == modified; }));
  LetTimePass();
  fake_.EndWatches(absl::OkStatus());
  ASSERT_TRUE(fake_.WaitForWatchCalls(3));
  EXPECT_EQ(fake_.watch_calls()[2].options.resource_version, modified);
  (void)a_version;
  (void)b_version;
}

TEST_F(ReflectorTest, TooManyRequestsOnWatchStartBacksOffThenRewatches) {
  fake_.FailNextWatch(FakeKubeClient::TooManyRequestsError(absl::Seconds(5)));
  fake_.FailNextWatch(FakeKubeClient::TooManyRequestsError(absl::ZeroDuration()));
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  const std::vector<FakeKubeClient::WatchCall> watches = fake_.watch_calls();
  ASSERT_EQ(watches.size(), 3u);
  EXPECT_EQ(watches[1].options.resource_version, watches[0].options.resource_version);
  EXPECT_EQ(watches[2].options.resource_version, watches[0].options.resource_version);
  EXPECT_EQ(fake_.list_calls().size(), 1u);
  // Retry-After wins over a shorter backoff; then the backoff grows.
  EXPECT_THAT(clock_.sleeps(), ElementsAre(absl::Seconds(5), absl::Milliseconds(1600)));
}

TEST_F(ReflectorTest, ConnectionRefusedOnWatchStartBacksOffThenRewatches) {
  fake_.FailNextWatch(FakeKubeClient::ConnectionRefusedError());
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  EXPECT_EQ(fake_.watch_calls().size(), 2u);
  EXPECT_EQ(fake_.list_calls().size(), 1u);
  EXPECT_THAT(clock_.sleeps(), ElementsAre(absl::Milliseconds(800)));
}

TEST_F(ReflectorTest, InternalErrorOnWatchRewatchesThenRelistsAfterTheWindow) {
  Reflector::Options options = DefaultOptions();
  options.internal_error_retry = absl::Seconds(2);
  fake_.FailNextWatch(FakeKubeClient::InternalServerError());  // t=0: re-watch.
  fake_.FailNextWatch(FakeKubeClient::InternalServerError());  // t=0.8s: re-watch.
  fake_.FailNextWatch(FakeKubeClient::InternalServerError());  // t=2.4s: relist.
  Start(std::move(options));
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  EXPECT_EQ(fake_.watch_calls().size(), 4u);
  EXPECT_EQ(fake_.list_calls().size(), 2u);
}

TEST_F(ReflectorTest, ListErrorsBackOffExponentially) {
  for (int i = 0; i < 4; ++i) fake_.FailNextList(FakeKubeClient::InternalServerError());
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  EXPECT_EQ(fake_.list_calls().size(), 5u);
  EXPECT_THAT(clock_.sleeps(), ElementsAre(absl::Milliseconds(800), absl::Milliseconds(1600),
                                           absl::Milliseconds(3200), absl::Milliseconds(6400)));
  EXPECT_TRUE(reflector_->has_synced());
}

TEST_F(ReflectorTest, LogsListErrorsEscapedAndCut) {
  // An error may quote what the API server sent (a key, a message).
  std::ostringstream log;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  fake_.FailNextList(absl::InternalError(
      absl::StrCat("LIST x: duplicate key \"a\n[error] forged\"", std::string(5000, 'k'))));
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  reflector_->Stop();
  spdlog::set_default_logger(previous);
  EXPECT_THAT(log.str(), HasSubstr("duplicate key \"a\\n[error] forged\""));
  EXPECT_THAT(log.str(), Not(HasSubstr("\n[error] forged")));
  EXPECT_THAT(log.str(), HasSubstr("bytes)"));  // Cut.
}

TEST_F(ReflectorTest, ExpiredContinueTokenRetriesWithAQuorumRead) {
  for (int i = 0; i < 3; ++i) Put(absl::StrCat("obj-", i));
  fake_.FailNextList(FakeKubeClient::ExpiredError(), /*continue_only=*/true);
  Reflector::Options options = DefaultOptions();
  options.page_size = 2;
  Start(std::move(options));
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  const std::vector<FakeKubeClient::ListCall> lists = fake_.list_calls();
  ASSERT_EQ(lists.size(), 4u);
  EXPECT_EQ(lists[0].options.resource_version, "0");
  EXPECT_NE(lists[1].options.continue_token, "");  // Failed with 410.
  EXPECT_EQ(lists[2].options.resource_version, "");
  EXPECT_EQ(lists[2].options.continue_token, "");
  EXPECT_EQ(lists[2].options.limit, 2);
  EXPECT_NE(lists[3].options.continue_token, "");
  EXPECT_THAT(clock_.sleeps(), IsEmpty());
  EXPECT_EQ(reflector_->Snapshot()->size(), 3u);
}

TEST_F(ReflectorTest, TooLargeResourceVersionOnRelistRetriesWithAQuorumRead) {
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  const std::string version = Put("web");
  ASSERT_TRUE(changes_.WaitForDeltas(1));
  fake_.FailNextList(FakeKubeClient::TooLargeResourceVersionError());
  fake_.ExpireWatches();
  ASSERT_TRUE(fake_.WaitForWatchCalls(2));
  std::vector<FakeKubeClient::ListCall> lists = fake_.list_calls();
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[1].options.resource_version, version);
  EXPECT_EQ(lists[2].options.resource_version, "");

  // Once a list succeeded, relists use the last resourceVersion again.
  fake_.ExpireWatches();
  ASSERT_TRUE(fake_.WaitForListCalls(4));
  lists = fake_.list_calls();
  EXPECT_EQ(lists[3].options.resource_version, fake_.resource_version());
}

TEST_F(ReflectorTest, FinalCacheEqualsServerStateAfterAFaultSequence) {
  for (int i = 0; i < 7; ++i) Put(absl::StrCat("obj-", i));
  Reflector::Options options = DefaultOptions();
  options.page_size = 3;
  fake_.FailNextList(FakeKubeClient::ExpiredError(), /*continue_only=*/true);
  fake_.FailNextWatch(FakeKubeClient::TooManyRequestsError(absl::Seconds(1)));
  Start(std::move(options));
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));

  Put("obj-0", 1);
  fake_.Delete(kCollection, "demo", "obj-1");
  Put("new-1");
  fake_.Delete(kCollection, "demo", "obj-2", /*deliver=*/false);  // Missed.
  Put("obj-3", 5, /*deliver=*/false);                             // Missed.
  fake_.EndWatches(FakeKubeClient::BrokenStreamError());
  ASSERT_TRUE(fake_.WaitForListCalls(5));
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));

  fake_.SendBookmark();
  Put("new-2");
  fake_.Delete(kCollection, "demo", "obj-4");
  ASSERT_TRUE(WaitForCacheToMatchServer());
  Put("obj-5", 9, /*deliver=*/false);  // Missed, then history compacted.
  fake_.Compact();
  LetTimePass();
  fake_.EndWatches(absl::OkStatus());  // Re-watch from a compacted RV: ERROR 410, relist.
  Put("late", 0, /*deliver=*/true);
  ASSERT_TRUE(WaitForCacheToMatchServer());
  EXPECT_EQ(CacheVersions(), ServerVersions());
  EXPECT_TRUE(reflector_->has_synced());
}

TEST_F(ReflectorTest, NamespacedCollectionSeesOnlyItsNamespace) {
  fake_.Put(kCollection, MakeObject("demo", "mine"));
  fake_.Put(kCollection, MakeObject("other", "theirs"));
  Reflector::Options options = DefaultOptions();
  options.collection_path = "/apis/facet.dev/v1alpha1/namespaces/demo/xdsresources";
  Start(std::move(options));
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  fake_.Put(kCollection, MakeObject("other", "theirs-2"));
  fake_.Put(kCollection, MakeObject("demo", "mine-2"));
  ASSERT_TRUE(changes_.WaitForDeltas(2));
  EXPECT_THAT(changes_.described(), ElementsAre("added demo/mine", "added demo/mine-2"));
}

TEST_F(ReflectorTest, FirstSyncOfAnEmptyCollectionIsReported) {
  Start();
  ASSERT_TRUE(changes_.WaitForCalls(1));
  EXPECT_TRUE(reflector_->has_synced());
  EXPECT_EQ(changes_.calls(), 1);
  EXPECT_THAT(changes_.described(), IsEmpty());
}

TEST_F(ReflectorTest, StopCancelsTheWatch) {
  Start();
  ASSERT_TRUE(fake_.WaitForOpenWatches(1));
  reflector_->Stop();
  EXPECT_EQ(fake_.open_watches(), 0);
  reflector_->Stop();  // Idempotent.
}

TEST_F(ReflectorTest, StopInterruptsARealBackoffWait) {
  fake_.FailNextList(FakeKubeClient::InternalServerError());
  Reflector::Options options = DefaultOptions();
  options.clock = nullptr;  // RealClock: the wait below would last an hour.
  options.backoff.initial = absl::Hours(1);
  Start(std::move(options));
  ASSERT_TRUE(fake_.WaitForListCalls(1));
  reflector_->Stop();  // Returns at once.
  EXPECT_EQ(fake_.list_calls().size(), 1u);
}

// --- Backoff ------------------------------------------------------------------

TEST(BackoffTest, DoublesUpToTheCap) {
  Backoff backoff(Backoff::Params(), [] { return 0.0; });
  absl::Time now = absl::UnixEpoch();
  std::vector<absl::Duration> waits;
  for (int i = 0; i < 8; ++i) {
    waits.push_back(backoff.Next(now));
    now += waits.back();
  }
  EXPECT_THAT(waits, ElementsAre(absl::Milliseconds(800), absl::Milliseconds(1600),
                                 absl::Milliseconds(3200), absl::Milliseconds(6400),
                                 absl::Milliseconds(12800), absl::Milliseconds(25600),
                                 absl::Seconds(30), absl::Seconds(30)));
}

TEST(BackoffTest, AddsJitterProportionalToTheStep) {
  Backoff backoff(Backoff::Params(), [] { return 0.5; });
  const absl::Time now = absl::UnixEpoch();
  EXPECT_EQ(backoff.Next(now), absl::Milliseconds(1200));
  EXPECT_EQ(backoff.Next(now), absl::Milliseconds(2400));
}

TEST(BackoffTest, ResetsAfterTwoMinutesWithoutBackoff) {
  Backoff backoff(Backoff::Params(), [] { return 0.0; });
  absl::Time now = absl::UnixEpoch();
  backoff.Next(now);
  backoff.Next(now);
  EXPECT_EQ(backoff.Next(now + absl::Minutes(2)), absl::Milliseconds(3200));
  EXPECT_EQ(backoff.Next(now + absl::Minutes(4) + absl::Seconds(1)), absl::Milliseconds(800));
}

// --- ObjectCache ---------------------------------------------------------------

TEST(ObjectCacheTest, ReplaceDiffsAgainstTheCache) {
  ObjectCache cache;
  auto versioned = [](const std::string& name, const std::string& version) {
    YAML::Node object = MakeObject("", name);
    object["metadata"]["resourceVersion"] = version;
    return object;
  };
  cache.Replace(
      {{"a", versioned("a", "1")}, {"b", versioned("b", "2")}, {"c", versioned("c", "3")}});
  const int64_t generation = cache.generation();
  std::vector<std::string> described;
  for (const ObjectDelta& delta : cache.Replace(
           {{"a", versioned("a", "1")}, {"b", versioned("b", "5")}, {"d", versioned("d", "6")}})) {
    described.push_back(Describe(delta));
  }
  EXPECT_THAT(described, ElementsAre("updated b", "added d", "deleted c (unknown)"));
  EXPECT_EQ(cache.generation(), generation + 1);
  EXPECT_TRUE(
      cache
          .Replace(
              {{"a", versioned("a", "1")}, {"b", versioned("b", "5")}, {"d", versioned("d", "6")}})
          .empty());
  EXPECT_EQ(cache.generation(), generation + 1);
}

TEST(ObjectCacheTest, SnapshotsStayUnchangedByLaterUpdates) {
  ObjectCache cache;
  cache.Upsert("a", MakeObject("", "a", 1));
  const std::shared_ptr<const ObjectCache::Objects> before = cache.Snapshot();
  EXPECT_EQ(cache.Snapshot(), before);  // Reused while nothing changes.
  EXPECT_EQ(cache.Upsert("a", MakeObject("", "a", 2)).type, ObjectDelta::Type::kUpdated);
  EXPECT_EQ(StringAt(before->at("a"), {"spec", "value"}), "1");
  EXPECT_EQ(StringAt(cache.Snapshot()->at("a"), {"spec", "value"}), "2");
  EXPECT_TRUE(cache.Remove("a", MakeObject("", "a")).has_value());
  EXPECT_FALSE(cache.Remove("a", MakeObject("", "a")).has_value());
  EXPECT_EQ(before->size(), 1u);
  EXPECT_TRUE(cache.Snapshot()->empty());
}

}  // namespace
}  // namespace facet::controller::kube
