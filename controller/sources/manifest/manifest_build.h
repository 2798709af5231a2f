// The one "load, translate, build" of a set of manifests: what `facet
// validate` reports, what `facet explain` explains offline, and what the
// first snapshot of `facet serve` on the same files serves.
#ifndef FACET_CONTROLLER_SOURCES_MANIFEST_MANIFEST_BUILD_H_
#define FACET_CONTROLLER_SOURCES_MANIFEST_MANIFEST_BUILD_H_

#include <memory>

#include "controller/gateway/front_end/gateway_front_end.h"
#include "controller/gateway/translate/service_port.h"
#include "controller/sources/manifest/manifest_loader.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/incremental_builder.h"

namespace facet::controller {

// A whole build of a ManifestSet, decided in full.
struct ManifestBuild {
  // Holds the snapshot (snapshot()) and the status of every XdsResource,
  // XdsAuthority and generated object (Statuses()).
  std::unique_ptr<xds::IncrementalBuilder> builder;
  // Holds every GRPCRoute's status (Statuses()).
  std::unique_ptr<gateway::GatewayFrontEnd> front_end;
};

// Translates the Gateway API objects of `manifests` (GatewayFrontEnd,
// without a last good: a GRPCRoute that is not accepted serves nothing) and
// builds the generated objects with its XdsResources and XdsAuthorities
// until every object is decided (builds the search budget leaves for later
// follow). Never fails as a whole. Thread-compatible.
ManifestBuild BuildManifests(const ManifestSet& manifests, const xds::BuildOptions& options,
                             const gateway::TranslateOptions& translate = {});

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SOURCES_MANIFEST_MANIFEST_BUILD_H_
