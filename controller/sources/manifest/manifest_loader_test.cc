#include "controller/sources/manifest/manifest_loader.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/json/hostile_yaml.h"
#include "xds_server/json/yaml_json.h"

namespace facet::controller {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class ManifestLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  fs::path dir_;
};

constexpr char kResource[] = R"(apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: NAME, namespace: demo}
spec: {type: endpoint, name: NAME, variants: [{resource: {}}]}
)";

std::string ResourceNamed(const std::string& name) {
  std::string text = kResource;
  for (size_t pos; (pos = text.find("NAME")) != std::string::npos;) text.replace(pos, 4, name);
  return text;
}

TEST_F(ManifestLoaderTest, ReadsDirectoriesInNameOrderWithMultipleDocuments) {
  Write("b.yaml", ResourceNamed("b1") + "---\n" + ResourceNamed("b2"));
  Write("a.yml", ResourceNamed("a"));
  Write("c.json", R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsAuthority","metadata":{"name":"c"},"spec":{}})");
  Write("notes.txt", "ignored");
  Write(".hidden.yaml", "ignored: [");
  ManifestSet set = LoadManifests({dir_.string()});
  EXPECT_THAT(set.problems, IsEmpty());
  ASSERT_EQ(set.resources.size(), 3u);
  EXPECT_EQ(set.resources[0].ref.name, "a");
  EXPECT_EQ(set.resources[1].ref.name, "b1");
  EXPECT_EQ(set.resources[2].ref.name, "b2");
  EXPECT_THAT(set.resources[2].location, HasSubstr("b.yaml:6"));
  ASSERT_EQ(set.authorities.size(), 1u);
  EXPECT_EQ(set.files.size(), 3u);
}

TEST_F(ManifestLoaderTest, ExpandsLists) {
  std::string path = Write("list.yaml", R"(apiVersion: v1
kind: List
items:
- {apiVersion: facet.dev/v1alpha1, kind: XdsAuthority, metadata: {name: x}, spec: {}}
- {apiVersion: facet.dev/v1alpha1, kind: XdsAuthority, metadata: {name: y}, spec: {}}
)");
  EXPECT_EQ(LoadManifests({path}).authorities.size(), 2u);
}

TEST_F(ManifestLoaderTest, ReportsUnreadableAndInvalidYaml) {
  std::string bad = Write("bad.yaml", "a: [1, 2\n");
  ManifestSet set = LoadManifests({bad, (dir_ / "missing.yaml").string()});
  EXPECT_THAT(set.problems,
              ElementsAre(Field(&ManifestProblem::kind, ManifestProblem::Kind::kUnreadable),
                          Field(&ManifestProblem::kind, ManifestProblem::Kind::kUnreadable)));
  // Missing paths are found while listing, before any file is read.
  EXPECT_THAT(set.problems[0].message, HasSubstr("no such file"));
  EXPECT_THAT(set.problems[1].message, HasSubstr("not valid YAML"));
}

TEST_F(ManifestLoaderTest, SymlinkLoopIsReportedAsALoop) {
  fs::create_symlink(dir_ / "b.yaml", dir_ / "a.yaml");
  fs::create_symlink(dir_ / "a.yaml", dir_ / "b.yaml");
  ManifestSet set = LoadManifests({(dir_ / "a.yaml").string()});
  ASSERT_EQ(set.problems.size(), 1u);
  EXPECT_EQ(set.problems[0].message, "too many levels of symbolic links");
  ManifestFile file = ReadManifestFile((dir_ / "a.yaml").string(), /*fingerprints=*/false);
  EXPECT_TRUE(file.unreadable);
  ASSERT_EQ(file.problems.size(), 1u);
  EXPECT_EQ(file.problems[0].message, "cannot be read: too many levels of symbolic links");
}

TEST_F(ManifestLoaderTest, DeviceIsNotARegularFile) {
  ManifestFile file = ReadManifestFile("/dev/zero", /*fingerprints=*/false);
  EXPECT_TRUE(file.unreadable);
  ASSERT_EQ(file.problems.size(), 1u);
  EXPECT_EQ(file.problems[0].message, "is not a regular file");
}

TEST_F(ManifestLoaderTest, FifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = (dir_ / "pipe.yaml").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Without a writer, a blocking open would never return.
  ManifestSet set = LoadManifests({fifo});
  ASSERT_EQ(set.problems.size(), 1u);
  EXPECT_EQ(set.problems[0].kind, ManifestProblem::Kind::kUnreadable);
  EXPECT_EQ(set.problems[0].message, "is not a regular file");
  // In a directory it is not a manifest file at all.
  EXPECT_THAT(ListManifestFiles({dir_.string()}, &set.problems), IsEmpty());
}

