#include "controller/sources/publisher/publisher.h"

#include <malloc.h>

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "xds_server/common/log_text.h"

namespace facet::controller {
namespace {

// Text the objects' authors control (names, fields, messages quoting them),
// escaped and cut for a log line.
std::string Logged(absl::string_view text) {
  return xds::SafeForLog(text, xds::kMaxLoggedStatusBytes);
}
std::string Logged(const xds::ObjectRef& ref) { return xds::SafeForLog(ref.ToString()); }

// Logs the findings of the objects whose status changed: a build's log, like
// its cost, follows the change.
// A finding of the whole object (no field, as a generated object's) names
// no field.
void ReportFindings(const xds::IncrementalBuilder::Result& result) {
  for (const auto& status : result.changed_statuses) {
    for (const xds::Finding& finding : status->findings) {
      const std::string field =
          finding.field.empty() ? "" : absl::StrCat(xds::SafeForLog(finding.field), ": ");
      if (finding.severity == xds::Severity::kError) {
        spdlog::error("{}: {}{}", Logged(status->ref), field, Logged(finding.message));
      } else {
        spdlog::warn("{}: {}warning: {}", Logged(status->ref), field, Logged(finding.message));
      }
    }
    if (!status->accepted && status->serving_previous) {
      spdlog::warn("{}: rejected; its previous revision keeps serving", Logged(status->ref));
    }
  }
}

// The first error of `status`: its field path and message; empty when it has
// none.
std::pair<std::string, std::string> FirstError(const xds::ObjectStatus& status) {
  for (const xds::Finding& finding : status.findings) {
    if (finding.severity == xds::Severity::kError) return {finding.field, finding.message};
  }
  return {};
}

}  // namespace

Publisher::Publisher(xds::SnapshotStore& store, Options options)
    : store_(store), options_(std::move(options)), builder_(options_.build) {}

absl::Time Publisher::Now() const { return options_.now ? options_.now() : absl::Now(); }

Publisher::Outcome Publisher::BuildAndPublish(absl::Time changed_at, const Review& review) {
  Outcome outcome;
  if (published_ != nullptr && !builder_.has_pending()) return outcome;
  outcome.built = true;
  const absl::Time start = Now();
  xds::IncrementalBuilder::Result result = builder_.Build();
  if (review && review(result)) result = builder_.Build();
  const absl::Duration elapsed = Now() - start;
  ReportFindings(result);
  spdlog::info(
      "snapshot built in {} us: {} objects ({} validated, {} reference checks), {} "
      "rejected, {} served resources",
      absl::ToInt64Microseconds(elapsed), builder_.object_count(), result.validated_objects,
      result.reference_checks, builder_.rejected_count(), result.snapshot->size());
  if (result.deferred_objects > 0) {
    spdlog::warn(
        "snapshot build spent its search budget ({} steps; limit build_search_steps): {} "
        "changed objects wait for the next build, which follows",
        result.search_steps, result.deferred_objects);
  }
  // A build that ends where the last publication did (an undone change)
  // publishes nothing.
  outcome.published =
      published_ == nullptr ||
      (result.snapshot_changed && result.snapshot->version() != published_->version());
  std::vector<ReportEvent> reports;
  {
    absl::MutexLock lock(&mu_);
    reports = TrackRejectionsLocked(result, start);
    for (const auto& status : result.changed_statuses) statuses_[status->ref] = status;
    for (const xds::ObjectRef& ref : result.removed_statuses) statuses_.erase(ref);
    stats_.builds++;
    stats_.validated_objects += result.validated_objects;
    stats_.rejected_objects = builder_.rejected_count();
    stats_.last_build_duration = elapsed;
    if (outcome.published) stats_.published++;
  }
  if (options_.on_report) {
    for (const ReportEvent& report : reports) options_.on_report(report);
  }
  if (outcome.published) {
    published_ = result.snapshot;
    store_.Publish(result.snapshot);
    if (options_.on_published) {
      options_.on_published({std::max(absl::ZeroDuration(), Now() - changed_at), elapsed});
    }
  }
  // A large batch (the first read of a big directory, the first list of a
  // big cluster) parses much more than it keeps: hand the freed heap back.
  if (result.validated_objects >= 1000) malloc_trim(0);
  outcome.result = std::move(result);
  return outcome;
}

std::vector<std::shared_ptr<const xds::ObjectStatus>> Publisher::statuses() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<const xds::ObjectStatus>> out;
  out.reserve(statuses_.size());
  for (const auto& [ref, status] : statuses_) out.push_back(status);
  return out;
}

std::shared_ptr<const xds::ObjectStatus> Publisher::ReportedStatus(
    const xds::ObjectRef& ref) const {
  absl::MutexLock lock(&mu_);
  auto it = statuses_.find(ref);
  return it == statuses_.end() ? nullptr : it->second;
}

std::vector<ReportEvent> Publisher::TrackRejectionsLocked(
    const xds::IncrementalBuilder::Result& result, absl::Time now) {
  std::vector<ReportEvent> reports;
  for (const auto& status : result.changed_statuses) {
    auto since = rejected_since_.find(status->ref);
    if (status->accepted) {
      if (since == rejected_since_.end()) continue;
      rejected_since_.erase(since);
      ReportEvent& report = reports.emplace_back();
      report.kind = ReportEvent::Kind::kAccepted;
      report.subject = status->ref.ToString();
      continue;
    }
    auto [field, reason] = FirstError(*status);
    if (since != rejected_since_.end()) {
      // Still rejected: reported again only for another reason.
      auto before = statuses_.find(status->ref);
      if (before != statuses_.end() && FirstError(*before->second) == std::pair(field, reason) &&
          before->second->serving_previous == status->serving_previous) {
        continue;
      }
    } else {
      since = rejected_since_.emplace(status->ref, now).first;
    }
    ReportEvent& report = reports.emplace_back();
    report.kind = ReportEvent::Kind::kRejected;
    report.subject = status->ref.ToString();
    report.field = std::move(field);
    report.reason = std::move(reason);
    report.serving_previous = status->serving_previous;
    report.since = since->second;
  }
  for (const xds::ObjectRef& ref : result.removed_statuses) rejected_since_.erase(ref);
  return reports;
}

std::map<xds::ObjectRef, absl::Time> Publisher::rejected_since() const {
  absl::MutexLock lock(&mu_);
  return rejected_since_;
}

void Publisher::ReportFile(const std::string& path, absl::string_view problem) {
  if (!options_.on_report) return;
  ReportEvent report;
  report.kind = problem.empty() ? ReportEvent::Kind::kParsed : ReportEvent::Kind::kUnparsed;
  report.subject = path;
  report.reason = std::string(problem);
  options_.on_report(report);
}

PublishStats Publisher::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace facet::controller
