// The step every source ends with: turn the object changes it fed into the
// next snapshot, report what the build found, keep statuses and counters,
// publish, and give a large build's freed heap back.
#ifndef FACET_CONTROLLER_SOURCES_PUBLISHER_PUBLISHER_H_
#define FACET_CONTROLLER_SOURCES_PUBLISHER_PUBLISHER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "xds_server/snapshot_store/snapshot_store.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/incremental_builder.h"

namespace facet::controller {

// What a source's builds did so far. Sources extend it with their own
// counters.
struct PublishStats {
  int64_t builds = 0;             // Builds with pending changes.
  int64_t published = 0;          // Snapshots published.
  int64_t validated_objects = 0;  // Objects validated anew, over every build.
  int rejected_objects = 0;       // Objects whose latest revision is rejected.
  absl::Duration last_build_duration;
};

// What one published snapshot took (facet_snapshot_build_seconds).
struct PublishTiming {
  // From the first source change the snapshot includes (the first event of
  // its batch) to the snapshot's publication.
  absl::Duration since_change;
  absl::Duration build;  // The build alone.
};

// A change in what a source reports, for a live timeline (the console's
// /events): an object's latest revision rejected (or rejected for another
// reason) or accepted again, a manifest file that stops or starts parsing.
struct ReportEvent {
  enum class Kind { kRejected, kAccepted, kUnparsed, kParsed };
  Kind kind = Kind::kRejected;
  // The object ("namespace/name", xds::ObjectRef::ToString) or the file.
  std::string subject;
  // kRejected: the first error's field path ("" for the whole object) and
  // message; kUnparsed: "LINE:COLUMN: MESSAGE" (or the message alone).
  std::string field;
  std::string reason;
  // kRejected: whether the previous revision keeps serving in its place.
  bool serving_previous = false;
  // kRejected: when the object's rejection began (its latest revision was
  // first rejected), unchanged while it stays rejected.
  absl::Time since;
};

// Owns the IncrementalBuilder a source feeds and publishes what it builds
// into a SnapshotStore. Each build's findings are logged for the objects
// whose status changed (errors at error level, warnings at warning level),
// with every text the objects' authors control escaped and cut
// (xds::SafeForLog). Source-specific reporting (status writes, revisions)
// reads the build's result from BuildAndPublish's outcome.
//
// builder() and BuildAndPublish() belong to the source's worker thread;
// statuses(), ReportedStatus() and stats() are thread-safe.
class Publisher {
 public:
  struct Options {
    xds::BuildOptions build;
    // Called on the worker thread after each published snapshot; may be
    // empty.
    std::function<void(const PublishTiming&)> on_published;
    // Called on the worker thread with each change in what the source
    // reports (ReportEvent), after the build's findings are logged; may be
    // empty.
    std::function<void(const ReportEvent&)> on_report;
    // The clock PublishTiming is measured with (the time `changed_at` is
    // given in). Empty: absl::Now.
    std::function<absl::Time()> now;
  };

  // Looks at a build's result before any of it is reported or published.
  // Returns true after changing the builder's input so that the build is
  // discarded and built again (once), e.g. to undo a change that would
  // withdraw served variants.
  using Review = std::function<bool(const xds::IncrementalBuilder::Result&)>;

  struct Outcome {
    bool built = false;      // A build ran: changes were pending, or nothing was published yet.
    bool published = false;  // Its snapshot was published.
    xds::IncrementalBuilder::Result result;  // Of the build, when one ran.

    // Whether changed objects wait for another build, which the source
    // should start at once (the build's search budget ran out).
    bool deferred() const { return result.deferred_objects > 0; }
    // Whether any object's status changed or went away.
    bool statuses_changed() const {
      return !result.changed_statuses.empty() || !result.removed_statuses.empty();
    }
  };

  // `store` must outlive the publisher.
  Publisher(xds::SnapshotStore& store, Options options);

  // The builder the source records object changes in. Worker thread only.
  xds::IncrementalBuilder& builder() { return builder_; }

  // Builds when changes are pending or nothing was published yet, then
  // reports the findings of the objects whose status changed, records their
  // statuses and the counters, and publishes the snapshot when what is
  // served changed (always the first time). `changed_at` is when the first
  // change this build includes happened. `review`, when given, sees the
  // build first. Worker thread only.
  Outcome BuildAndPublish(absl::Time changed_at, const Review& review = nullptr);

  // Returns the last published snapshot, null before the first. Worker
  // thread only.
  const std::shared_ptr<const xds::Snapshot>& published() const { return published_; }

  // Returns the status of every object as of the last build, sorted by
  // reference.
  std::vector<std::shared_ptr<const xds::ObjectStatus>> statuses() const;
  // Returns the status the last build reported for `ref` (during a Review:
  // the one before the build under review), or null.
  std::shared_ptr<const xds::ObjectStatus> ReportedStatus(const xds::ObjectRef& ref) const;
  PublishStats stats() const;
  // Returns, for each object whose latest revision is rejected, when that
  // rejection began (the build that first rejected it; a later rejected
  // revision keeps the time until one is accepted).
  std::map<xds::ObjectRef, absl::Time> rejected_since() const;

  // Reports that the source's file `path` stopped parsing (`problem`:
  // "LINE:COLUMN: MESSAGE") or parses again (`problem` empty) to on_report.
  // The source calls it when that changes. Worker thread only.
  void ReportFile(const std::string& path, absl::string_view problem);

 private:
  // Records when each changed status's rejection began (at `now` for a new
  // one) and returns the reports: rejections that are new or have a new
  // reason, objects accepted again. Call before statuses_ takes the result.
  std::vector<ReportEvent> TrackRejectionsLocked(const xds::IncrementalBuilder::Result& result,
                                                 absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Time Now() const;

  xds::SnapshotStore& store_;
  const Options options_;
  // Worker thread only:
  xds::IncrementalBuilder builder_;
  std::shared_ptr<const xds::Snapshot> published_;

  mutable absl::Mutex mu_;
  std::map<xds::ObjectRef, std::shared_ptr<const xds::ObjectStatus>> statuses_
      ABSL_GUARDED_BY(mu_);
  PublishStats stats_ ABSL_GUARDED_BY(mu_);
  std::map<xds::ObjectRef, absl::Time> rejected_since_ ABSL_GUARDED_BY(mu_);
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SOURCES_PUBLISHER_PUBLISHER_H_