TEST_F(ManifestLoaderTest, ReportsDuplicatesForeignObjectsAndGarbage) {
  std::string path = Write("m.yaml", ResourceNamed("x") + "---\n" + ResourceNamed("x") +
                                         "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n"
                                         "---\n- not\n- an object\n---\n");
  ManifestSet set = LoadManifests({path});
  EXPECT_EQ(set.resources.size(), 1u);
  ASSERT_EQ(set.problems.size(), 3u);
  EXPECT_EQ(set.problems[0].kind, ManifestProblem::Kind::kError);
  EXPECT_THAT(set.problems[0].message, HasSubstr("demo/x: defined again (first at"));
  EXPECT_EQ(set.problems[1].kind, ManifestProblem::Kind::kWarning);
  EXPECT_THAT(set.problems[1].message, HasSubstr("Namespace demo is not a Facet object"));
  EXPECT_EQ(set.problems[2].kind, ManifestProblem::Kind::kError);
  EXPECT_THAT(set.problems[2].message, HasSubstr("not a Facet object"));
}

TEST_F(ManifestLoaderTest, ReturnsGatewayObjectsBesideFacetObjects) {
  Write("a.yaml", ResourceNamed("echo") + R"(---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: demo}
spec: {ports: [{name: grpc, port: 7070}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: echo-1, namespace: demo, labels: {kubernetes.io/service-name: echo}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1]}]
)");
  Write("b.yaml", R"(apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: echo, namespace: demo}
spec: {parentRefs: [{group: "", kind: Service, name: echo}], rules: [{nmae: x}]}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: g, namespace: demo}
spec: {from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: a}], to: [{group: "", kind: Service}]}
---
apiVersion: facet.dev/v1alpha1
kind: XdsVariantPolicy
metadata: {name: p, namespace: demo}
spec: {targetRefs: [{group: gateway.networking.k8s.io, kind: GRPCRoute, name: echo}], when: {env: prod}}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: demo}
spec: {}
)");
  ManifestSet set = LoadManifests({dir_.string()});
  ASSERT_EQ(set.resources.size(), 1u);
  std::vector<std::string> loaded;
  for (const gateway::GatewayObject& object : set.gateway_objects) {
    loaded.push_back(absl::StrCat(object.ref.kind, " ", object.ref.ToString(), " at ",
                                  fs::path(object.location).filename().string()));
  }
  EXPECT_THAT(loaded,
              ElementsAre("Service demo/echo at a.yaml:6", "EndpointSlice demo/echo-1 at a.yaml:11",
                          "GRPCRoute demo/echo at b.yaml:1", "ReferenceGrant demo/g at b.yaml:6",
                          "XdsVariantPolicy demo/p at b.yaml:11"));
  // Objects keep their findings; a kind and name defined twice is reported
  // as for Facet objects (a GRPCRoute and a Service may share a name), as a
  // warning for a Service, which is not Facet's.
  EXPECT_THAT(set.gateway_objects[2].findings,
              ElementsAre(Field(&xds::Finding::field, "spec.rules[0].nmae")));
  ASSERT_EQ(set.problems.size(), 1u);
  EXPECT_EQ(set.problems[0].kind, ManifestProblem::Kind::kWarning);
  EXPECT_THAT(set.problems[0].message, HasSubstr("demo/echo: defined again (first at"));
  EXPECT_THAT(set.problems[0].location, HasSubstr("b.yaml:16"));

  ManifestFile file = ReadManifestFile((dir_ / "b.yaml").string(), /*fingerprints=*/true);
  ASSERT_EQ(file.objects.size(), 4u);
  EXPECT_EQ(file.objects[0].ref().kind, "GRPCRoute");
  EXPECT_TRUE(std::holds_alternative<gateway::GatewayObject>(file.objects[3].object));
  EXPECT_NE(file.objects[0].fingerprint, file.objects[3].fingerprint);
}

