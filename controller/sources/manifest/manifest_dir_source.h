// Serves a directory of manifests: builds a snapshot from it, publishes it,
// and follows every completed edit, addition and removal of its files with
// an object-level change.
#ifndef FACET_CONTROLLER_SOURCES_MANIFEST_MANIFEST_DIR_SOURCE_H_
#define FACET_CONTROLLER_SOURCES_MANIFEST_MANIFEST_DIR_SOURCE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/gateway/front_end/gateway_front_end.h"
#include "controller/gateway/model/gateway_status.h"
#include "controller/gateway/translate/service_port.h"
#include "controller/sources/manifest/manifest_loader.h"
#include "controller/sources/publisher/publisher.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/incremental_builder.h"
#include "xds_server/snapshot_store/snapshot_store.h"

namespace facet::controller {

// Watches the directory with inotify (completed writes, renames, deletions;
// never IN_MODIFY), or polls it where inotify is unavailable. Each changed
// file is re-read and compared object by object with what it defined; only
// objects that were added, changed or removed reach the IncrementalBuilder,
// the Gateway API objects through a GatewayFrontEnd (flushed before each
// build; a GRPCRoute generation that is not accepted leaves the last
// accepted one serving). A re-read that would withdraw anything (a file
// being rewritten in place reads as empty or as a prefix) is held back whole
// until the file has been quiet for `removal_settle` and a re-read confirms
// it: one that no longer defines some of the file's objects, and one whose
// build would serve fewer
// variants of any object (a cut revision, or an unchanged object whose
// reference stops resolving). Such a build is undone before it is published,
// by re-applying the files' previous texts. Deleting or renaming a file away
// removes its objects at once.
//
// Owns one worker thread that reads files, builds and publishes snapshots.
// The accessors are thread-safe.
class ManifestDirSource {
 public:
  struct Options {
    std::string directory;
    // How often the directory is polled when inotify is unavailable (or
    // `force_poll`).
    std::chrono::milliseconds poll_interval{1000};
    // How often a full rescan runs while inotify watches (a safety net).
    std::chrono::milliseconds rescan_interval{30000};
    // A burst of events makes one build: it is built once no event has
    // arrived for `quiet`, and at the latest `coalesce` after its first
    // event (a steady stream of events still gets built).
    std::chrono::milliseconds quiet{1};
    std::chrono::milliseconds coalesce{5};
    // How long a file must be quiet before a re-read that would withdraw
    // anything is applied.
    std::chrono::milliseconds removal_settle{1000};
    // Polls even where inotify works (for tests).
    bool force_poll = false;
    // Authority admission is enforced when the directory declares an
    // XdsAuthority, as `facet validate` does.
    xds::BuildOptions build = [] {
      xds::BuildOptions build;
      build.authority_policy = xds::BuildOptions::AuthorityPolicy::kEnforceWhenDeclared;
      return build;
    }();
    // Told what each published snapshot took (see Publisher::Options).
    std::function<void(const PublishTiming&)> on_published;
    // Told each change in what the source reports: rejections, files that
    // stop or start parsing (see Publisher::Options).
    std::function<void(const ReportEvent&)> on_report;
    // How Gateway API objects are translated.
    gateway::TranslateOptions gateway;
  };

  // A Gateway API object the directory defines, and what Facet says of it.
  struct GatewayObjectReport {
    xds::ObjectRef ref;
    std::string location;
    int64_t generation = 0;
    // A GRPCRoute's status once translated; null otherwise.
    std::shared_ptr<const gateway::GatewayStatus> status;
    absl::Time status_since;  // When `status` last changed.
  };

  // The publisher's counters (builds, published, validated objects, ...)
  // and the directory's.
  struct Stats : PublishStats {
    int64_t upserts = 0;            // Objects handed to the builder as new or changed.
    int64_t removals = 0;           // Objects removed from the builder.
    int64_t held_removals = 0;      // Re-reads held back because they would withdraw.
    int64_t wakeups = 0;            // Times the worker woke (events, timers).
    // Changes to what the source reports beside the publisher's statuses
    // (files that do not parse, Gateway API statuses), counted after each.
    int64_t report_changes = 0;
    bool inotify = false;           // Whether inotify watches the directory.
  };

  ManifestDirSource(Options options, xds::SnapshotStore& store);
  ~ManifestDirSource();  // Stops the worker.

  // Loads the directory once and publishes the first snapshot (on the
  // calling thread), then starts watching. Returns after the first publish.
  void Start();

