// Test helper for the translation: objects written as YAML, a lookup over
// them, generated resources as JSON, and a snapshot build of the output.
#ifndef FACET_CONTROLLER_GATEWAY_TRANSLATE_TRANSLATE_TEST_UTIL_H_
#define FACET_CONTROLLER_GATEWAY_TRANSLATE_TRANSLATE_TEST_UTIL_H_

#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/gateway/model/gateway_parser.h"
#include "controller/gateway/translate/references.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "xds_server/json/yaml_json.h"
#include "xds_server/snapshot/builder.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway::testing {

// Parses one object written as YAML (namespace "demo" unless it says).
inline GatewayObject Parse(const std::string& yaml) {
  return ParseGatewayObject(YAML::Load(yaml), "test.yaml:1", "demo");
}

// Returns a GRPCRoute demo/`name` with `spec` (YAML flow or block text).
inline GatewayObject Route(const std::string& name, const std::string& spec,
                           const std::string& created = "", const std::string& ns = "demo") {
  return Parse(absl::StrCat(
      "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: ", name,
      ", namespace: ", ns, ", generation: 3",
      created.empty() ? "" : absl::StrCat(", creationTimestamp: \"", created, "\""),
      "}\nspec: ", spec));
}

// Returns a Service `ns`/`name` with `spec`.
inline GatewayObject Service(const std::string& name, const std::string& spec,
                             const std::string& ns = "demo") {
  return Parse(absl::StrCat("apiVersion: v1\nkind: Service\nmetadata: {name: ", name,
                            ", namespace: ", ns, ", generation: 1}\nspec: ", spec));
}

// Services and ReferenceGrants to look up.
class World {
 public:
  void Add(GatewayObject object) {
    EXPECT_FALSE(object.has_errors()) << object.ref.ToString();
    const std::string key = absl::StrCat(object.ref.namespace_, "/", object.ref.name);
    if (object.ref.kind == "Service") {
      services_[key] = std::move(object);
    } else {
      grants_[object.ref.namespace_].push_back(std::move(object));
    }
  }

  GatewayLookup Lookup() const {
    GatewayLookup lookup;
    lookup.service = [this](absl::string_view ns, absl::string_view name) -> const GatewayObject* {
      auto it = services_.find(absl::StrCat(ns, "/", name));
      return it == services_.end() ? nullptr : &it->second;
    };
    lookup.grants = [this](absl::string_view ns) {
      std::vector<const ReferenceGrant*> out;
      if (auto it = grants_.find(std::string(ns)); it != grants_.end()) {
        for (const GatewayObject& grant : it->second) {
          out.push_back(&std::get<ReferenceGrant>(grant.spec));
        }
      }
      return out;
    };
    return lookup;
  }

  const GatewayObject& service(const std::string& key) const { return services_.at(key); }
  const std::map<std::string, GatewayObject>& services() const { return services_; }

 private:
  std::map<std::string, GatewayObject> services_;
  std::map<std::string, std::vector<GatewayObject>> grants_;
};

// Returns `node` (proto3 JSON as YAML) as JSON.
inline nlohmann::json Json(const YAML::Node& node) {
  absl::StatusOr<std::string> text = json::YamlToJson(node, "resource");
  EXPECT_TRUE(text.ok()) << text.status();
  return nlohmann::json::parse(text.ok() ? *text : "null");
}

// Returns the resource of the only variant of `object` as JSON.
inline nlohmann::json ResourceJson(const xds::ResourceObject& object) {
  EXPECT_TRUE(object.spec.has_value());
  EXPECT_EQ(object.spec->variants.size(), 1u);
  return Json(object.spec->variants.at(0).resource);
}

// Builds a snapshot of `objects`; returns "ref: reason field: message" of
// every finding (empty when every object is served without a word).
inline std::vector<std::string> BuildFindings(const std::vector<xds::ResourceObject>& objects) {
  xds::BuildOptions options;
  options.authority_policy = xds::BuildOptions::AuthorityPolicy::kWarnUndeclared;
  xds::BuildResult result = xds::BuildSnapshot(objects, {}, nullptr, options);
  std::vector<std::string> out;
  for (const xds::ObjectStatus& status : result.statuses) {
    if (!status.accepted) out.push_back(absl::StrCat(status.ref.ToString(), ": not accepted"));
    for (const xds::Finding& finding : status.findings) {
      out.push_back(absl::StrCat(status.ref.ToString(), ": ", finding.reason, " ", finding.field,
                                 ": ", finding.message));
    }
  }
  return out;
}

}  // namespace facet::controller::gateway::testing

#endif  // FACET_CONTROLLER_GATEWAY_TRANSLATE_TRANSLATE_TEST_UTIL_H_
