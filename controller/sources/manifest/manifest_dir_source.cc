#include "controller/sources/manifest/manifest_dir_source.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <tuple>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"
#include "xds_server/common/log_text.h"

namespace facet::controller {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kWatchMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
                                IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

const std::string& LocationOf(const FileObject& object) {
  return std::visit([](const auto& o) -> const std::string& { return o.location; }, object.object);
}

// Whether an object read from a file is served (directly, or through what
// the Gateway API front end generates): every kind read is, XdsVariantPolicies
// through the variants of their targets' RouteConfigurations.
bool Serves(const xds::ObjectRef&) { return true; }

// Whether the Gateway API front end holds the object (not the builder).
bool IsGatewayObject(const xds::ObjectRef& ref) {
  return ref.kind != xds::kXdsResourceKind && ref.kind != xds::kXdsAuthorityKind;
}

int64_t Millis(std::chrono::milliseconds d) { return static_cast<int64_t>(d.count()); }

// Text the directory's writers control (file names, object names, fields,
// messages quoting them), escaped and cut for a log line.
std::string Logged(absl::string_view text) {
  return xds::SafeForLog(text, xds::kMaxLoggedStatusBytes);
}
std::string Logged(const xds::ObjectRef& ref) { return xds::SafeForLog(ref.ToString()); }

}  // namespace

ManifestDirSource::ManifestDirSource(Options options, xds::SnapshotStore& store)
    : options_(std::move(options)),
      publisher_(store, [this] {
        Publisher::Options publishing;
        publishing.build = options_.build;
        publishing.on_published = options_.on_published;
        publishing.on_report = options_.on_report;
        return publishing;
      }()),
      front_end_(options_.gateway) {
  // An invalid edit of a GRPCRoute leaves the last accepted one serving, as
  // for an XdsResource; no history outlives the process.
  front_end_.SetLastGoodLookup([](const xds::ObjectRef&) { return std::nullopt; });
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (!options_.force_poll) {
    inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd_ < 0) {
      spdlog::warn("manifests: inotify is unavailable ({}); polling {} every {} ms",
                   std::strerror(errno), options_.directory, Millis(options_.poll_interval));
    }
  }
}

