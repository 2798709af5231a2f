#include "xds_server/relay/relay_cache.h"

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/ads/serving_snapshot.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/constraints/match_syntax.h"

namespace facet::xds {
namespace {

using ::facet::testing::IsOk;
using ::testing::IsEmpty;
using ::testing::SizeIs;

const std::string kRds = RouteConfigurationType().type_url();
const absl::Time kT0 = absl::FromUnixSeconds(1000);

Constraint Match(const std::string& yaml) {
  static auto* compiled = new std::map<std::string, Constraint>();
  auto it = compiled->find(yaml);
  if (it == compiled->end()) {
    it = compiled->emplace(yaml, *Constraint::Compile(*CompileMatch(YAML::Load(yaml), "m"))).first;
  }
  return it->second;
}

UpstreamVariant Upstream(const std::string& name, const std::string& match,
                         const std::string& version) {
  return {name, Match(match), version, absl::StrCat("bytes of ", version)};
}

DemandChange Demand(const std::string& name, const ParameterSet& params, bool added = true) {
  return {kRds, name, std::make_shared<Parameters>(params), added};
}

std::set<std::string> FetchedParams(const std::vector<Fetch>& fetches, bool subscribe = true) {
  std::set<std::string> out;
  for (const Fetch& fetch : fetches) {
    if (fetch.subscribe == subscribe) out.insert(ParameterSetToString(fetch.subscription.params));
  }
  return out;
}

// What a stream of `snapshot` would select for `params` of route `name`:
// "?" while unknown, "" when nothing exists, else the variant's version.
std::string Served(const std::shared_ptr<const Snapshot>& snapshot, const std::string& name,
                   const ParameterSet& params) {
  ServingSnapshot serving(snapshot);
  const ServedResource* resource = snapshot->Find(RouteConfigurationType(), name);
  Parameters p(params);
  if (serving.Unknown(resource, p)) return "?";
  if (resource == nullptr) return "";
  auto variant = serving.Select(*resource, p);
  return variant == nullptr ? "" : variant->version;
}

class RelayCacheTest : public ::testing::Test {
 protected:
  RelayCache cache_{RelayCache::Options{nullptr, absl::Seconds(10), ConstraintLimits{}}};
};

TEST_F(RelayCacheTest, NothingIsAnsweredBeforeUpstreamHas) {
  std::shared_ptr<const Snapshot> snapshot;
  std::vector<Fetch> fetches = cache_.OnDemand({Demand("r", {{"env", "prod"}})}, kT0, &snapshot);
  EXPECT_THAT(FetchedParams(fetches), ::testing::ElementsAre("{env=prod}"));
  EXPECT_TRUE(cache_.current()->partial());
  EXPECT_EQ(Served(cache_.current(), "r", {{"env", "prod"}}), "?");
  EXPECT_EQ(Served(cache_.current(), "other", {{"env", "prod"}}), "?");
}

TEST_F(RelayCacheTest, DistinctPodParametersShareOneSubscriptionPerConstrainedValue) {
  std::shared_ptr<const Snapshot> snapshot;
  std::vector<DemandChange> demand;
  for (int pod = 0; pod < 100; ++pod) {
    demand.push_back(Demand("r", {{"env", pod % 2 ? "prod" : "test"}, {"pod", absl::StrCat(pod)}}));
  }
  // Keys unknown: one probe goes upstream, the rest wait for its answer.
  std::vector<Fetch> fetches = cache_.OnDemand(demand, kT0, &snapshot);
  ASSERT_THAT(fetches, SizeIs(1));
  const ParameterSet probe = fetches[0].subscription.params;
  EXPECT_EQ(probe.count("pod"), 1u);

  UpstreamUpdate update{kRds, {Upstream("r", "{env: test}", "v-test")}, {}, false, 0};
  fetches.clear();
  ASSERT_THAT(cache_.Apply(0, update, kT0, &fetches, &snapshot), IsOk());
  // The answer says the variants constrain `env` only: two subscriptions.
  EXPECT_EQ(FetchedParams(fetches), (std::set<std::string>{"{env=prod}", "{env=test}"}));
  EXPECT_EQ(Served(cache_.current(), "r", {{"env", "test"}, {"pod", "7"}}), "v-test");
  EXPECT_EQ(Served(cache_.current(), "r", {{"env", "prod"}, {"pod", "8"}}), "?");

  // The probe, no longer needed, lingers and then goes.
  EXPECT_EQ(cache_.stats().upstream_subscriptions, 3);
  EXPECT_THAT(cache_.Expire(kT0 + absl::Seconds(9), &snapshot), IsEmpty());
  fetches = cache_.Expire(kT0 + absl::Seconds(10), &snapshot);
  EXPECT_EQ(FetchedParams(fetches, /*subscribe=*/false),
            std::set<std::string>{ParameterSetToString(probe)});
  EXPECT_EQ(cache_.stats().upstream_subscriptions, 2);
}

TEST_F(RelayCacheTest, AbsentAnswerIsKnownAndSaysDoesNotExist) {
  std::shared_ptr<const Snapshot> snapshot;
  cache_.OnDemand({Demand("r", {{"env", "qa"}})}, kT0, &snapshot);
  std::vector<Fetch> fetches;
  UpstreamUpdate update{kRds, {}, {{"r", *Constraint::Compile(ExactConstraints({{"env", "qa"}}))}},
                        false, 0};
  ASSERT_THAT(cache_.Apply(0, update, kT0, &fetches, &snapshot), IsOk());
  ASSERT_NE(snapshot, nullptr);
  EXPECT_EQ(Served(snapshot, "r", {{"env", "qa"}}), "");
  // Another parameter set is still unknown (the keys are not known).
  EXPECT_EQ(Served(snapshot, "r", {{"env", "prod"}}), "?");
}

TEST_F(RelayCacheTest, VariantSwapIsOneTransactionAndAResyncChangesNothing) {
  std::shared_ptr<const Snapshot> snapshot;
  cache_.OnDemand({Demand("r", {{"env", "prod"}})}, kT0, &snapshot);
  std::vector<Fetch> fetches;
  ASSERT_THAT(cache_.Apply(0, {kRds, {Upstream("r", "{env: prod}", "v1")}, {}, false, 0}, kT0,
                           &fetches, &snapshot),
              IsOk());
  const std::string before = snapshot->version();
  // The upstream replaces the variant: removal and addition in one response.
  UpstreamUpdate swap{kRds, {Upstream("r", "{env: prod, version: {exists: false}}", "v2")},
                      {{"r", Match("{env: prod}")}}, false, 0};
  ASSERT_THAT(cache_.Apply(0, swap, kT0, &fetches, &snapshot), IsOk());
  ASSERT_NE(snapshot, nullptr);
  EXPECT_EQ(snapshot->base_version(), before);
  EXPECT_EQ(Served(snapshot, "r", {{"env", "prod"}}), "v2");
  EXPECT_EQ(snapshot->changes().size(), 1u);
  // After a reconnection the upstream sends the same variant again.
  UpstreamUpdate resync{kRds, {Upstream("r", "{env: prod, version: {exists: false}}", "v2")}, {},
                        false, 0};
  ASSERT_THAT(cache_.Apply(0, resync, kT0, &fetches, &snapshot), IsOk());
  EXPECT_EQ(snapshot, nullptr);
}

TEST_F(RelayCacheTest, RejectsAResponseWhoseVariantsOverlapForOneSubscription) {
  std::shared_ptr<const Snapshot> snapshot;
  cache_.OnDemand({Demand("r", {{"env", "prod"}})}, kT0, &snapshot);
  std::vector<Fetch> fetches;
  UpstreamUpdate update{
      kRds, {Upstream("r", "{env: prod}", "a"), Upstream("r", "{env: [prod, qa]}", "b")}, {}, false,
      0};
  absl::Status status = cache_.Apply(0, update, kT0, &fetches, &snapshot);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("both match parameters {env=prod}"));
  EXPECT_EQ(Served(cache_.current(), "r", {{"env", "prod"}}), "?");
  EXPECT_EQ(cache_.stats().updates_rejected, 1);
}

// The bound a manifest's resource has on its variants
// (ConstraintLimits::max_variants_per_resource), on what one upstream
// response carries for a name.
TEST_F(RelayCacheTest, RejectsAResponseWithMoreVariantsOfANameThanAManifestMayHave) {
  const int limit = ConstraintLimits().max_variants_per_resource;
  std::shared_ptr<const Snapshot> snapshot;
  cache_.OnDemand({Demand("r", {{"env", "v0"}})}, kT0, &snapshot);
  UpstreamUpdate update{kRds, {}, {}, false, 0};
  for (int i = 0; i <= limit; ++i) {
    update.variants.push_back(Upstream("r", absl::StrCat("{env: v", i, "}"), absl::StrCat(i)));
  }
  std::vector<Fetch> fetches;
  absl::Status status = cache_.Apply(0, update, kT0, &fetches, &snapshot);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(status.message()),
      ::testing::HasSubstr(absl::StrCat(kRds, " r: the response carries ", limit + 1,
                                        " variants; the limit is ", limit, " per resource")));
  EXPECT_EQ(Served(cache_.current(), "r", {{"env", "v0"}}), "?");
  EXPECT_EQ(cache_.stats().updates_rejected, 1);

