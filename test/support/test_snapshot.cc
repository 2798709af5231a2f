#include "test/support/test_snapshot.h"

#include <variant>
#include <vector>

#include "controller/objects/object_parser.h"
#include "gtest/gtest.h"
#include "xds_server/snapshot/builder.h"
#include "yaml-cpp/yaml.h"

namespace facet::testing {

std::shared_ptr<const xds::Snapshot> BuildTestSnapshot(const std::string& manifests,
                                                       const xds::Snapshot* previous,
                                                       const std::set<std::string>& without) {
  std::vector<xds::ResourceObject> objects;
  for (const YAML::Node& document : YAML::LoadAll(manifests)) {
    if (document.IsNull()) continue;
    auto parsed = controller::ParseDocument(document, "test", "demo");
    if (!std::holds_alternative<xds::ResourceObject>(parsed)) {
      ADD_FAILURE() << "not an object: " << YAML::Dump(document);
      return nullptr;
    }
    auto& object = std::get<xds::ResourceObject>(parsed);
    if (without.count(object.ref.name) > 0) continue;
    objects.push_back(std::move(object));
  }
  xds::BuildOptions options;
  options.authority_policy = xds::BuildOptions::AuthorityPolicy::kWarnUndeclared;
  xds::BuildResult result = xds::BuildSnapshot(objects, {}, previous, options);
  for (const auto& status : result.statuses) {
    if (!status.accepted) {
      ADD_FAILURE() << status.ref.ToString() << ": "
                    << (status.findings.empty() ? "rejected" : status.findings[0].message);
    }
  }
  return result.snapshot;
}

}  // namespace facet::testing