  // Returns the authorities the directory declares and admits.
  std::vector<std::string> authorities() const;
  // Returns the status of every object, sorted by reference.
  std::vector<std::shared_ptr<const xds::ObjectStatus>> statuses() const;
  // Returns when the rejection of each rejected object began (see
  // Publisher::rejected_since).
  std::map<xds::ObjectRef, absl::Time> rejected_since() const;
  // Returns every Gateway API object the directory defines, sorted by
  // reference.
  std::vector<GatewayObjectReport> gateway_objects() const;
  // A file whose last read is unreadable (not valid YAML, or too large):
  // its last good read keeps serving.
  struct UnparsedFile {
    std::string path;
    int line = 0;  // 1-based; 0 when not known (and column).
    int column = 0;
    std::string message;
  };
  // Returns the files whose last read is unreadable, by path.
  std::map<std::string, UnparsedFile> unparsed_files() const;
  // Returns how many snapshots were built.
  int64_t builds() const { return stats().builds; }
  Stats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct FileStamp {
    std::filesystem::file_time_type mtime;
    uintmax_t size = 0;
    friend bool operator==(const FileStamp& a, const FileStamp& b) {
      return a.mtime == b.mtime && a.size == b.size;
    }
  };
  struct FileState {
    std::optional<FileStamp> stamp;  // Of the last read.
    // Fingerprints of the objects this file defines.
    std::map<xds::ObjectRef, xds::Digest128> objects;
    // The text of the read that defined them (to undo a later read).
    std::string text;
    // Set while a re-read that would withdraw anything is held back: the
    // stamp of that read and when it happened.
    std::optional<std::pair<FileStamp, Clock::time_point>> held;
  };
  // The texts files defined their objects from before a build, by path, for
  // the files whose re-read that build applies before they were quiet.
  using Undo = std::map<std::string, std::string>;

  void Run();
  // Waits for inotify events or the stop signal until `deadline`; adds the
  // paths events name to `dirty_`, and sets `rescan_due_` on overflow.
  // Returns whether an event named a manifest file.
  bool Wait(Clock::time_point deadline);
  bool AddWatch();
  // Lists the directory and marks new, changed and vanished files dirty.
  void Rescan();
  // Re-reads the dirty files, feeds the builder, builds and publishes.
  void ProcessDirty();
  // Applies a (re-)read of `path`: `pre_read` when given, else a fresh read.
  // A change applied before the file was quiet adds its previous text to
  // `undo`.
  void ProcessFile(const std::string& path, Clock::time_point now,
                   std::optional<ManifestFile> pre_read, Undo* undo);
  void Define(const xds::ObjectRef& ref, const std::string& path, FileObject* object);
  void Undefine(const xds::ObjectRef& ref, const std::string& path);
  // Builds and publishes the pending changes, made from `changed_at` on;
  // returns whether some wait for another build (the build's search budget
  // ran out before their checks). When the build would withdraw anything,
  // the files in `undo` get their previous objects back (and are held)
  // before anything is published.
  bool BuildAndPublish(Undo* undo, Clock::time_point now, absl::Time changed_at);
  // Whether `result` serves fewer variants of some object than before.
  bool Withdraws(const xds::IncrementalBuilder::Result& result) const;
  // Takes the GRPCRoute statuses `result` changed from the front end.
  void ReconcileGateway(const xds::IncrementalBuilder::Result& result);
  // Re-applies the previous texts in `undo` and holds those files.
  void Restore(const Undo& undo, Clock::time_point now);

  const Options options_;
  // Worker thread only (and Start(), before the worker exists), but for its
  // thread-safe accessors.
  Publisher publisher_;
  // Worker thread only (and Start(), before the worker exists):
  gateway::GatewayFrontEnd front_end_;
  // When the first change not yet built was seen.
  std::optional<absl::Time> batch_start_;
  std::map<std::string, FileState> files_;
  // The files in files_ whose removals are held back (so waiting on them
  // costs what is held, not the directory's size). Worker thread only.
  std::set<std::string> held_files_;
  // The files defining each object, by name; the first one's object serves.
  std::map<xds::ObjectRef, std::set<std::string>> definers_;
  // Objects whose serving file changed to one not read since: they are
  // upserted at that file's next read.
  std::map<xds::ObjectRef, std::string> needs_upsert_;
  std::set<std::string> dirty_;
  bool rescan_due_ = false;
  bool listing_failed_ = false;
  int inotify_fd_ = -1;
  int watch_ = -1;
  int stop_fd_ = -1;  // An eventfd the destructor signals.

  mutable absl::Mutex mu_;
  Stats stats_ ABSL_GUARDED_BY(mu_);  // Its PublishStats part is the publisher's.
  std::map<xds::ObjectRef, GatewayObjectReport> gateway_objects_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, UnparsedFile> unparsed_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stopping_{false};
  std::thread worker_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SOURCES_MANIFEST_MANIFEST_DIR_SOURCE_H_
