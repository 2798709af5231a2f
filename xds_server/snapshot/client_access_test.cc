#include "xds_server/snapshot/client_access.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/incremental_builder.h"
#include "xds_server/snapshot/test_objects.h"

namespace facet::xds {
namespace {

using ::facet::xds::testing::Certified;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

AllowedClient Spiffe(const std::string& id) { return {AllowedClient::Kind::kSpiffeId, id}; }
AllowedClient Dns(const std::string& name) { return {AllowedClient::Kind::kDnsName, name}; }

ClientIdentity WithSpiffe(const std::string& id) {
  ClientIdentity identity;
  identity.spiffe_id = id;
  return identity;
}
ClientIdentity WithDns(std::vector<std::string> names) {
  ClientIdentity identity;
  identity.dns_names = std::move(names);
  return identity;
}

TEST(AllowedClientTest, AcceptsSpiffeIdsPrefixesAndDnsNames) {
  for (const AllowedClient& client :
       {Spiffe("spiffe://example.org/ns/demo/sa/client"), Spiffe("spiffe://example.org"),
        Spiffe("spiffe://td_1.example-2/a.b/c_d-e"), Spiffe("spiffe://example.org/ns/demo/*"),
        Spiffe("spiffe://example.org/*"), Dns("client.demo.svc"), Dns("Client-1.Example.COM"),
        Dns("localhost")}) {
    EXPECT_TRUE(CheckAllowedClient(client).ok()) << client.value;
  }
}

TEST(AllowedClientTest, RejectsMalformedEntriesSayingWhy) {
  const std::vector<std::pair<AllowedClient, std::string>> cases = {
      {Spiffe("https://example.org/a"), "must start with \"spiffe://\""},
      {Spiffe("spiffe:///a"), "empty trust domain"},
      {Spiffe("spiffe://Example.org/a"), "trust domain with characters"},
      {Spiffe("spiffe://example.org:443/a"), "trust domain with characters"},
      {Spiffe("spiffe://example.org/a//b"), "empty path segment"},
      {Spiffe("spiffe://example.org/a/"), "empty path segment"},
      {Spiffe("spiffe://example.org/a/../b"), "\"..\" path segment"},
      {Spiffe("spiffe://example.org/a?b=c"), "no query"},
      {Spiffe("spiffe://example.org/a%20b"), "percent-encoding"},
      {Spiffe("spiffe://example.org/a*"), "contains '*'"},
      {Spiffe("spiffe://example.org/*/b"), "contains '*'"},
      {Spiffe("spiffe://*"), "empty trust domain"},
      {Spiffe("spiffe://example.org/" + std::string(2040, 'a')), "at most 2048"},
      {Dns(""), "is empty"},
      {Dns("*.example.org"), "wildcards are not supported"},
      {Dns("a..example.org"), "1 to 63 characters"},
      {Dns("-a.example.org"), "starts or ends with '-'"},
      {Dns("a_b.example.org"), "letters, digits and '-'"},
      {Dns(std::string(254, 'a')), "at most 253"},
  };
  for (const auto& [client, reason] : cases) {
    absl::Status status = CheckAllowedClient(client);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << client.value;
    EXPECT_THAT(status.message(), HasSubstr(reason)) << client.value;
  }
}

TEST(AllowedClientTest, SpiffeIdsMatchExactlyOrBelowAPrefix) {
  const AllowedClient exact = Spiffe("spiffe://example.org/ns/demo/sa/client");
  EXPECT_TRUE(Admits(exact, WithSpiffe("spiffe://example.org/ns/demo/sa/client")));
  EXPECT_FALSE(Admits(exact, WithSpiffe("spiffe://example.org/ns/demo/sa/client2")));
  EXPECT_FALSE(Admits(exact, WithSpiffe("spiffe://example.org/ns/demo/sa/Client")));
  EXPECT_FALSE(Admits(exact, ClientIdentity()));

  const AllowedClient prefix = Spiffe("spiffe://example.org/ns/demo/*");
  EXPECT_TRUE(Admits(prefix, WithSpiffe("spiffe://example.org/ns/demo/sa/client")));
  EXPECT_TRUE(Admits(prefix, WithSpiffe("spiffe://example.org/ns/demo/x")));
  EXPECT_FALSE(Admits(prefix, WithSpiffe("spiffe://example.org/ns/demo")));
  EXPECT_FALSE(Admits(prefix, WithSpiffe("spiffe://example.org/ns/demo/")));
  EXPECT_FALSE(Admits(prefix, WithSpiffe("spiffe://example.org/ns/demox/sa")));
  EXPECT_FALSE(Admits(prefix, WithSpiffe("spiffe://example.org/ns/demo/../admin")));
  EXPECT_FALSE(Admits(prefix, WithSpiffe("spiffe://other.org/ns/demo/sa/client")));

  const AllowedClient domain = Spiffe("spiffe://example.org/*");
  EXPECT_TRUE(Admits(domain, WithSpiffe("spiffe://example.org/anything")));
  EXPECT_FALSE(Admits(domain, WithSpiffe("spiffe://example.org.evil/anything")));
  // A DNS SAN is not a SPIFFE ID.
  EXPECT_FALSE(Admits(domain, WithDns({"example.org"})));
}

TEST(AllowedClientTest, DnsNamesMatchAnySanIgnoringCase) {
  const AllowedClient dns = Dns("client.demo.svc");
  EXPECT_TRUE(Admits(dns, WithDns({"other.example", "CLIENT.demo.svc"})));
  EXPECT_FALSE(Admits(dns, WithDns({"client.demo.svc.evil"})));
  EXPECT_FALSE(Admits(dns, WithDns({"*.demo.svc"})));
  EXPECT_FALSE(Admits(dns, WithSpiffe("spiffe://client.demo.svc")));
}

TEST(SameIdentityTest, ClientsWithoutCertificatesShareTheEmptyIdentity) {
  EXPECT_TRUE(SameIdentity(ClientIdentity(), ClientIdentity()));
  EXPECT_FALSE(SameIdentity(ClientIdentity(), Certified("spiffe://td/a", {})));
  EXPECT_FALSE(SameIdentity(Certified("spiffe://td/a", {}), ClientIdentity()));
  // A certificate that names nobody is the same as no other client, with or
  // without a certificate.
  EXPECT_FALSE(SameIdentity(Certified("", {}), Certified("", {})));
  EXPECT_FALSE(SameIdentity(Certified("", {}), ClientIdentity()));
}

TEST(SameIdentityTest, CertificatesMatchOnTheWholeIdentityNotOneSharedName) {
  EXPECT_TRUE(SameIdentity(Certified("spiffe://td/a", {"localhost"}),
                           Certified("spiffe://td/a", {"localhost"})));
  EXPECT_TRUE(SameIdentity(Certified("", {"a.example", "B.example", "a.example"}),
                           Certified("", {"b.example", "A.EXAMPLE"})));
  // One shared DNS SAN (every test certificate carries "localhost") does not
  // make two SPIFFE identities the same.
  EXPECT_FALSE(SameIdentity(Certified("spiffe://td/a", {"localhost"}),
                            Certified("spiffe://td/b", {"localhost"})));
  EXPECT_FALSE(
      SameIdentity(Certified("", {"a.example", "b.example"}), Certified("", {"b.example"})));
  EXPECT_FALSE(
      SameIdentity(Certified("spiffe://td/a", {"a.example"}), Certified("", {"a.example"})));
  EXPECT_FALSE(SameIdentity(Certified("spiffe://td/a", {}), Certified("spiffe://td/A", {})));
}

TEST(ParseAllowedClientListTest, ReadsSpiffeIdsPrefixesAndDnsNames) {
  absl::StatusOr<std::vector<AllowedClient>> clients =
      ParseAllowedClientList("spiffe://td/ns/ops/sa/csds,ops.example.com,spiffe://td/ns/ops/*");
  ASSERT_TRUE(clients.ok()) << clients.status();
  EXPECT_THAT(*clients, ElementsAre(Spiffe("spiffe://td/ns/ops/sa/csds"), Dns("ops.example.com"),
                                    Spiffe("spiffe://td/ns/ops/*")));
}

TEST(ParseAllowedClientListTest, RejectsBadEntriesNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "DNS name \"\" is empty"},
      {"a.example,,b.example", "DNS name \"\" is empty"},
      {"a.example,", "DNS name \"\" is empty"},
      {"ops_1.example", "DNS name \"ops_1.example\" is not a DNS name"},
      {"*.example", "wildcards are not supported"},
      {"https://td/a", "SPIFFE ID \"https://td/a\" must start with \"spiffe://\""},
      {"spiffe://Td/a", "SPIFFE ID \"spiffe://Td/a\" has a trust domain"},
      {"spiffe://td/a*", "contains '*'"},
      {"spiffe://td/a\n", "SPIFFE ID \"spiffe://td/a\\n\""},
  };
  for (const auto& [list, message] : cases) {
    absl::StatusOr<std::vector<AllowedClient>> clients = ParseAllowedClientList(list);
    EXPECT_EQ(clients.status().code(), absl::StatusCode::kInvalidArgument) << list;
    EXPECT_THAT(clients.status().message(), HasSubstr(message)) << list;
  }
  std::vector<std::string> many(kMaxAllowedClients + 1, "a.example");
  EXPECT_THAT(ParseAllowedClientList(absl::StrJoin(many, ",")).status().message(),
              HasSubstr("257 entries; at most 256"));
  many.pop_back();
  EXPECT_TRUE(ParseAllowedClientList(absl::StrJoin(many, ",")).ok());
}

