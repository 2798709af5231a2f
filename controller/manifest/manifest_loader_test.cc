#include "controller/manifest/manifest_loader.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

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

}  // namespace
}  // namespace facet::controller
