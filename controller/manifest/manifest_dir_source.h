// Serves a directory of manifests: builds a snapshot from it, publishes it,
// and rebuilds whenever a file is edited, added or removed.
#ifndef FACET_CONTROLLER_MANIFEST_MANIFEST_DIR_SOURCE_H_
#define FACET_CONTROLLER_MANIFEST_MANIFEST_DIR_SOURCE_H_

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "controller/manifest/manifest_loader.h"
#include "xds_server/ads/snapshot_store.h"
#include "xds_server/snapshot/builder.h"

namespace facet::controller {

// Owns one worker thread that polls the directory; snapshots are built and
// published on it. Thread-safe accessors.
class ManifestDirSource {
 public:
  struct Options {
    std::string directory;
    std::chrono::milliseconds poll_interval{200};
    xds::BuildOptions build;
    // As `facet validate` does: enforce authority admission only when the
    // directory declares XdsAuthority objects (then build.authority_policy
    // is ignored).
    bool authorities_from_directory = true;
  };

  ManifestDirSource(Options options, xds::SnapshotStore& store);
  ~ManifestDirSource();  // Stops the worker.

  // Loads the directory once and publishes the first snapshot (on the
  // calling thread), then starts watching. Returns after the first publish.
  void Start();

  // Returns the authorities the directory declares (from the latest build).
  std::vector<std::string> authorities() const;
  // Returns the object statuses of the latest build.
  std::vector<xds::ObjectStatus> statuses() const;
  // Returns how many snapshots were built.
  int64_t builds() const { return builds_; }

 private:
  struct FileState {
    std::filesystem::file_time_type mtime;
    uintmax_t size = 0;
    bool ok = false;  // Whether the last read parsed as YAML.
    // The objects of the last good read of this file.
    std::vector<xds::ResourceObject> resources;
    std::vector<xds::AuthorityObject> authorities;
  };

  // Re-reads changed files; returns whether anything changed.
  bool Refresh();
  void Rebuild();
  void Run();

  const Options options_;
  xds::SnapshotStore& store_;
  std::map<std::string, FileState> files_;  // Worker thread only.
  std::shared_ptr<const xds::Snapshot> last_;  // Worker thread only.
  bool listing_failed_ = false;                // Worker thread only.
  mutable absl::Mutex mu_;
  std::vector<xds::ObjectStatus> statuses_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> authorities_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> builds_{0};
  absl::Notification stop_;
  std::thread worker_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_MANIFEST_MANIFEST_DIR_SOURCE_H_
