// Snapshots built from manifest text, for tests that serve a small world.
#ifndef FACET_TEST_SUPPORT_TEST_SNAPSHOT_H_
#define FACET_TEST_SUPPORT_TEST_SNAPSHOT_H_

#include <memory>
#include <set>
#include <string>

#include "xds_server/snapshot/snapshot.h"

namespace facet::testing {

// Parses `manifests` (YAML documents, each an XdsResource or XdsAuthority;
// empty documents are skipped) as the manifest source does (source "test",
// namespace "demo"), leaves out the objects whose metadata.name is in
// `without`, and builds a snapshot following `previous` (undeclared
// authorities warned about, not enforced). Adds a test failure for a document
// that is not an object and returns null; adds one for each object the build
// rejects and returns the snapshot.
std::shared_ptr<const xds::Snapshot> BuildTestSnapshot(const std::string& manifests,
                                                       const xds::Snapshot* previous = nullptr,
                                                       const std::set<std::string>& without = {});

}  // namespace facet::testing

#endif  // FACET_TEST_SUPPORT_TEST_SNAPSHOT_H_