TEST(ClientAccessTest, RestrictsOnlyTheListedAuthorities) {
  ClientAccess access({{"secure.example", {Spiffe("spiffe://td/allowed")}}});
  const std::string secure = "xdstp://secure.example/envoy.config.cluster.v3.Cluster/c";
  const std::string open = "xdstp://open.example/envoy.config.cluster.v3.Cluster/c";
  EXPECT_TRUE(access.MayRead(secure, WithSpiffe("spiffe://td/allowed")));
  EXPECT_FALSE(access.MayRead(secure, WithSpiffe("spiffe://td/other")));
  EXPECT_FALSE(access.MayRead(secure, ClientIdentity()));
  EXPECT_TRUE(access.MayRead(open, ClientIdentity()));
  // Old-style names belong to no XdsAuthority: never restricted.
  EXPECT_TRUE(access.MayRead("c", ClientIdentity()));
}

TEST(ClientAccessTest, DifferencesNameTheAuthoritiesWhoseClientsChanged) {
  ClientAccess a({{"a", {Spiffe("spiffe://td/x")}}, {"b", {Dns("b.example")}}});
  ClientAccess b({{"a", {Spiffe("spiffe://td/x")}}, {"b", {Dns("c.example")}}, {"c", {Dns("c")}}});
  EXPECT_THAT(ClientAccess::Differences(&a, &b), ElementsAre("b", "c"));
  EXPECT_THAT(ClientAccess::Differences(&a, nullptr), ElementsAre("a", "b"));
  EXPECT_THAT(ClientAccess::Differences(&a, &a), IsEmpty());
  EXPECT_NE(a.digest(), b.digest());
}

