#include "controller/sources/manifest/manifest_build.h"

namespace facet::controller {

ManifestBuild BuildManifests(const ManifestSet& manifests, const xds::BuildOptions& options,
                             const gateway::TranslateOptions& translate) {
  ManifestBuild out;
  out.builder = std::make_unique<xds::IncrementalBuilder>(options);
  out.front_end = std::make_unique<gateway::GatewayFrontEnd>(translate);
  xds::IncrementalBuilder& builder = *out.builder;
  for (const xds::AuthorityObject& object : manifests.authorities) builder.Upsert(object);
  for (const xds::ResourceObject& object : manifests.resources) builder.Upsert(object);
  for (const gateway::GatewayObject& object : manifests.gateway_objects) {
    out.front_end->Upsert(object);
  }
  out.front_end->Flush(builder);
  // A fresh front end reconciles every route after its first flush: the
  // last build's result is all it needs.
  out.front_end->Reconcile(builder, builder.BuildUntilDecided());
  return out;
}

}  // namespace facet::controller