TEST_F(ManifestLoaderTest, ReadsABigListItemByItemWithLocations) {
  std::string text = "apiVersion: v1\nkind: List\nitems:\n";
  for (int i = 0; i < 2000; ++i) {
    absl::StrAppend(&text, "- apiVersion: facet.dev/v1alpha1\n  kind: XdsResource\n",
                    "  metadata: {name: ep-", i, ", namespace: demo}\n",
                    "  spec: {type: endpoint, name: ep-", i,
                    ", variants: [{resource: {endpoints: [{priority: ", i, "}]}}]}\n");
  }
  const std::string path = Write("list.yaml", text);
  ManifestSet set = LoadManifests({path});
  EXPECT_THAT(set.problems, IsEmpty());
  ASSERT_EQ(set.resources.size(), 2000u);
  for (int i : {0, 1, 1234, 1999}) {
    const xds::ResourceObject& object = set.resources[i];
    EXPECT_EQ(object.ref.name, absl::StrCat("ep-", i));
    EXPECT_EQ(object.location, absl::StrCat(path, ":", 4 + 4 * i));
    ASSERT_TRUE(object.spec.has_value());
    EXPECT_EQ(json::YamlToJson(object.spec->variants[0].resource, "r").value(),
              absl::StrCat(R"({"endpoints":[{"priority":)", i, "}]}"));
  }
}

TEST_F(ManifestLoaderTest, ReadsABigDocument) {
  std::string text =
      "apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata: {name: big, namespace: demo}\n"
      "spec:\n  type: endpoint\n  name: big\n  variants:\n  - resource:\n      endpoints:\n"
      "      - lb_endpoints:\n";
  for (int i = 0; i < 20000; ++i) {
    absl::StrAppend(&text, "        - endpoint: {address: {socket_address: {address: 10.0.",
                    i / 256 % 256, ".", i % 256, ", port_value: ", 1000 + i % 50000, "}}}\n");
  }
  ManifestSet set = LoadManifests({Write("big.yaml", text)});
  EXPECT_THAT(set.problems, IsEmpty());
  ASSERT_EQ(set.resources.size(), 1u);
  ASSERT_TRUE(set.resources[0].spec.has_value());
  const YAML::Node endpoints =
      json::Child(json::Child(set.resources[0].spec->variants[0].resource, "endpoints")[0],
                  "lb_endpoints");
  ASSERT_EQ(endpoints.size(), 20000u);
  // As JSON: YAML::Dump writes the keys a document shares (one node per
  // distinct key) as anchors and aliases.
  EXPECT_EQ(json::YamlToJson(endpoints[19999], "e").value(),
            R"({"endpoint":{"address":{"socket_address":{"address":"10.0.78.31",)"
            R"("port_value":20999}}}})");
}

TEST_F(ManifestLoaderTest, RefusesAFileOverTheSizeLimitBeforeReadingIt) {
  // A 200 MB string in a valid manifest.
  const std::string path = (dir_ / "huge.yaml").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << "apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata: {name: huge}\n"
           "spec: {type: endpoint, name: \"";
    const std::string chunk(1 << 20, 'x');
    for (int i = 0; i < 200; ++i) out << chunk;
    out << "\", variants: [{resource: {}}]}\n";
  }
  const uintmax_t size = fs::file_size(path);
  ManifestFile file = ReadManifestFile(path, /*fingerprints=*/false);
  EXPECT_TRUE(file.unreadable);
  EXPECT_THAT(file.objects, IsEmpty());
  ASSERT_EQ(file.problems.size(), 1u);
  EXPECT_EQ(file.problems[0].kind, ManifestProblem::Kind::kUnreadable);
  EXPECT_EQ(file.problems[0].location, path);
  // The size comes from the file system, not from reading it.
  EXPECT_EQ(file.problems[0].message,
            absl::StrCat("is ", size, " bytes; the limit for a manifest file is 8388608 bytes: "
                         "split it"));
}

TEST_F(ManifestLoaderTest, ReadsAFileAtTheSizeLimit) {
  std::string text = ResourceNamed("edge");
  text.append(kMaxManifestFileBytes - text.size(), '\n');
  ManifestFile file = ReadManifestFile(Write("edge.yaml", text), /*fingerprints=*/false);
  EXPECT_THAT(file.problems, IsEmpty());
  EXPECT_EQ(file.objects.size(), 1u);
  text.push_back('\n');
  file = ReadManifestFile(Write("edge.yaml", text), /*fingerprints=*/false);
  EXPECT_TRUE(file.unreadable);
  EXPECT_EQ(file.objects.size(), 0u);
}

