// The CRDs in crds/ against the types the test API server serves for them
// (names, scope, status subresource, printer columns), and the rules a CRD
// must follow for kube-apiserver to accept it: one storage version, a
// structural schema (every node typed unless it preserves unknown fields or
// is int-or-string), bounded strings and lists under every CEL rule (the
// cost estimate refuses unbounded ones), printer columns whose JSONPath
// names a schema field.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/kube_api_server/resource_types.h"
#include "yaml-cpp/yaml.h"

namespace facet::testing {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;

std::vector<std::filesystem::path> CrdFiles() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(FACET_CRDS_DIR)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> Strings(const YAML::Node& node) {
  std::vector<std::string> out;
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) out.push_back(item.as<std::string>());
  }
  return out;
}

// Collects, into `problems`, the nodes of `schema` (at `path`) that break
// the structural or CEL-bound rules. `under_cel`: a CEL rule applies above.
void CheckSchema(const YAML::Node& schema, const std::string& path, bool under_cel,
                 std::vector<std::string>& problems) {
  if (schema["x-kubernetes-preserve-unknown-fields"].IsDefined() ||
      schema["x-kubernetes-int-or-string"].IsDefined()) {
    return;  // Facet validates what is inside.
  }
  const bool cel = under_cel || schema["x-kubernetes-validations"].IsDefined();
  const std::string type = schema["type"].IsDefined() ? schema["type"].as<std::string>() : "";
  if (type.empty()) problems.push_back(absl::StrCat(path, ": no type"));
  if (path != "" && !schema["description"].IsDefined() && path != ".metadata" &&
      path.find(".metadata") != 0) {
    problems.push_back(absl::StrCat(path, ": no description"));
  }
  if (cel && type == "string" && !schema["maxLength"].IsDefined() && !schema["enum"].IsDefined()) {
    problems.push_back(absl::StrCat(path, ": unbounded string under a CEL rule"));
  }
  if (type == "array") {
    if (cel && !schema["maxItems"].IsDefined()) {
      problems.push_back(absl::StrCat(path, ": unbounded list under a CEL rule"));
    }
    if (schema["items"].IsDefined()) {
      CheckSchema(schema["items"], absl::StrCat(path, "[]"), cel, problems);
    } else {
      problems.push_back(absl::StrCat(path, ": a list without items"));
    }
  }
  if (schema["properties"].IsDefined()) {
    for (const auto& property : schema["properties"]) {
      CheckSchema(property.second, absl::StrCat(path, ".", property.first.as<std::string>()), cel,
                  problems);
    }
  }
  if (schema["additionalProperties"].IsDefined() && schema["additionalProperties"].IsMap()) {
    CheckSchema(schema["additionalProperties"], absl::StrCat(path, ".*"), cel, problems);
  }
}

// Whether a printer column's JSONPath (`.a.b[0].c[?(@.type=="X")].d`) names
// a field of `schema`.
bool PathInSchema(const YAML::Node& root, const std::string& json_path) {
  YAML::Node node;
  node.reset(root);
  const std::string& path = json_path;
  // Drop the [..] selectors: each steps into a list's items.
  std::vector<std::string> steps;
  std::string current;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '[') {
      if (!current.empty()) steps.push_back(current);
      current.clear();
      steps.push_back("[]");
      i = path.find(']', i);
      if (i == std::string::npos) return false;
    } else if (path[i] == '.') {
      if (!current.empty()) steps.push_back(current);
      current.clear();
    } else {
      current.push_back(path[i]);
    }
  }
  if (!current.empty()) steps.push_back(current);
  for (const std::string& step : steps) {
    if (step == "[]") {
      if (!node["items"].IsDefined()) return false;
      node.reset(node["items"]);
    } else if (step == "creationTimestamp" && node["type"].IsDefined() &&
               node["type"].as<std::string>() == "object" && !node["properties"].IsDefined()) {
      return true;  // metadata: ObjectMeta, not spelled out in a CRD.
    } else {
      if (!node["properties"].IsDefined() || !node["properties"][step].IsDefined()) return false;
      node.reset(node["properties"][step]);
    }
  }
  return true;
}