  update.variants.pop_back();
  ASSERT_THAT(cache_.Apply(0, update, kT0, &fetches, &snapshot), IsOk());
  EXPECT_EQ(Served(cache_.current(), "r", {{"env", "v0"}}), "0");
}

// The bound a manifest's resource has on the keys its variants constrain
// (ConstraintLimits::max_keys_per_resource): counted over the variants a
// response carries and those it leaves held.
TEST_F(RelayCacheTest, RejectsAResponseThatTakesANameOverTheKeyLimit) {
  const int limit = ConstraintLimits().max_keys_per_resource;
  // `{k<first>: x, ..., k<last>: x}`.
  auto over = [](int first, int last) {
    std::string match = "{";
    for (int k = first; k <= last; ++k) {
      absl::StrAppend(&match, k > first ? ", " : "", "k", k, ": x");
    }
    return match + "}";
  };
  ParameterSet params;
  for (int k = 0; k <= limit; ++k) params[absl::StrCat("k", k)] = "x";
  std::shared_ptr<const Snapshot> snapshot;
  cache_.OnDemand({Demand("r", params)}, kT0, &snapshot);
  std::vector<Fetch> fetches;
  const std::string too_many =
      absl::StrCat(kRds, " r: the variants constrain ", limit + 1, " distinct keys; the limit is ",
                   limit, " per resource");

  UpstreamUpdate all{kRds, {Upstream("r", over(0, limit), "all")}, {}, false, 0};
  absl::Status status = cache_.Apply(0, all, kT0, &fetches, &snapshot);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(too_many));
  EXPECT_EQ(Served(cache_.current(), "r", params), "?");

  UpstreamUpdate some{kRds, {Upstream("r", over(0, 19), "some")}, {}, false, 0};
  ASSERT_THAT(cache_.Apply(0, some, kT0, &fetches, &snapshot), IsOk());
  EXPECT_EQ(Served(cache_.current(), "r", params), "some");

  // With the 20 keys held, 13 more make 33.
  UpstreamUpdate rest{kRds, {Upstream("r", over(20, limit), "rest")}, {}, false, 0};
  status = cache_.Apply(0, rest, kT0, &fetches, &snapshot);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(too_many));
  EXPECT_EQ(Served(cache_.current(), "r", params), "some");
  EXPECT_EQ(cache_.stats().updates_rejected, 2);
}