TEST_F(ManifestLoaderTest, AliasBombIsUnreadableWithItsPosition) {
  const std::string text =
      "apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata: {name: bomb}\nspec:\n" +
      json::AliasBomb("  ");
  ASSERT_LT(text.size(), 900u);
  const std::string path = Write("bomb.yaml", text);
  ManifestFile file = ReadManifestFile(path, /*fingerprints=*/true);
  EXPECT_TRUE(file.unreadable);
  ASSERT_EQ(file.problems.size(), 1u);
  EXPECT_THAT(file.problems[0].location, ::testing::StartsWith(path + ":"));
  EXPECT_THAT(file.problems[0].message, HasSubstr("more than 250000 YAML nodes"));
}

TEST_F(ManifestLoaderTest, DuplicateKeyIsUnreadableNamingBothPositions) {
  const std::string path = Write("dup.yaml", ResourceNamed("x") + "---\n" +
                                                 "apiVersion: facet.dev/v1alpha1\n"
                                                 "kind: XdsAuthority\n"
                                                 "metadata: {name: y, name: z}\n");
  ManifestFile file = ReadManifestFile(path, /*fingerprints=*/false);
  EXPECT_TRUE(file.unreadable);
  EXPECT_THAT(file.objects, IsEmpty());
  ASSERT_EQ(file.problems.size(), 1u);
  EXPECT_EQ(file.problems[0].location, path + ":8:21");
  EXPECT_THAT(file.problems[0].message, HasSubstr("duplicate key \"name\" in a map (first at 8:12)"));
}

TEST_F(ManifestLoaderTest, InvalidYamlIsLocatedByLineAndColumn) {
  const std::string path = Write("bad.yaml", "a: 1\nb: [1, 2\n");
  ManifestFile file = ReadManifestFile(path, /*fingerprints=*/false);
  ASSERT_EQ(file.problems.size(), 1u);
  EXPECT_THAT(file.problems[0].location, ::testing::MatchesRegex(".*bad\\.yaml:[0-9]+:[0-9]+"));
}

TEST_F(ManifestLoaderTest, ParsesManifestTextFromMemory) {
  ManifestFile file = ParseManifestText(ResourceNamed("a") + "---\n" + ResourceNamed("b"),
                                        "mem.yaml", /*fingerprints=*/true);
  EXPECT_THAT(file.problems, IsEmpty());
  ASSERT_EQ(file.objects.size(), 2u);
  EXPECT_EQ(file.objects[1].ref().name, "b");
  EXPECT_NE(file.objects[1].fingerprint, xds::Digest128());
}

TEST_F(ManifestLoaderTest, BoundsAListOfAMillionElements) {
  std::string text = "apiVersion: v1\nkind: List\nitems:\n";
  for (int i = 0; i < 1'000'000; ++i) text.append("- 1\n");
  ManifestFile file = ReadManifestFile(Write("million.yaml", text), /*fingerprints=*/false);
  EXPECT_TRUE(file.unreadable);
  EXPECT_THAT(file.objects, IsEmpty());
  ASSERT_EQ(file.problems.size(), 1u);
  EXPECT_THAT(file.problems[0].message, HasSubstr("more than 250000 YAML nodes"));
}

TEST_F(ManifestLoaderTest, FingerprintsFollowContentAndLocationNotFormatting) {
  const std::string a = ResourceNamed("a"), b = ResourceNamed("b");
  auto fingerprints = [&](const std::string& name, const std::string& text) {
    ManifestFile file = ReadManifestFile(Write(name, text), /*fingerprints=*/true);
    std::vector<xds::Digest128> out;
    for (const FileObject& object : file.objects) out.push_back(object.fingerprint);
    return out;
  };
  const std::vector<xds::Digest128> first = fingerprints("m.yaml", a + "---\n" + b);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(fingerprints("m.yaml", a + "---\n" + b), first);
  // Reformatted (spacing, quoting) at the same lines: equal.
  std::string reformatted = b;
  reformatted.replace(reformatted.find("{name: b, namespace: demo}"), 26,
                      "{ name:  b ,   namespace: 'demo' }");
  EXPECT_EQ(fingerprints("m.yaml", a + "---\n" + reformatted)[1], first[1]);
  std::string edited = b;
  edited.replace(edited.find("resource: {}"), 12, "resource: {endpoints: []}");
  const std::vector<xds::Digest128> after_edit = fingerprints("m.yaml", a + "---\n" + edited);
  EXPECT_EQ(after_edit[0], first[0]);
  EXPECT_NE(after_edit[1], first[1]);
  // Moved down a line: its location, and so its fingerprint, changes.
  EXPECT_NE(fingerprints("m.yaml", a + "---\n# moved\n" + b)[1], first[1]);
}

}  // namespace
}  // namespace facet::controller