TEST(CrdTypesTest, EveryCrdIsServedAsItDeclares) {
  std::vector<std::filesystem::path> files = CrdFiles();
  ASSERT_THAT(files, SizeIs(3));
  for (const std::filesystem::path& file : files) {
    SCOPED_TRACE(file.string());
    YAML::Node crd = YAML::LoadFile(file.string());
    const YAML::Node spec = crd["spec"];
    const std::string group = spec["group"].as<std::string>();
    const YAML::Node names = spec["names"];
    EXPECT_EQ(crd["metadata"]["name"].as<std::string>(),
              absl::StrCat(names["plural"].as<std::string>(), ".", group));
    int storage = 0;
    for (const YAML::Node& version : spec["versions"]) {
      if (version["storage"].as<bool>()) ++storage;
      const ResourceType* type = FindResourceType(group, version["name"].as<std::string>(),
                                                  names["plural"].as<std::string>());
      ASSERT_NE(type, nullptr);
      EXPECT_TRUE(type->custom);
      EXPECT_EQ(type->kind, names["kind"].as<std::string>());
      EXPECT_EQ(type->singular, names["singular"].as<std::string>());
      EXPECT_EQ(type->short_names, Strings(names["shortNames"]));
      EXPECT_EQ(type->categories, Strings(names["categories"]));
      EXPECT_EQ(type->namespaced, spec["scope"].as<std::string>() == "Namespaced");
      EXPECT_EQ(type->status_subresource, version["subresources"]["status"].IsDefined());
      std::vector<std::string> columns;
      for (const YAML::Node& column : version["additionalPrinterColumns"]) {
        columns.push_back(absl::StrCat(
            column["name"].as<std::string>(), "|", column["type"].as<std::string>(), "|",
            column["jsonPath"].as<std::string>(), "|", column["description"].as<std::string>(""),
            "|", column["priority"].as<int>(0)));
      }
      std::vector<std::string> served;
      for (const PrinterColumn& column : type->columns) {
        served.push_back(absl::StrCat(column.name, "|", column.type, "|", column.json_path, "|",
                                      column.description, "|", column.priority));
      }
      EXPECT_EQ(served, columns);
    }
    EXPECT_EQ(storage, 1);
  }
}

TEST(CrdTypesTest, SchemasAreStructuralWithBoundedCelInputsAndColumnsOnFields) {
  for (const std::filesystem::path& file : CrdFiles()) {
    SCOPED_TRACE(file.string());
    YAML::Node crd = YAML::LoadFile(file.string());
    for (const YAML::Node& version : crd["spec"]["versions"]) {
      const YAML::Node schema = version["schema"]["openAPIV3Schema"];
      std::vector<std::string> problems;
      CheckSchema(schema, "", /*under_cel=*/false, problems);
      EXPECT_THAT(problems, IsEmpty());
      for (const YAML::Node& column : version["additionalPrinterColumns"]) {
        EXPECT_TRUE(PathInSchema(schema, column["jsonPath"].as<std::string>()))
            << column["jsonPath"].as<std::string>();
      }
    }
  }
}

TEST(CrdTypesTest, XdsVariantPolicyIsLabelledADirectPolicy) {
  YAML::Node crd =
      YAML::LoadFile(absl::StrCat(FACET_CRDS_DIR, "/facet.dev_xdsvariantpolicies.yaml"));
  // GEP-713 writes "direct", the upstream CRDs "Direct"; tools compare
  // case-insensitively.
  EXPECT_EQ(absl::AsciiStrToLower(
                crd["metadata"]["labels"]["gateway.networking.k8s.io/policy"].as<std::string>("")),
            "direct");
  const YAML::Node target_refs = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
                                    ["properties"]["spec"]["properties"]["targetRefs"];
  EXPECT_EQ(target_refs["minItems"].as<int>(), 1);
  EXPECT_EQ(target_refs["maxItems"].as<int>(), 16);
  EXPECT_THAT(target_refs["x-kubernetes-validations"], SizeIs(2));
}

}  // namespace
}  // namespace facet::testing
