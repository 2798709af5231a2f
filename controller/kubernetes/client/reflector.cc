#include "controller/kubernetes/client/reflector.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "controller/kubernetes/client/kube_errors.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "spdlog/spdlog.h"
#include "xds_server/common/log_text.h"
#include "xds_server/common/status_macros.h"

namespace facet::controller::kube {
namespace {

// client-go treats a watch that ends within this time without an event as
// an error ("very short watch"), so a server that closes watches at once
// cannot make the reflector spin.
constexpr absl::Duration kMinWatchDuration = absl::Seconds(1);

std::function<double()> DefaultRandom() {
  auto gen = std::make_shared<absl::BitGen>();
  return [gen] { return absl::Uniform(*gen, 0.0, 1.0); };
}

}  // namespace

Reflector::Reflector(KubeClient& client, Options options)
    : client_(client),
      options_(std::move(options)),
      name_(options_.name.empty() ? options_.collection_path : options_.name),
      clock_(options_.clock != nullptr ? *options_.clock : RealClock::Get()),
      random_(options_.random ? options_.random : DefaultRandom()),
      backoff_(options_.backoff, random_) {}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return;
  started_ = true;
  worker_ = std::thread([this] { Run(); });
}

void Reflector::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_.Notify();
    }
  }
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

bool Reflector::has_synced() const {
  absl::MutexLock lock(&mu_);
  return synced_;
}

std::string Reflector::last_sync_resource_version() const {
  absl::MutexLock lock(&mu_);
  return resource_version_;
}

bool Reflector::QueueReadyLocked() const { return stopping_ || !queue_.empty(); }

bool Reflector::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool Reflector::SleepFor(absl::Duration duration) {
  return clock_.SleepFor(duration, stop_) && !stopping();
}

void Reflector::SetResourceVersion(const std::string& resource_version) {
  if (resource_version.empty()) return;
  absl::MutexLock lock(&mu_);
  resource_version_ = resource_version;
}

std::string Reflector::RelistResourceVersion() const {
  if (resource_version_unavailable_) return "";
  absl::MutexLock lock(&mu_);
  return resource_version_.empty() ? "0" : resource_version_;
}

void Reflector::Run() {
  while (!stopping()) {
    const absl::Status status = ListAndWatch();
    if (stopping()) break;
    if (!status.ok()) watch_errors_++;
    if (IsResourceExpired(status)) {
      spdlog::info("reflector {}: {}; relisting", name_,
                   xds::SafeForLog(status.message(), xds::kMaxLoggedStatusBytes));
    } else if (!status.ok()) {
      spdlog::warn("reflector {}: {}; relisting after backoff", name_,
                   xds::SafeForLog(status.message(), xds::kMaxLoggedStatusBytes));
    }
    if (!SleepFor(backoff_.Next(clock_.Now()))) break;
  }
}

absl::Status Reflector::ListAndWatch() {
  RETURN_IF_ERROR(ListAndReplace());
  return WatchLoop();
}

absl::StatusOr<Reflector::FullList> Reflector::ListAll(const std::string& resource_version) {
  ListOptions options;
  options.resource_version = resource_version;
  options.label_selector = options_.label_selector;
  const bool paginate = paginated_result_ || resource_version.empty() || resource_version == "0";
  options.limit = paginate ? options_.page_size : 0;
  FullList list;
  while (true) {
    ASSIGN_OR_RETURN(ListResult page, client_.List(options_.collection_path, options));
    list.resource_version = std::move(page.resource_version);
    std::move(page.items.begin(), page.items.end(), std::back_inserter(list.items));
    if (page.continue_token.empty()) {
      lists_++;
      return list;
    }
    if (stopping()) return absl::CancelledError("stopping");
    list.paginated = true;
    options.continue_token = std::move(page.continue_token);
    options.resource_version.clear();  // The server rejects both together.
  }
}

absl::Status Reflector::ListAndReplace() {
  const std::string resource_version = RelistResourceVersion();
  absl::StatusOr<FullList> list = ListAll(resource_version);
  if (IsResourceExpired(list.status()) || IsTooLargeResourceVersion(list.status())) {
    spdlog::info("reflector {}: {}; listing again with resourceVersion=\"\"", name_,
                 std::string(list.status().message()));
    resource_version_unavailable_ = true;
    list = ListAll(RelistResourceVersion());
  }
  if (!list.ok()) return list.status();
  resource_version_unavailable_ = false;
  if (resource_version == "0" && list->paginated) paginated_result_ = true;

  ObjectCache::Objects objects;
  for (YAML::Node& item : list->items) {
    absl::StatusOr<std::string> key = ObjectKey(item);
    if (!key.ok()) {
      spdlog::warn("reflector {}: skipping a listed item: {}", name_,
                   xds::SafeForLog(key.status().message(), xds::kMaxLoggedStatusBytes));
      continue;
    }
    objects.try_emplace(*std::move(key), std::move(item));
  }
  const std::vector<ObjectDelta> deltas = cache_.Replace(std::move(objects));
  bool first_sync = false;
  {
    absl::MutexLock lock(&mu_);
    first_sync = !synced_;
    synced_ = true;
    resource_version_ = list->resource_version;
  }
  Deliver(deltas, first_sync);
  return absl::OkStatus();
}

