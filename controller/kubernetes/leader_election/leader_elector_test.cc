#include "controller/kubernetes/leader_election/leader_elector.h"

#include <vector>

#include "controller/kubernetes/client/yaml_fields.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_client.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller {
namespace {

using ::facet::testing::FakeClock;
using ::facet::testing::FakeKubeClient;
using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;

constexpr char kLeases[] = "/apis/coordination.k8s.io/v1/leases";

class LeaderElectorTest : public ::testing::Test {
 protected:
  std::unique_ptr<LeaderElector> Elector(const std::string& identity, std::vector<bool>* changes) {
    LeaderElector::Options options;
    options.lease_namespace = "facet-system";
    options.identity = identity;
    auto elector = LeaderElector::Create(client_, clock_, options, [changes](bool leading) {
      changes->push_back(leading);
    });
    EXPECT_THAT(elector, IsOk());
    return *std::move(elector);
  }
  std::string Holder() {
    auto objects = client_.Objects(kLeases);
    auto it = objects.find("facet-system/facet-controller");
    return it == objects.end() ? "<none>" : kube::StringAt(it->second, {"spec", "holderIdentity"});
  }
  std::string Transitions() {
    return kube::StringAt(client_.Objects(kLeases)["facet-system/facet-controller"],
                          {"spec", "leaseTransitions"});
  }

  FakeKubeClient client_;
  FakeClock clock_;
};

TEST_F(LeaderElectorTest, FirstReplicaCreatesTheLeaseAndLeads) {
  std::vector<bool> changes;
  auto a = Elector("a", &changes);
  EXPECT_TRUE(a->Tick());
  EXPECT_TRUE(a->is_leader());
  EXPECT_EQ(Holder(), "a");
  EXPECT_EQ(changes, std::vector<bool>{true});
  YAML::Node lease = client_.Objects(kLeases)["facet-system/facet-controller"];
  EXPECT_EQ(kube::StringAt(lease, {"kind"}), "Lease");
  EXPECT_EQ(kube::StringAt(lease, {"apiVersion"}), "coordination.k8s.io/v1");
  EXPECT_EQ(kube::StringAt(lease, {"spec", "leaseDurationSeconds"}), "15");
}

TEST_F(LeaderElectorTest, OthersWaitAFullLeaseDurationOfSilenceBeforeTakingOver) {
  std::vector<bool> a_changes, b_changes;
  auto a = Elector("a", &a_changes);
  auto b = Elector("b", &b_changes);
  ASSERT_TRUE(a->Tick());
  // While a renews every 2 s, b never leads.
  for (int i = 0; i < 20; ++i) {
    clock_.Advance(absl::Seconds(2));
    EXPECT_TRUE(a->Tick());
    EXPECT_FALSE(b->Tick());
  }
  // a goes silent. b takes over only once 15 s have passed since it last saw
  // the lease change, by its own clock.
  clock_.Advance(absl::Seconds(14));
  EXPECT_FALSE(b->Tick());
  clock_.Advance(absl::Seconds(2));
  EXPECT_TRUE(b->Tick());
  EXPECT_EQ(Holder(), "b");
  EXPECT_EQ(Transitions(), "1");
  // a wakes up, sees b holding a fresh lease, and stops leading.
  EXPECT_FALSE(a->Tick());
  EXPECT_EQ(a_changes, (std::vector<bool>{true, false}));
  EXPECT_EQ(b_changes, std::vector<bool>{true});
}

TEST_F(LeaderElectorTest, ReleaseOnStopLetsAnotherTakeOverAtOnce) {
  std::vector<bool> a_changes, b_changes;
  auto a = Elector("a", &a_changes);
  auto b = Elector("b", &b_changes);
  ASSERT_TRUE(a->Tick());
  EXPECT_FALSE(b->Tick());
  a->Stop();
  EXPECT_EQ(Holder(), "");
  EXPECT_EQ(a_changes, (std::vector<bool>{true, false}));
  EXPECT_TRUE(b->Tick());  // No waiting for the lease to expire.
  EXPECT_EQ(Holder(), "b");
}

TEST_F(LeaderElectorTest, StaleRenewTimeWrittenByOthersIsNotTrusted) {
  std::vector<bool> changes;
  // A lease whose renewTime is far in the past, but which b has just started
  // observing: b must still wait a full lease duration.
  YAML::Node lease = YAML::Load(
      "{apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {name: facet-controller, "
      "namespace: facet-system}, spec: {holderIdentity: old, leaseDurationSeconds: 15, "
      "renewTime: '2001-01-01T00:00:00.000000Z', leaseTransitions: 4}}");
  client_.Put(kLeases, lease);
  auto b = Elector("b", &changes);
  EXPECT_FALSE(b->Tick());
  clock_.Advance(absl::Seconds(10));
  EXPECT_FALSE(b->Tick());
  clock_.Advance(absl::Seconds(6));
  EXPECT_TRUE(b->Tick());
  EXPECT_EQ(Transitions(), "5");
}

TEST_F(LeaderElectorTest, StopsCountingItselfLeaderWhenRenewalStallsBeforeTheLeaseExpires) {
  std::vector<bool> changes;
  auto a = Elector("a", &changes);
  ASSERT_TRUE(a->Tick());
  EXPECT_TRUE(a->is_leader());
  // No renewal happens (its Update hangs, say): past the renew deadline (10
  // s) and before the lease duration (15 s) it no longer writes as leader,
  // though no Tick() has returned to notice.
  clock_.Advance(absl::Seconds(9));
  EXPECT_TRUE(a->is_leader());
  clock_.Advance(absl::Seconds(2));
  EXPECT_FALSE(a->is_leader());
  // A renewal makes it leader again.
  ASSERT_TRUE(a->Tick());
  EXPECT_TRUE(a->is_leader());
}

TEST_F(LeaderElectorTest, RejectsBadTimings) {
  LeaderElector::Options options;
  options.lease_namespace = "ns";
  options.identity = "a";
  options.renew_deadline = absl::Seconds(20);
  EXPECT_THAT(LeaderElector::Create(client_, clock_, options, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
  options.renew_deadline = absl::Seconds(10);
  options.identity = "";
  EXPECT_THAT(LeaderElector::Create(client_, clock_, options, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(MicroTimeTest, FormatsLikeKubernetes) {
  EXPECT_EQ(FormatMicroTime(absl::FromUnixMicros(1136214245000123)), "2006-01-02T15:04:05.000123Z");
}

}  // namespace
}  // namespace facet::controller
