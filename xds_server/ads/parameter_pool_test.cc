#include "xds_server/ads/parameter_pool.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace facet::xds {
namespace {

TEST(ParameterPoolTest, EqualSetsShareOneObject) {
  ParameterPool pool;
  std::shared_ptr<const Parameters> a = pool.Intern({{"env", "prod"}});
  std::shared_ptr<const Parameters> b = pool.Intern({{"env", "prod"}});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->params, (ParameterSet{{"env", "prod"}}));
  EXPECT_EQ(a->canonical, Parameters(ParameterSet{{"env", "prod"}}).canonical);
}

TEST(ParameterPoolTest, DifferentSetsGetDifferentObjects) {
  ParameterPool pool;
  std::shared_ptr<const Parameters> prod = pool.Intern({{"env", "prod"}});
  std::shared_ptr<const Parameters> test = pool.Intern({{"env", "test"}});
  std::shared_ptr<const Parameters> none = pool.Intern({});
  EXPECT_NE(prod, test);
  EXPECT_NE(prod, none);
  EXPECT_EQ(test->params.at("env"), "test");
  EXPECT_TRUE(none->params.empty());
}

TEST(ParameterPoolTest, ASetNobodyHoldsIsMadeAgain) {
  ParameterPool pool;
  std::weak_ptr<const Parameters> first = pool.Intern({{"env", "prod"}});
  EXPECT_TRUE(first.expired());
  std::shared_ptr<const Parameters> again = pool.Intern({{"env", "prod"}});
  EXPECT_EQ(again->params.at("env"), "prod");
}

TEST(ParameterPoolTest, EntriesOfSetsNobodyHoldsAreDropped) {
  ParameterPool pool;
  std::shared_ptr<const Parameters> held = pool.Intern({{"env", "held"}});
  for (int i = 0; i < 10000; ++i) pool.Intern({{"env", absl::StrCat("gone-", i)}});
  EXPECT_LT(pool.entries(), 200u);
  EXPECT_EQ(pool.Intern({{"env", "held"}}), held);
}

TEST(ParameterPoolTest, SharedIsOnePool) {
  EXPECT_EQ(&ParameterPool::Shared(), &ParameterPool::Shared());
}

}  // namespace
}  // namespace facet::xds
