#include "xds_server/ads/watch_index.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/test_objects.h"

namespace facet::xds {
namespace {

using ::facet::xds::testing::MakeObject;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

const std::string kRds = RouteConfigurationType().type_url();
const std::string kCds = ClusterType().type_url();

std::string Route(const std::string& cluster) {
  return "{virtual_hosts: [{name: v, domains: [greeter], routes: [{match: {prefix: \"\"}, "
         "route: {cluster: " +
         cluster + "}}]}]}";
}

// Route r (a prod variant to `prod_cluster`, another for the rest), route
// s and cluster c.
std::vector<ResourceObject> Objects(const std::string& prod_cluster, const std::string& s_cluster) {
  return {MakeObject("demo", "r", "route", "r",
                     {{"{env: prod}", Route(prod_cluster)}, {"{env: {not: prod}}", Route("c")}}),
          MakeObject("demo", "s", "route", "s", {{"", Route(s_cluster)}}),
          MakeObject("demo", "c", "cluster", "c", {{"", "{type: LOGICAL_DNS}"}}),
          MakeObject("demo", "d", "cluster", "d", {{"", "{type: LOGICAL_DNS}"}})};
}

std::shared_ptr<const Snapshot> Build(const std::vector<ResourceObject>& objects) {
  BuildOptions options;
  options.authority_policy = BuildOptions::AuthorityPolicy::kWarnUndeclared;
  return BuildSnapshot(objects, {}, nullptr, options).snapshot;
}

std::shared_ptr<const Parameters> Params(const std::string& env) {
  return std::make_shared<Parameters>(ParameterSet{{"env", env}});
}

WatchChange Watch(const std::string& type_url, const std::string& name) {
  return {type_url, name, /*wildcard=*/false, /*watched=*/true};
}
WatchChange Wildcard(const std::string& type_url) { return {type_url, "", true, true}; }

// Describes wakes as stream -> "all" or the types and names to re-examine.
std::map<WatchIndex::StreamId, std::string> Describe(
    const std::vector<std::pair<WatchIndex::StreamId, WatchIndex::Wake>>& wakes) {
  std::map<WatchIndex::StreamId, std::string> out;
  for (const auto& [stream, wake] : wakes) {
    std::string& text = out[stream];
    EXPECT_TRUE(text.empty()) << "stream " << stream << " woken twice";
    if (wake.all) text += "all ";
    for (const ResourceType* type : wake.types) text += std::string(type->alias()) + ":* ";
    for (const auto& [type, name] : wake.names)
      text += std::string(type->alias()) + ":" + *name + " ";
  }
  return out;
}

class WatchIndexTest : public ::testing::Test {
 protected:
  WatchIndexTest() {
    base_ = std::make_shared<ServingSnapshot>(Build(Objects("c", "c")));
    const auto changed = Build(Objects("d", "d"));
    // r (only its prod variant differs) and s changed; the clusters did not.
    after_ = std::make_shared<ServingSnapshot>(
        Snapshot::Derive(base_->snapshot(),
                         {changed->resources(RouteConfigurationType()).at("r"),
                          changed->resources(RouteConfigurationType()).at("s")},
                         {}));
  }

  // Adds `stream` watching `changes`, selecting with `params` (null: mixed).
  void Add(WatchIndex::StreamId stream, std::shared_ptr<const Parameters> params,
           const std::vector<WatchChange>& changes) {
    index_.AddStream(stream);
    index_.Update(stream, changes, std::move(params), changes);
  }

  std::map<WatchIndex::StreamId, std::string> WakesFor(const ServingSnapshot& after) {
    return Describe(index_.Wakes(*base_, after));
  }