// --- XdsAuthority spec.allowedClients through the builders -------------------

AuthorityObject Authority(const std::string& authority,
                          std::optional<std::vector<AllowedClient>> clients) {
  AuthorityObject object;
  object.ref = {kXdsAuthorityKind, "", authority};
  object.authority = authority;
  object.allowed_namespaces = {"demo"};
  object.allowed_clients = std::move(clients);
  return object;
}

// A ClusterLoadAssignment `name` under `authority`, declared by the object
// demo/<authority>-<name>.
ResourceObject Endpoints(const std::string& name, const std::string& authority) {
  ResourceObject object = testing::MakeObject("demo", authority + "-" + name, "endpoint", name,
                                              {{"", "{endpoints: []}"}});
  object.spec->authority = authority;
  return object;
}

std::string EndpointsName(const std::string& authority, const std::string& name) {
  return "xdstp://" + authority + "/envoy.config.endpoint.v3.ClusterLoadAssignment/" + name;
}

TEST(AuthorityAllowedClientsTest, InvalidEntriesRejectTheAuthorityNamingTheField) {
  BuildResult result = BuildSnapshot(
      {Endpoints("c", "secure.example")},
      {Authority("secure.example",
                 std::vector<AllowedClient>{Spiffe("spiffe://td/ok"), Dns("*.example.org")}),
       Authority("empty.example", std::vector<AllowedClient>{})},
      nullptr, BuildOptions());
  std::map<std::string, const ObjectStatus*> by_name;
  for (const ObjectStatus& status : result.statuses) by_name[status.ref.name] = &status;
  const ObjectStatus& secure = *by_name.at("secure.example");
  EXPECT_FALSE(secure.accepted);
  ASSERT_EQ(secure.findings.size(), 1u);
  EXPECT_EQ(secure.findings[0].reason, "InvalidSpec");
  EXPECT_EQ(secure.findings[0].field, "spec.allowedClients[1].dnsName");
  EXPECT_THAT(secure.findings[0].message, HasSubstr("\"*.example.org\" contains '*'"));
  const ObjectStatus& empty = *by_name.at("empty.example");
  ASSERT_EQ(empty.findings.size(), 1u);
  EXPECT_EQ(empty.findings[0].field, "spec.allowedClients");
  EXPECT_THAT(empty.findings[0].message, HasSubstr("leave the field out"));
  // A rejected declaration admits nothing: its resources are not served at
  // all (never served unrestricted).
  EXPECT_FALSE(by_name.at("secure.example-c")->accepted);
  EXPECT_EQ(result.snapshot->size(), 0u);
  EXPECT_EQ(result.snapshot->access(), nullptr);
}