ManifestDirSource::~ManifestDirSource() {
  stopping_ = true;
  if (stop_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
  }
  if (worker_.joinable()) worker_.join();
  if (inotify_fd_ >= 0) close(inotify_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

void ManifestDirSource::Start() {
  AddWatch();  // Before the first listing, so that no change falls between the two.
  batch_start_ = absl::Now();  // The first snapshot's change is the start.
  {
    BulkLoadAllocation allocation;  // The first load reads the whole directory.
    Rescan();
    ProcessDirty();
  }
  worker_ = std::thread([this] { Run(); });
}

bool ManifestDirSource::AddWatch() {
  if (inotify_fd_ < 0) return false;
  watch_ = inotify_add_watch(inotify_fd_, options_.directory.c_str(), kWatchMask);
  if (watch_ < 0) {
    spdlog::warn("manifests: cannot watch {} ({}); polling it every {} ms", options_.directory,
                 std::strerror(errno), Millis(options_.poll_interval));
  }
  absl::MutexLock lock(&mu_);
  stats_.inotify = watch_ >= 0;
  return watch_ >= 0;
}

void ManifestDirSource::Run() {
  auto interval = [this] {
    return watch_ >= 0 ? options_.rescan_interval : options_.poll_interval;
  };
  Clock::time_point next_rescan = Clock::now() + interval();
  Clock::time_point batch_deadline = Clock::time_point::max();
  Clock::time_point batch_cap = Clock::time_point::max();
  while (!stopping_) {
    Clock::time_point deadline = std::min(next_rescan, batch_deadline);
    for (const std::string& path : held_files_) {
      const auto& held = files_.at(path).held;
      deadline = std::min(deadline, held->second + options_.removal_settle);
    }
    const bool was_idle = dirty_.empty();
    const bool events = Wait(deadline);
    {
      absl::MutexLock lock(&mu_);
      stats_.wakeups++;
    }
    if (stopping_) break;
    const Clock::time_point now = Clock::now();
    if (events && !dirty_.empty()) {
      // Each event extends the batch by `quiet`, up to its cap: a burst is
      // built once, a lone edit after `quiet`.
      if (was_idle) batch_cap = now + options_.coalesce;
      batch_deadline = std::min(batch_cap, now + options_.quiet);
    }
    if (now >= next_rescan || rescan_due_) {
      if (watch_ < 0 && inotify_fd_ >= 0 && fs::is_directory(options_.directory)) AddWatch();
      Rescan();
      rescan_due_ = false;
      next_rescan = now + interval();
      batch_deadline = now;
    }
    for (const std::string& path : held_files_) {
      if (now >= files_.at(path).held->second + options_.removal_settle) {
        dirty_.insert(path);
        batch_deadline = now;
      }
    }
    if (!dirty_.empty() && !batch_start_) batch_start_ = absl::Now();
    if (!dirty_.empty() && now >= batch_deadline) {
      ProcessDirty();
      batch_deadline = Clock::time_point::max();
    }
    // A rescan that found nothing leaves no batch to wait for: without this
    // the past deadline would make every later wait return at once (a spin).
    if (dirty_.empty()) batch_deadline = Clock::time_point::max();
  }
}

bool ManifestDirSource::Wait(Clock::time_point deadline) {
  const auto now = Clock::now();
  // To the microsecond: a batch closes 1 ms after its last event, and
  // poll()'s whole milliseconds would round that up to 2.
  std::chrono::microseconds wait{0};
  if (deadline > now) {
    wait = std::min<std::chrono::microseconds>(
        std::chrono::ceil<std::chrono::microseconds>(deadline - now), std::chrono::minutes(1));
  }
  const timespec timeout{static_cast<time_t>(wait.count() / 1'000'000),
                         static_cast<long>(wait.count() % 1'000'000 * 1'000)};
  pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {watch_ >= 0 ? inotify_fd_ : -1, POLLIN, 0}};
  if (ppoll(fds, 2, &timeout, nullptr) <= 0 || (fds[1].revents & POLLIN) == 0) return false;
  alignas(inotify_event) char buffer[64 * 1024];
  bool named = false;
  for (;;) {
    const ssize_t n = read(inotify_fd_, buffer, sizeof(buffer));
    if (n <= 0) return named;  // EAGAIN: drained.
    for (ssize_t offset = 0; offset < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
      offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if (event->mask & IN_Q_OVERFLOW) {
        spdlog::warn("manifests: inotify queue overflowed; rescanning {}", options_.directory);
        rescan_due_ = true;
      } else if ((event->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) ||
                 ((event->mask & IN_IGNORED) && event->wd == watch_)) {
        if (watch_ >= 0) {
          spdlog::error("manifests: {} was moved or deleted; the last good content keeps serving "
                        "(polling for it every {} ms)",
                        options_.directory, Millis(options_.poll_interval));
          inotify_rm_watch(inotify_fd_, watch_);
          watch_ = -1;
          absl::MutexLock lock(&mu_);
          stats_.inotify = false;
        }
      } else if (event->len > 0 && event->wd == watch_ && IsManifestFileName(event->name)) {
        dirty_.insert((fs::path(options_.directory) / event->name).string());
        named = true;
      }
    }
  }
}

void ManifestDirSource::Rescan() {
  std::vector<ManifestProblem> problems;
  std::vector<std::string> listed = ListManifestFiles({options_.directory}, &problems);
  if (!problems.empty()) {
    // A directory that cannot be listed is not a directory without files:
    // keep serving what it last held, and say so once.
    if (!listing_failed_) {
      for (const ManifestProblem& problem : problems) {
        spdlog::error("manifests: {}: {}; the last good content keeps serving",
                      Logged(problem.location), Logged(problem.message));
      }
    }
    listing_failed_ = true;
    return;
  }
  if (listing_failed_) spdlog::info("manifests: {} is readable again", options_.directory);
  listing_failed_ = false;
  const std::set<std::string> present(listed.begin(), listed.end());
  for (const auto& [path, state] : files_) {
    if (present.count(path) == 0) dirty_.insert(path);
  }
  for (const std::string& path : listed) {
    std::error_code error;
    const FileStamp stamp{fs::last_write_time(path, error), fs::file_size(path, error)};
    if (error) continue;  // Vanished between listing and stat: the next scan or event.
    auto it = files_.find(path);
    if (it == files_.end() || !it->second.stamp || !(*it->second.stamp == stamp)) {
      dirty_.insert(path);
    }
  }
}

void ManifestDirSource::ProcessDirty() {
  const Clock::time_point now = Clock::now();
  const absl::Time changed_at = batch_start_.value_or(absl::Now());
  batch_start_.reset();
  Undo undo;
  // Undoing a build may make another file serve an object (and so dirty).
  do {
    // Read the files dirty now together (many at start-up: over the cores).
    std::map<std::string, ManifestFile> reads;
    if (dirty_.size() > 1) {
      std::vector<std::string> paths;
      for (const std::string& path : dirty_) {
        std::error_code error;
        if (fs::is_regular_file(path, error)) paths.push_back(path);
      }
      std::vector<ManifestFile> files = ReadManifestFiles(paths, /*fingerprints=*/true);
      for (size_t i = 0; i < paths.size(); ++i) reads.emplace(paths[i], std::move(files[i]));
    }
    // Processing a file may make another one serve an object (and so dirty).
    while (!dirty_.empty()) {
      const std::string path = *dirty_.begin();
      dirty_.erase(dirty_.begin());
      auto read = reads.find(path);
      std::optional<ManifestFile> pre_read;
      if (read != reads.end()) {
        pre_read = std::move(read->second);
        reads.erase(read);
      }
      ProcessFile(path, now, std::move(pre_read), &undo);
      auto file = files_.find(path);
      if (file != files_.end() && file->second.held) {
        held_files_.insert(path);
      } else {
        held_files_.erase(path);
      }
    }
    while (BuildAndPublish(&undo, now, changed_at)) {
    }
    undo.clear();
  } while (!dirty_.empty());
}

void ManifestDirSource::ProcessFile(const std::string& path, Clock::time_point now,
                                    std::optional<ManifestFile> pre_read, Undo* undo) {
  std::error_code error;
  const bool exists = fs::is_regular_file(path, error);
  if (!exists) {
    // A file that is gone (or was renamed away) is a completed action; a
    // directory that is gone is not (it keeps serving; see Rescan()).
    auto it = files_.find(path);
    if (it == files_.end()) return;
    if (!fs::is_directory(options_.directory, error)) {
      it->second.held.reset();  // Decided once the directory is back.
      return;
    }
    spdlog::info("manifests: {} removed; its {} objects are withdrawn", Logged(path),
                 it->second.objects.size());
    {
      absl::MutexLock lock(&mu_);
      if (unparsed_.erase(path) > 0) stats_.report_changes++;
    }
    const auto objects = std::move(it->second.objects);
    files_.erase(it);
    for (const auto& [ref, fingerprint] : objects) Undefine(ref, path);
    return;
  }
  const FileStamp stamp{fs::last_write_time(path, error), fs::file_size(path, error)};
  if (error) return;  // Vanished meanwhile: its deletion event follows.
  FileState& state = files_[path];
  ManifestFile read =
      pre_read ? *std::move(pre_read) : ReadManifestFile(path, /*fingerprints=*/true);
  for (const ManifestProblem& problem : read.problems) {
    switch (problem.kind) {
      case ManifestProblem::Kind::kUnreadable:
        spdlog::error("manifests: {}: {}; its last good content keeps serving",
                      Logged(problem.location), Logged(problem.message));
        break;
      case ManifestProblem::Kind::kError:
        spdlog::error("manifests: {}: {}", Logged(problem.location), Logged(problem.message));
        break;
      case ManifestProblem::Kind::kWarning:
        spdlog::warn("manifests: {}: {}", Logged(problem.location), Logged(problem.message));
        break;
    }
  }
  state.stamp = stamp;
  std::optional<UnparsedFile> unparsed;
  for (const ManifestProblem& problem : read.problems) {
    if (problem.kind != ManifestProblem::Kind::kUnreadable) continue;
    unparsed = UnparsedFile{path, problem.line, problem.column, problem.message};
    break;
  }
  bool was_unparsed = false;
  {
    absl::MutexLock lock(&mu_);
    auto before = unparsed_.find(path);
    was_unparsed = before != unparsed_.end();
    // The same problem again is no news.
    if (was_unparsed && unparsed && before->second.line == unparsed->line &&
        before->second.column == unparsed->column && before->second.message == unparsed->message) {
      was_unparsed = false;
      unparsed.reset();
    } else {
      unparsed_.erase(path);
      if (unparsed) unparsed_.emplace(path, *unparsed);
      if (unparsed || was_unparsed) stats_.report_changes++;
    }
  }
  if (unparsed) {
    publisher_.ReportFile(
        path, unparsed->line > 0
                  ? absl::StrCat(unparsed->line, ":", unparsed->column, ": ", unparsed->message)
                  : unparsed->message);
  } else if (was_unparsed) {
    publisher_.ReportFile(path, "");
  }
  if (read.unreadable) {
    state.held.reset();  // Removals are decided by the next good read.
    return;              // Keeps the objects of its last good read.
  }

  std::set<xds::ObjectRef> defined;
  std::vector<FileObject*> changed;
  for (FileObject& object : read.objects) {
    const xds::ObjectRef& ref = object.ref();
    defined.insert(ref);
    auto it = state.objects.find(ref);
    auto forced = needs_upsert_.find(ref);
    if (it == state.objects.end() || it->second != object.fingerprint ||
        (forced != needs_upsert_.end() && forced->second == path)) {
      changed.push_back(&object);
    }
  }
  std::vector<xds::ObjectRef> dropped;
  // Dropping what serves nothing withdraws nothing: it holds no read.
  std::vector<xds::ObjectRef> dropped_unserved;
  for (const auto& [ref, fingerprint] : state.objects) {
    if (defined.count(ref) == 0) (Serves(ref) ? dropped : dropped_unserved).push_back(ref);
  }
  const bool quiet = state.held && state.held->first == stamp &&
                     now - state.held->second >= options_.removal_settle;
  if (!dropped.empty() && !quiet) {
    // The whole read waits: a prefix of a file being written would withdraw
    // its missing objects, and its cut last object may be what others need.
    if (!state.held || !(state.held->first == stamp)) state.held.emplace(stamp, now);
    spdlog::info(
        "manifests: {}: this read no longer defines {} of its objects (first: {}); "
        "the file's objects keep serving until it is quiet for {} ms and still lacks "
        "them",
        Logged(path), dropped.size(), Logged(dropped.front()), Millis(options_.removal_settle));
    absl::MutexLock lock(&mu_);
    stats_.held_removals++;
    return;
  }
  state.held.reset();
  for (const xds::ObjectRef& ref : dropped_unserved) state.objects.erase(ref);
  if (!changed.empty() && !quiet && publisher_.published() != nullptr) {
    undo->try_emplace(path, state.text);
  }
  for (FileObject* object : changed) {
    const xds::ObjectRef ref = object->ref();
    state.objects[ref] = object->fingerprint;
    Define(ref, path, object);
  }
  if (!dropped.empty()) {
    spdlog::info(
        "manifests: {}: {} objects no longer defined, removed after the file was quiet "
        "for {} ms",
        Logged(path), dropped.size(), Millis(options_.removal_settle));
    for (const xds::ObjectRef& ref : dropped) {
      state.objects.erase(ref);
      Undefine(ref, path);
    }
  }
  state.text = std::move(read.text);
  if (!changed.empty()) {
    spdlog::info("manifests: read {}: {} objects new or changed", Logged(path), changed.size());
  }
}

void ManifestDirSource::Restore(const Undo& undo, Clock::time_point now) {
  for (const auto& [path, text] : undo) {
    auto it = files_.find(path);
    if (it == files_.end()) continue;
    FileState& state = it->second;
    ManifestFile previous = ParseManifestText(text, path, /*fingerprints=*/true);
    std::set<xds::ObjectRef> defined;
    for (FileObject& object : previous.objects) {
      const xds::ObjectRef ref = object.ref();
      defined.insert(ref);
      auto [slot, inserted] = state.objects.emplace(ref, object.fingerprint);
      if (inserted || slot->second != object.fingerprint) {
        slot->second = object.fingerprint;
        Define(ref, path, &object);
      }
    }
    for (auto object = state.objects.begin(); object != state.objects.end();) {
      if (defined.count(object->first) > 0) {
        ++object;
        continue;
      }
      const xds::ObjectRef ref = object->first;
      object = state.objects.erase(object);
      Undefine(ref, path);
    }
    state.text = text;
    if (state.stamp) state.held.emplace(*state.stamp, now);
    held_files_.insert(path);
    spdlog::info(
        "manifests: {}: this read would withdraw served variants; the file's previous "
        "objects keep serving until it is quiet for {} ms",
        Logged(path), Millis(options_.removal_settle));
    absl::MutexLock lock(&mu_);
    stats_.held_removals++;
  }
}

bool ManifestDirSource::Withdraws(const xds::IncrementalBuilder::Result& result) const {
  for (const auto& status : result.changed_statuses) {
    const std::shared_ptr<const xds::ObjectStatus> before = publisher_.ReportedStatus(status->ref);
    if (before == nullptr || before->variants.empty()) continue;
    std::set<std::tuple<const xds::ResourceType*, absl::string_view, absl::string_view>> served;
    for (const auto& variant : status->variants) {
      served.emplace(variant->type, variant->name, variant->label);
    }
    for (const auto& variant : before->variants) {
      if (served.count({variant->type, variant->name, variant->label}) == 0) return true;
    }
  }
  return false;
}

void ManifestDirSource::Define(const xds::ObjectRef& ref, const std::string& path,
                               FileObject* object) {
  std::set<std::string>& files = definers_[ref];
  const bool added = files.insert(path).second;
  const std::string& serving = *files.begin();
  if (added && files.size() > 1) {
    spdlog::error(
        "manifests: {}: {} is defined in more than one file ({}); using the one in {}, "
        "the first by name",
        Logged(LocationOf(*object)), Logged(ref), Logged(absl::StrJoin(files, ", ")),
        Logged(serving));
  }
  if (serving != path) return;
  needs_upsert_.erase(ref);
  if (auto* resource = std::get_if<xds::ResourceObject>(&object->object)) {
    publisher_.builder().Upsert(std::move(*resource));
  } else if (auto* gateway_object = std::get_if<gateway::GatewayObject>(&object->object)) {
    {
      absl::MutexLock lock(&mu_);
      GatewayObjectReport& report = gateway_objects_[ref];
      report.ref = ref;
      report.location = gateway_object->location;
      report.generation = gateway_object->generation;
    }
    front_end_.Upsert(std::move(*gateway_object));
  } else {
    publisher_.builder().Upsert(std::get<xds::AuthorityObject>(std::move(object->object)));
  }
  absl::MutexLock lock(&mu_);
  stats_.upserts++;
}

void ManifestDirSource::Undefine(const xds::ObjectRef& ref, const std::string& path) {
  auto it = definers_.find(ref);
  if (it == definers_.end()) return;
  const bool was_serving = *it->second.begin() == path;
  it->second.erase(path);
  if (it->second.empty()) {
    definers_.erase(it);
    needs_upsert_.erase(ref);
    if (IsGatewayObject(ref)) {
      front_end_.Remove(ref);
    } else {
      publisher_.builder().Remove(ref);
    }
    absl::MutexLock lock(&mu_);
    gateway_objects_.erase(ref);
    stats_.removals++;
    return;
  }
  if (was_serving) {
    const std::string& next = *it->second.begin();
    spdlog::info("manifests: {} is now taken from {}", Logged(ref), Logged(next));
    needs_upsert_[ref] = next;
    dirty_.insert(next);
  }
}

bool ManifestDirSource::BuildAndPublish(Undo* undo, Clock::time_point now,
                                        absl::Time changed_at) {
  front_end_.Flush(publisher_.builder());
  bool reconciled = false;
  const Publisher::Outcome outcome =
      publisher_.BuildAndPublish(changed_at, [&](const xds::IncrementalBuilder::Result& result) {
        // The front end sees every build, this one too if it is built again.
        ReconcileGateway(result);
        reconciled = true;
        if (undo->empty() || !Withdraws(result)) return false;
        // Not published: the files' previous objects come back, and the
        // build from them serves what was served.
        Restore(*undo, now);
        undo->clear();
        front_end_.Flush(publisher_.builder());
        reconciled = false;
        return true;
      });
  // Without a build (the front end's output was what the builder held), a
  // route's status may still have changed.
  if (!reconciled) {
    ReconcileGateway(outcome.built ? outcome.result : xds::IncrementalBuilder::Result());
  }
  if (outcome.published) undo->clear();  // What was published is not undone.
  return outcome.deferred();
}

void ManifestDirSource::ReconcileGateway(const xds::IncrementalBuilder::Result& result) {
  const std::vector<std::shared_ptr<const gateway::GatewayStatus>> changed =
      front_end_.Reconcile(publisher_.builder(), result);
  if (changed.empty()) return;
  for (const auto& status : changed) {
    bool accepted = true;
    for (const gateway::ParentStatus& parent : status->parents) {
      for (const gateway::Condition& condition : parent.conditions) {
        // PartiallyInvalid says what is wrong when it is True.
        if ((condition.status == gateway::kStatusTrue) !=
            (condition.type == gateway::kConditionPartiallyInvalid)) {
          continue;
        }
        accepted = accepted && condition.type != gateway::kConditionAccepted;
        spdlog::warn("GRPCRoute {}: {}={} {}: {}", Logged(status->object), condition.type,
                     condition.status, condition.reason, Logged(condition.message));
      }
    }
    if (accepted && !status->parents.empty()) {
      spdlog::info("GRPCRoute {}: accepted by {} parents", Logged(status->object),
                   status->parents.size());
    }
    bool applied = true;
    for (const gateway::AncestorStatus& ancestor : status->ancestors) {
      for (const gateway::Condition& condition : ancestor.conditions) {
        if (condition.status == gateway::kStatusTrue) continue;
        applied = false;
        spdlog::warn("XdsVariantPolicy {}: {}={} {}: {}", Logged(status->object), condition.type,
                     condition.status, condition.reason, Logged(condition.message));
      }
    }
    if (applied && !status->ancestors.empty()) {
      spdlog::info("XdsVariantPolicy {}: accepted for {} ancestors", Logged(status->object),
                   status->ancestors.size());
    }
  }
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  for (const auto& status : changed) {
    auto it = gateway_objects_.find(status->object);
    if (it == gateway_objects_.end()) continue;
    it->second.status = status;
    it->second.status_since = now;
  }
  if (!changed.empty()) stats_.report_changes++;
}

std::vector<std::string> ManifestDirSource::authorities() const {
  std::vector<std::string> out;
  for (const auto& status : publisher_.statuses()) {
    if (status->ref.kind == xds::kXdsAuthorityKind && status->accepted) {
      out.push_back(status->served_name);
    }
  }
  return out;
}

std::vector<std::shared_ptr<const xds::ObjectStatus>> ManifestDirSource::statuses() const {
  return publisher_.statuses();
}

std::vector<ManifestDirSource::GatewayObjectReport> ManifestDirSource::gateway_objects() const {
  absl::MutexLock lock(&mu_);
  std::vector<GatewayObjectReport> out;
  out.reserve(gateway_objects_.size());
  for (const auto& [ref, report] : gateway_objects_) out.push_back(report);
  return out;
}

std::map<xds::ObjectRef, absl::Time> ManifestDirSource::rejected_since() const {
  return publisher_.rejected_since();
}

std::map<std::string, ManifestDirSource::UnparsedFile> ManifestDirSource::unparsed_files()
    const {
  absl::MutexLock lock(&mu_);
  return unparsed_;
}

ManifestDirSource::Stats ManifestDirSource::stats() const {
  Stats stats;
  {
    absl::MutexLock lock(&mu_);
    stats = stats_;
  }
  static_cast<PublishStats&>(stats) = publisher_.stats();
  return stats;
}

}  // namespace facet::controller