  WatchIndex index_;
  std::shared_ptr<const ServingSnapshot> base_;
  std::shared_ptr<const ServingSnapshot> after_;
};

TEST_F(WatchIndexTest, WakesOnlyStreamsWhoseSelectedVariantOfAChangedNameChanged) {
  Add(1, Params("prod"), {Watch(kRds, "r")});
  Add(2, Params("test"), {Watch(kRds, "r")});  // Selects the variant that did not change.
  Add(3, Params("prod"), {Watch(kCds, "c")});  // Watches nothing that changed.
  Add(4, nullptr, {Watch(kRds, "r")});         // Selects with several parameter sets.
  Add(5, Params("test"), {Watch(kRds, "s"), Watch(kRds, "r")});
  EXPECT_THAT(WakesFor(*after_),
              UnorderedElementsAre(Pair(1, "route:r "), Pair(4, "route:r "), Pair(5, "route:s ")));
}

TEST_F(WatchIndexTest, WildcardStreamsAreWokenForTheirTypesChanges) {
  Add(1, Params("prod"), {Wildcard(kRds)});
  Add(2, Params("prod"), {Wildcard(kCds)});
  EXPECT_THAT(WakesFor(*after_), ElementsAre(Pair(1, "route:* ")));
}

TEST_F(WatchIndexTest, EveryStreamReexaminesEverythingAfterASnapshotNotDerivedFromTheLast) {
  Add(1, Params("prod"), {Watch(kRds, "r")});
  Add(2, Params("prod"), {});
  const ServingSnapshot rebuilt(Build(Objects("c", "c")));
  EXPECT_TRUE(WatchIndex::WakesAll(*base_, rebuilt));
  EXPECT_FALSE(WatchIndex::WakesAll(*base_, *after_));
  EXPECT_THAT(WakesFor(rebuilt), UnorderedElementsAre(Pair(1, "all "), Pair(2, "all ")));
}

TEST_F(WatchIndexTest, ChangedReadRestrictionsWakeEveryWatcherOfAChangedName) {
  Add(1, Params("test"), {Watch(kRds, "r")});
  Add(2, Params("test"), {Watch(kCds, "c")});
  const ServingSnapshot restricted(Snapshot::Derive(
      base_->snapshot(), {after_->snapshot().resources(RouteConfigurationType()).at("r")}, {},
      std::make_shared<ClientAccess>(ClientAccess::Restrictions{})));
  EXPECT_THAT(WakesFor(restricted), ElementsAre(Pair(1, "route:r ")));
}

TEST_F(WatchIndexTest, AStreamWhoseParametersChangeMovesToItsNewGroup) {
  Add(1, Params("test"), {Watch(kRds, "r")});
  EXPECT_THAT(WakesFor(*after_), IsEmpty());
  // Its node now selects prod; everything it watches is passed along.
  index_.Update(1, {}, Params("prod"), {Watch(kRds, "r")});
  EXPECT_THAT(WakesFor(*after_), ElementsAre(Pair(1, "route:r ")));
  // A locator brings a second parameter set: any change to r wakes it.
  index_.Update(1, {}, nullptr, {Watch(kRds, "r")});
  Add(2, Params("test"), {});
  EXPECT_THAT(WakesFor(*after_), ElementsAre(Pair(1, "route:r ")));
}

TEST_F(WatchIndexTest, WakesComeInStreamIdOrderEachWithEverythingItIsToReexamine) {
  // Added out of order, and found through several names and a wildcard.
  Add(9, Params("prod"), {Watch(kRds, "r"), Watch(kRds, "s")});
  Add(3, Params("prod"), {Watch(kRds, "s")});
  Add(7, nullptr, {Wildcard(kRds), Watch(kRds, "r")});
  Add(1, Params("test"), {Watch(kRds, "s")});
  std::vector<WatchIndex::StreamId> order;
  for (const auto& [stream, wake] : index_.Wakes(*base_, *after_)) order.push_back(stream);
  EXPECT_THAT(order, ElementsAre(1, 3, 7, 9));
  const auto wakes = WakesFor(*after_);
  EXPECT_EQ(wakes.at(9), "route:r route:s ");
  EXPECT_EQ(wakes.at(7), "route:* route:r ");
  const ServingSnapshot rebuilt(Build(Objects("c", "c")));
  order.clear();
  for (const auto& [stream, wake] : index_.Wakes(*base_, rebuilt)) order.push_back(stream);
  EXPECT_THAT(order, ElementsAre(1, 3, 7, 9));
}

TEST_F(WatchIndexTest, AStreamsNamesKeepTheOrderFoundAmongManyWakes) {
  // Enough entries that the sort by stream is not a stable insertion sort:
  // each stream's names must still come in the order they were found.
  for (WatchIndex::StreamId stream = 60; stream >= 20; --stream) {
    Add(stream, nullptr, {Watch(kRds, "s"), Watch(kRds, "r")});
  }
  const auto wakes = WakesFor(*after_);
  ASSERT_EQ(wakes.size(), 41u);
  for (const auto& [stream, text] : wakes) EXPECT_EQ(text, "route:r route:s ") << stream;
}

TEST_F(WatchIndexTest, NamesNoLongerWatchedAndRemovedStreamsWakeNothing) {
  Add(1, Params("prod"), {Watch(kRds, "r"), Watch(kRds, "s")});
  Add(2, Params("prod"), {Watch(kRds, "r")});
  index_.Update(1, {{kRds, "r", false, /*watched=*/false}}, Params("prod"), {});
  EXPECT_THAT(WakesFor(*after_), UnorderedElementsAre(Pair(1, "route:s "), Pair(2, "route:r ")));
  index_.RemoveStream(2, {Watch(kRds, "r")});
  EXPECT_EQ(index_.streams(), 1u);
  EXPECT_THAT(WakesFor(*after_), ElementsAre(Pair(1, "route:s ")));
}

}  // namespace
}  // namespace facet::xds
