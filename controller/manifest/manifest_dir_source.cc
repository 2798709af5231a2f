#include "controller/manifest/manifest_dir_source.h"

#include <chrono>
#include <filesystem>
#include <set>
#include <system_error>

#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace facet::controller {

namespace fs = std::filesystem;

ManifestDirSource::ManifestDirSource(Options options, xds::SnapshotStore& store)
    : options_(std::move(options)), store_(store) {}

ManifestDirSource::~ManifestDirSource() {
  stop_.Notify();
  if (worker_.joinable()) worker_.join();
}

void ManifestDirSource::Start() {
  Refresh();
  Rebuild();
  worker_ = std::thread([this] { Run(); });
}

void ManifestDirSource::Run() {
  const absl::Duration interval = absl::FromChrono(options_.poll_interval);
  while (!stop_.WaitForNotificationWithTimeout(interval)) {
    if (Refresh()) Rebuild();
  }
}

bool ManifestDirSource::Refresh() {
  std::vector<ManifestProblem> problems;
  std::vector<std::string> listed = ListManifestFiles({options_.directory}, &problems);
  if (!problems.empty()) {
    // A directory that cannot be listed is not a directory without files:
    // keep serving what it last held, and say so once.
    if (!listing_failed_) {
      for (const ManifestProblem& problem : problems) {
        spdlog::error("manifests: {}: {}; the last good content keeps serving", problem.location,
                      problem.message);
      }
    }
    listing_failed_ = true;
    return false;
  }
  if (listing_failed_) spdlog::info("manifests: {} is readable again", options_.directory);
  listing_failed_ = false;
  bool changed = false;
  std::set<std::string> present(listed.begin(), listed.end());
  for (auto it = files_.begin(); it != files_.end();) {
    if (present.count(it->first) == 0) {
      spdlog::info("manifests: {} removed", it->first);
      it = files_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  for (const std::string& path : listed) {
    std::error_code error;
    const auto mtime = fs::last_write_time(path, error);
    const auto size = fs::file_size(path, error);
    if (error) continue;  // Vanished between listing and reading: next poll.
    auto it = files_.find(path);
    if (it != files_.end() && it->second.mtime == mtime && it->second.size == size) continue;
    FileState& state = files_[path];
    state.mtime = mtime;
    state.size = size;
    ManifestSet set = LoadManifests({path});
    bool unreadable = false;
    for (const ManifestProblem& problem : set.problems) {
      switch (problem.kind) {
        case ManifestProblem::Kind::kUnreadable:
          unreadable = true;
          spdlog::error("manifests: {}: {}; its last good content keeps serving",
                        problem.location, problem.message);
          break;
        case ManifestProblem::Kind::kError:
          spdlog::error("manifests: {}: {}", problem.location, problem.message);
          break;
        case ManifestProblem::Kind::kWarning:
          spdlog::warn("manifests: {}: {}", problem.location, problem.message);
          break;
      }
    }
    if (unreadable) {
      state.ok = false;
      changed = true;  // Harmless: the rebuild reuses the last good objects.
      continue;
    }
    state.ok = true;
    state.resources = std::move(set.resources);
    state.authorities = std::move(set.authorities);
    spdlog::info("manifests: read {}", path);
    changed = true;
  }
  return changed;
}

void ManifestDirSource::Rebuild() {
  std::vector<xds::ResourceObject> resources;
  std::vector<xds::AuthorityObject> authorities;
  std::set<xds::ObjectRef> seen;
  // Keeps the first definition of each object, in file-name order.
  auto take = [&seen](const auto& objects, auto* out) {
    for (const auto& object : objects) {
      if (seen.insert(object.ref).second) {
        out->push_back(object);
      } else {
        spdlog::error("manifests: {}: {} is defined in more than one file; using the first",
                      object.location, object.ref.ToString());
      }
    }
  };
  for (const auto& [path, state] : files_) {
    take(state.resources, &resources);
    take(state.authorities, &authorities);
  }
  xds::BuildOptions build = options_.build;
  if (options_.authorities_from_directory) {
    build.authority_policy = authorities.empty()
                                 ? xds::BuildOptions::AuthorityPolicy::kWarnUndeclared
                                 : xds::BuildOptions::AuthorityPolicy::kEnforce;
  }
  const auto start = std::chrono::steady_clock::now();
  xds::BuildResult result = xds::BuildSnapshot(resources, authorities, last_.get(), build);
  const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  int rejected = 0;
  for (const xds::ObjectStatus& status : result.statuses) {
    for (const xds::Finding& finding : status.findings) {
      if (finding.severity == xds::Severity::kError) {
        spdlog::error("{}: {}: {}", status.ref.ToString(), finding.field, finding.message);
      } else {
        spdlog::warn("{}: {}: warning: {}", status.ref.ToString(), finding.field, finding.message);
      }
    }
    if (!status.accepted) {
      ++rejected;
      if (status.serving_previous) {
        spdlog::warn("{}: rejected; its previous revision keeps serving", status.ref.ToString());
      }
    }
  }
  spdlog::info("snapshot built in {} us: {} objects, {} rejected, {} served resources",
               elapsed.count(), result.statuses.size(), rejected, result.snapshot->size());
  {
    absl::MutexLock lock(&mu_);
    statuses_ = result.statuses;
    authorities_.clear();
    for (const auto& status : result.statuses) {
      if (status.ref.kind == xds::kXdsAuthorityKind && status.accepted) {
        authorities_.push_back(status.served_name);
      }
    }
  }
  builds_++;
  if (last_ == nullptr || last_->version() != result.snapshot->version()) {
    last_ = result.snapshot;
    store_.Publish(result.snapshot);
  }
}

std::vector<std::string> ManifestDirSource::authorities() const {
  absl::MutexLock lock(&mu_);
  return authorities_;
}

std::vector<xds::ObjectStatus> ManifestDirSource::statuses() const {
  absl::MutexLock lock(&mu_);
  return statuses_;
}

}  // namespace facet::controller
