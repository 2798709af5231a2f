// Test and benchmark helper: XdsResource objects written compactly, as the
// sources would parse them, and client identities. Not for production code.
#ifndef FACET_XDS_SERVER_SNAPSHOT_TEST_OBJECTS_H_
#define FACET_XDS_SERVER_SNAPSHOT_TEST_OBJECTS_H_

#include <string>
#include <utility>
#include <vector>

#include "xds_server/constraints/match_syntax.h"
#include "xds_server/snapshot/client_access.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::xds::testing {

// Returns the XdsResource `ns`/`name` (generation 1) serving `xds_name` of
// `type` with one variant per (match in the concise syntax, "" for none;
// resource YAML), labelled v0, v1, ... A match that does not compile leaves
// the variant unconstrained and is reported by returning it in `*bad_match`
// when given.
inline ResourceObject MakeObject(const std::string& ns, const std::string& name,
                                 const std::string& type, const std::string& xds_name,
                                 const std::vector<std::pair<std::string, std::string>>& variants,
                                 std::string* bad_match = nullptr) {
  ResourceObject object;
  object.ref = {kXdsResourceKind, ns, name};
  object.generation = 1;
  ResourceSpec spec;
  spec.type = type;
  spec.name = xds_name;
  for (size_t i = 0; i < variants.size(); ++i) {
    VariantSpec variant;
    variant.label = "v" + std::to_string(i);
    if (!variants[i].first.empty()) {
      auto compiled = CompileMatch(YAML::Load(variants[i].first), "match");
      if (compiled.ok()) {
        variant.constraints = *compiled;
      } else if (bad_match != nullptr) {
        *bad_match = variants[i].first;
      }
    }
    variant.resource = YAML::Load(variants[i].second);
    spec.variants.push_back(std::move(variant));
  }
  object.spec = std::move(spec);
  return object;
}

// Returns the identity of a client whose verified certificate names
// `spiffe_id` ("" for none) and `dns_names`.
inline ClientIdentity Certified(const std::string& spiffe_id, std::vector<std::string> dns_names) {
  ClientIdentity identity;
  identity.spiffe_id = spiffe_id;
  identity.dns_names = std::move(dns_names);
  identity.has_certificate = true;
  return identity;
}

}  // namespace facet::xds::testing

#endif  // FACET_XDS_SERVER_SNAPSHOT_TEST_OBJECTS_H_