TEST_F(RelayCacheTest, NamesNoUpstreamServesDoNotExist) {
  RelayCache cache(RelayCache::Options{[](const std::string& name) {
                                         return name.rfind("xdstp://known/", 0) == 0 ? 0 : -1;
                                       },
                                       absl::Seconds(10), ConstraintLimits{}});
  std::shared_ptr<const Snapshot> snapshot;
  std::vector<Fetch> fetches =
      cache.OnDemand({Demand("xdstp://unknown/envoy.config.route.v3.RouteConfiguration/r", {})},
                     kT0, &snapshot);
  EXPECT_THAT(fetches, IsEmpty());
  ASSERT_NE(snapshot, nullptr);
  EXPECT_EQ(Served(snapshot, "xdstp://unknown/envoy.config.route.v3.RouteConfiguration/r", {}), "");
}

TEST_F(RelayCacheTest, ANewSubscriptionIsAnsweredByAVariantTheUpstreamAlreadySent) {
  // An upstream stream does not send a variant it has sent already, even for
  // a new locator that selects it.
  std::shared_ptr<const Snapshot> snapshot;
  cache_.OnDemand({Demand("r", {})}, kT0, &snapshot);
  std::vector<Fetch> fetches;
  ASSERT_THAT(cache_.Apply(0, {kRds, {Upstream("r", "{}", "all")}, {}, false, 0}, kT0, &fetches,
                           &snapshot),
              IsOk());
  // Keys learned: none. Every parameter set projects onto {}.
  fetches = cache_.OnDemand({Demand("r", {{"env", "prod"}})}, kT0, &snapshot);
  EXPECT_THAT(fetches, IsEmpty());
  EXPECT_EQ(Served(cache_.current(), "r", {{"env", "prod"}}), "all");
  EXPECT_EQ(cache_.stats().hits, 1);
  EXPECT_EQ(cache_.stats().misses, 1);
}