absl::Status Reflector::WatchLoop() {
  std::optional<absl::Time> internal_errors_since;
  while (!stopping()) {
    const absl::Time start = clock_.Now();
    WatchOptions options;
    options.resource_version = last_sync_resource_version();
    options.allow_bookmarks = true;
    options.label_selector = options_.label_selector;
    options.timeout_seconds =
        static_cast<int>(absl::ToDoubleSeconds(options_.min_watch_timeout) * (random_() + 1.0));
    uint64_t watch_id = 0;
    {
      absl::MutexLock lock(&mu_);
      watch_id = ++watch_id_;
      queue_.clear();
    }
    watches_++;
    absl::StatusOr<std::unique_ptr<WatchHandle>> handle = client_.Watch(
        options_.collection_path, options,
        [this, watch_id](WatchEvent event) {
          Enqueue({watch_id, std::move(event), {}});
        },
        [this, watch_id](absl::Status status) {
          Enqueue({watch_id, std::nullopt, std::move(status)});
        });
    if (!handle.ok()) return handle.status();
    const bool from_any = options.resource_version.empty() || options.resource_version == "0";
    const WatchOutcome outcome = Consume(watch_id, /*synthetic_added=*/from_any);
    handle->reset();  // No callback runs after this.
    if (stopping()) return absl::OkStatus();

    const absl::Status& status = outcome.status;
    if (status.ok()) {
      internal_errors_since.reset();
      if (clock_.Now() - start < kMinWatchDuration && outcome.events == 0) {
        return absl::UnavailableError(absl::StrCat("very short watch: it ended within ",
                                                   absl::FormatDuration(kMinWatchDuration),
                                                   " without an event"));
      }
      continue;  // Re-watch from the last resourceVersion.
    }
    if (IsConnectionRefused(status) || IsTooManyRequests(status)) {
      absl::Duration wait = backoff_.Next(clock_.Now());
      if (std::optional<ApiErrorInfo> info = GetApiErrorInfo(status); info.has_value()) {
        wait = std::max(wait, info->retry_after);
      }
      spdlog::info("reflector {}: {}; watching again in {}", name_,
                   xds::SafeForLog(status.message(), xds::kMaxLoggedStatusBytes),
                   absl::FormatDuration(wait));
      if (!SleepFor(wait)) return absl::OkStatus();
      continue;
    }
    if (IsInternalError(status)) {
      const absl::Time now = clock_.Now();
      if (!internal_errors_since.has_value()) internal_errors_since = now;
      if (now - *internal_errors_since <= options_.internal_error_retry) {
        const absl::Duration wait = backoff_.Next(now);
        spdlog::info("reflector {}: {}; watching again in {}", name_,
                     xds::SafeForLog(status.message(), xds::kMaxLoggedStatusBytes),
                     absl::FormatDuration(wait));
        if (!SleepFor(wait)) return absl::OkStatus();
        continue;
      }
    }
    return status;  // Relist.
  }
  return absl::OkStatus();
}

void Reflector::Enqueue(Queued item) {
  absl::MutexLock lock(&mu_);
  if (item.watch_id != watch_id_) return;  // A watch already given up.
  queue_.push_back(std::move(item));
}

Reflector::WatchOutcome Reflector::Consume(uint64_t watch_id, bool synthetic_added) {
  WatchOutcome outcome;
  const std::string what = absl::StrCat("WATCH ", options_.collection_path);
  while (true) {
    std::deque<Queued> batch;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &Reflector::QueueReadyLocked));
      if (stopping_) {
        outcome.status = absl::CancelledError("stopping");
        return outcome;
      }
      batch.swap(queue_);
    }
    std::vector<ObjectDelta> deltas;
    for (const Queued& item : batch) {
      if (item.watch_id != watch_id) continue;
      if (!item.event.has_value()) {
        outcome.status = item.end;
        Deliver(deltas, /*first_sync=*/false);
        return outcome;
      }
      if (item.event->type == WatchEvent::Type::kError) {
        outcome.status = StatusFromStatusObject(what, item.event->object);
        Deliver(deltas, /*first_sync=*/false);
        return outcome;
      }
      ApplyEvent(*item.event, synthetic_added, deltas);
      ++outcome.events;
    }
    Deliver(deltas, /*first_sync=*/false);
  }
}

void Reflector::ApplyEvent(const WatchEvent& event, bool& synthetic_added,
                           std::vector<ObjectDelta>& deltas) {
  const std::string resource_version = ResourceVersionOf(event.object);
  if (event.type == WatchEvent::Type::kBookmark) {
    synthetic_added = false;
    SetResourceVersion(resource_version);
    return;
  }
  absl::StatusOr<std::string> key = ObjectKey(event.object);
  if (!key.ok()) {
    spdlog::warn("reflector {}: skipping a {} event: {}", name_, WatchEventTypeName(event.type),
                 xds::SafeForLog(key.status().message(), xds::kMaxLoggedStatusBytes));
    return;
  }
  if (event.type == WatchEvent::Type::kDeleted) {
    if (std::optional<ObjectDelta> delta = cache_.Remove(*key, event.object); delta.has_value()) {
      deltas.push_back(*std::move(delta));
    }
  } else {
    deltas.push_back(cache_.Upsert(*key, event.object));
  }
  if (event.type != WatchEvent::Type::kAdded) synthetic_added = false;
  if (!synthetic_added) SetResourceVersion(resource_version);
}

void Reflector::Deliver(const std::vector<ObjectDelta>& deltas, bool first_sync) {
  if ((deltas.empty() && !first_sync) || !options_.on_change) return;
  options_.on_change(deltas);
}

}  // namespace facet::controller::kube