TEST(AuthorityAllowedClientsTest, TooManyEntriesAreRejected) {
  std::vector<AllowedClient> clients(kMaxAllowedClients + 1, Dns("a.example"));
  BuildResult result =
      BuildSnapshot({}, {Authority("secure.example", clients)}, nullptr, BuildOptions());
  ASSERT_EQ(result.statuses.size(), 1u);
  ASSERT_EQ(result.statuses[0].findings.size(), 1u);
  EXPECT_EQ(result.statuses[0].findings[0].field, "spec.allowedClients");
  EXPECT_THAT(result.statuses[0].findings[0].message, HasSubstr("has 257 entries; at most 256"));
}

TEST(AuthorityAllowedClientsTest, TheSnapshotCarriesTheAcceptedRestrictions) {
  BuildResult result = BuildSnapshot(
      {Endpoints("c", "secure.example"), Endpoints("c", "open.example")},
      {Authority("secure.example", std::vector<AllowedClient>{Spiffe("spiffe://td/ok")}),
       Authority("open.example", std::nullopt)},
      nullptr, BuildOptions());
  for (const ObjectStatus& status : result.statuses) EXPECT_TRUE(status.accepted);
  ASSERT_NE(result.snapshot->access(), nullptr);
  EXPECT_THAT(
      result.snapshot->access()->restricted(),
      ElementsAre(::testing::Pair("secure.example", ElementsAre(Spiffe("spiffe://td/ok")))));
  EXPECT_EQ(result.snapshot->size(), 2u);  // Served; the ADS server filters per client.
}

TEST(AuthorityAllowedClientsTest, ChangingTheClientsListsTheAuthoritysResourcesAsChanged) {
  IncrementalBuilder builder{BuildOptions()};
  builder.Upsert(Endpoints("c1", "secure.example"));
  builder.Upsert(Endpoints("c2", "secure.example"));
  builder.Upsert(Endpoints("c3", "open.example"));
  builder.Upsert(Authority("secure.example", std::nullopt));
  builder.Upsert(Authority("open.example", std::nullopt));
  std::shared_ptr<const Snapshot> first = builder.Build().snapshot;
  EXPECT_EQ(first->access(), nullptr);

  builder.Upsert(Authority("secure.example", std::vector<AllowedClient>{Spiffe("spiffe://td/ok")}));
  IncrementalBuilder::Result restricted = builder.Build();
  ASSERT_TRUE(restricted.snapshot_changed);
  const Snapshot& second = *restricted.snapshot;
  ASSERT_NE(second.access(), nullptr);
  EXPECT_NE(second.version(), first->version());
  EXPECT_EQ(second.base_version(), first->version());
  ASSERT_EQ(second.changes().by_type.size(), 1u);
  const TypeChanges& changes = second.changes().by_type.at(&ClusterLoadAssignmentType());
  EXPECT_THAT(changes.changed, ElementsAre(EndpointsName("secure.example", "c1"),
                                           EndpointsName("secure.example", "c2")));
  EXPECT_THAT(changes.added, IsEmpty());
  EXPECT_THAT(changes.removed, IsEmpty());

  // The same restrictions again: nothing changes.
  builder.Upsert(Authority("secure.example", std::vector<AllowedClient>{Spiffe("spiffe://td/ok")}));
  EXPECT_FALSE(builder.Build().snapshot_changed);

  builder.Upsert(Authority("secure.example", std::nullopt));
  IncrementalBuilder::Result opened = builder.Build();
  ASSERT_TRUE(opened.snapshot_changed);
  EXPECT_EQ(opened.snapshot->access(), nullptr);
  EXPECT_EQ(opened.snapshot->version(), first->version());
  EXPECT_EQ(opened.snapshot->changes().by_type.at(&ClusterLoadAssignmentType()).changed.size(), 2u);
}

}  // namespace
}  // namespace facet::xds