TEST_F(RelayCacheTest, CountsHitsAndMissesPerResourceWithinABound) {
  std::shared_ptr<const Snapshot> snapshot;
  cache_.OnDemand({Demand("r", {}), Demand("s", {})}, kT0, &snapshot);  // Two misses.
  std::vector<Fetch> fetches;
  ASSERT_THAT(
      cache_.Apply(0, {kRds, {Upstream("r", "{}", "all")}, {}, false, 0}, kT0, &fetches, &snapshot),
      IsOk());
  cache_.OnDemand({Demand("r", {{"env", "prod"}})}, kT0, &snapshot);  // A hit.
  size_t total = 0;
  const std::vector<RelayResourceStats> stats = cache_.ResourceStats(10, &total);
  EXPECT_EQ(total, 2u);
  std::map<std::string, RelayResourceStats> by_name;
  for (const RelayResourceStats& resource : stats) by_name[resource.name] = resource;
  ASSERT_EQ(by_name.size(), 2u);
  EXPECT_EQ(by_name["r"].type_url, kRds);
  EXPECT_EQ(by_name["r"].upstream, 0);
  EXPECT_EQ(by_name["r"].hits, 1);
  EXPECT_EQ(by_name["r"].misses, 1);
  EXPECT_EQ(by_name["r"].cached_variants, 1);
  EXPECT_EQ(by_name["s"].hits, 0);
  EXPECT_EQ(by_name["s"].misses, 1);
  EXPECT_EQ(by_name["s"].cached_variants, 0);
  // The sum over resources is the cache's.
  EXPECT_EQ(cache_.stats().hits, 1);
  EXPECT_EQ(cache_.stats().misses, 2);

  EXPECT_THAT(cache_.ResourceStats(1, &total), SizeIs(1));
  EXPECT_EQ(total, 2u);
}

TEST_F(RelayCacheTest, LastSubscriberLeavingLingersBeforeUnsubscribing) {
  std::shared_ptr<const Snapshot> snapshot;
  cache_.OnDemand({Demand("r", {{"env", "prod"}})}, kT0, &snapshot);
  std::vector<Fetch> fetches;
  ASSERT_THAT(cache_.Apply(0, {kRds, {Upstream("r", "{env: prod}", "v1")}, {}, false, 0}, kT0,
                           &fetches, &snapshot),
              IsOk());
  cache_.OnDemand({Demand("r", {{"env", "prod"}}, /*added=*/false)}, kT0, &snapshot);
  // A flapping client comes back within the linger: nothing goes upstream.
  fetches = cache_.OnDemand({Demand("r", {{"env", "prod"}})}, kT0 + absl::Seconds(5), &snapshot);
  EXPECT_THAT(fetches, IsEmpty());
  EXPECT_THAT(cache_.Expire(kT0 + absl::Seconds(30), &snapshot), IsEmpty());
  cache_.OnDemand({Demand("r", {{"env", "prod"}}, /*added=*/false)}, kT0 + absl::Seconds(40),
                  &snapshot);
  EXPECT_EQ(cache_.NextExpiry(), kT0 + absl::Seconds(50));
  fetches = cache_.Expire(kT0 + absl::Seconds(50), &snapshot);
  EXPECT_EQ(FetchedParams(fetches, /*subscribe=*/false), std::set<std::string>{"{env=prod}"});
  ASSERT_NE(snapshot, nullptr);
  EXPECT_EQ(snapshot->Find(RouteConfigurationType(), "r"), nullptr);
  EXPECT_EQ(cache_.stats().resources, 0);
  EXPECT_EQ(cache_.stats().cached_variants, 0);
}

// A simulated upstream ADS stream that behaves as Facet's server does for
// locator subscriptions: each subscription gets the variant its parameters
// select, a variant already sent on the stream is not sent again, a
// subscription that selects nothing hears "does not exist" once, and a
// change sends new variants and removes withdrawn ones in one response.
class SimulatedUpstream {
 public:
  struct V {
    std::string match;
    std::string version;
  };

  void SetVariants(std::vector<V> variants) {
    variants_ = std::move(variants);
    Respond({});
  }
  void Subscribe(const ParameterSet& params) {
    subs_[CanonicalParameters(params)] = params;
    Respond(params);
  }
  void Unsubscribe(const ParameterSet& params) {
    subs_.erase(CanonicalParameters(params));
    Respond({}, /*announce=*/false);
  }
  std::vector<UpstreamUpdate>& responses() { return responses_; }

  // The version the upstream selects for `params` ("" for none).
  std::string Select(const ParameterSet& params) const {
    for (const V& v : variants_) {
      if (Match(v.match).Matches(params)) return v.version;
    }
    return "";
  }

 private:
  void Respond(std::optional<ParameterSet> subscribed, bool announce = true) {
    UpstreamUpdate update{kRds, {}, {}, false, 0};
    std::map<std::string, const V*> desired;
    for (const auto& [key, params] : subs_) {
      for (const V& v : variants_) {
        if (Match(v.match).Matches(params)) desired[v.version] = &v;
      }
    }
    for (const auto& [version, v] : desired) {
      if (held_.count(version) == 0) update.variants.push_back(Upstream("r", v->match, version));
    }
    for (const auto& [version, match] : held_) {
      if (desired.count(version) == 0) update.removals.push_back({"r", Match(match)});
    }
    if (announce && subscribed.has_value() && Select(*subscribed).empty()) {
      update.removals.push_back({"r", *Constraint::Compile(ExactConstraints(*subscribed))});
    }
    held_.clear();
    for (const auto& [version, v] : desired) held_[version] = v->match;
    if (!update.variants.empty() || !update.removals.empty()) responses_.push_back(update);
  }

  std::vector<V> variants_;
  std::map<std::string, ParameterSet> subs_;
  std::map<std::string, std::string> held_;  // version -> match
  std::vector<UpstreamUpdate> responses_;
};

// Random demand, upstream changes (including a change of the key set) and
// delivery order: a served variant always matches the parameters it is
// served for, and once everything is delivered every parameter set gets
// exactly what the upstream selects for it.
TEST(RelayCacheProperty, NeverServesAVariantThatDoesNotMatchAndConvergesToUpstream) {
  const std::vector<std::vector<SimulatedUpstream::V>> sets = {
      {{"{env: prod}", "prod-1"}, {"{env: test}", "test-1"}},
      {{"{env: prod, version: {exists: false}}", "prod-2"},
       {"{env: prod, version: v1}", "prod-v1"},
       {"{env: test, version: {exists: false}}", "test-2"},
       {"{env: test, version: {exists: true}}", "test-any"}},
      {},
      {{"{env: prod}", "prod-3"}, {"{env: {not: prod}}", "other-3"}},
  };
  std::vector<ParameterSet> params;
  for (const char* env : {"prod", "test", "qa", ""}) {
    for (const char* version : {"v1", "v2", ""}) {
      for (const char* pod : {"a", "b"}) {
        ParameterSet p{{"pod", pod}};
        if (*env) p["env"] = env;
        if (*version) p["version"] = version;
        params.push_back(p);
      }
    }
  }
  for (int seed = 1; seed <= 40; ++seed) {
    std::mt19937 random(seed);
    RelayCache cache(RelayCache::Options{nullptr, absl::Seconds(10), ConstraintLimits{}});
    SimulatedUpstream upstream;
    upstream.SetVariants(sets[0]);
    std::vector<Fetch> pending;  // Requests on their way upstream.
    std::map<std::string, int> demand;
    absl::Time now = kT0;
    auto check = [&](const std::string& when) {
      for (const ParameterSet& p : params) {
        const std::string served = Served(cache.current(), "r", p);
        if (served == "?" || served.empty()) continue;
        for (const auto& set : sets) {
          for (const auto& v : set) {
            if (v.version == served) {
              ASSERT_TRUE(Match(v.match).Matches(p))
                  << "seed " << seed << " " << when << ": served " << served << " to "
                  << ParameterSetToString(p);
            }
          }
        }
      }
    };
    auto apply = [&](const UpstreamUpdate& update) {
      std::vector<Fetch> fetches;
      std::shared_ptr<const Snapshot> snapshot;
      ASSERT_THAT(cache.Apply(0, update, now, &fetches, &snapshot), IsOk());
      pending.insert(pending.end(), fetches.begin(), fetches.end());
    };
    auto deliver = [&]() {
      // Requests reach the upstream in order; responses come back in order.
      while (!pending.empty() || !upstream.responses().empty()) {
        if (!pending.empty()) {
          Fetch fetch = pending.front();
          pending.erase(pending.begin());
          if (fetch.subscribe) {
            upstream.Subscribe(fetch.subscription.params);
          } else {
            upstream.Unsubscribe(fetch.subscription.params);
          }
        }
        if (!upstream.responses().empty() && random() % 2 == 0) {
          UpstreamUpdate update = upstream.responses().front();
          upstream.responses().erase(upstream.responses().begin());
          apply(update);
          check("mid-flight");
        }
      }
    };
    for (int step = 0; step < 200; ++step) {
      const int action = static_cast<int>(random() % 10);
      std::shared_ptr<const Snapshot> snapshot;
      if (action < 5) {
        const ParameterSet& p = params[random() % params.size()];
        const std::string key = CanonicalParameters(p);
        const bool add = demand[key] == 0 || random() % 2 == 0;
        demand[key] += add ? 1 : -1;
        std::vector<Fetch> fetches = cache.OnDemand({Demand("r", p, add)}, now, &snapshot);
        pending.insert(pending.end(), fetches.begin(), fetches.end());
      } else if (action < 6) {
        upstream.SetVariants(sets[random() % sets.size()]);
      } else if (action < 7) {
        now += absl::Seconds(4);
        std::vector<Fetch> fetches = cache.Expire(now, &snapshot);
        pending.insert(pending.end(), fetches.begin(), fetches.end());
      } else if (!pending.empty() || !upstream.responses().empty()) {
        deliver();
      }
      check(absl::StrCat("step ", step));
      if (::testing::Test::HasFatalFailure()) return;
    }
    deliver();
    for (const ParameterSet& p : params) {
      if (demand[CanonicalParameters(p)] <= 0) continue;
      EXPECT_EQ(Served(cache.current(), "r", p), upstream.Select(p))
          << "seed " << seed << ": " << ParameterSetToString(p);
    }
  }
}

}  // namespace
}  // namespace facet::xds
