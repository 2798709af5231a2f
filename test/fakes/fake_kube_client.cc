#include "test/fakes/fake_kube_client.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "controller/kubernetes/client/kube_errors.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "xds_server/common/status_macros.h"

namespace facet::testing {
namespace {

// Whether `object`'s labels satisfy an equality-based selector ("a=b,c!=d,e,!f").
bool MatchesLabels(const YAML::Node& object, const std::string& selector) {
  if (selector.empty()) return true;
  for (absl::string_view term : absl::StrSplit(selector, ',', absl::SkipEmpty())) {
    term = absl::StripAsciiWhitespace(term);
    const bool negated = absl::ConsumePrefix(&term, "!");
    std::string key(term), value;
    bool has_value = false, not_equal = false;
    if (size_t at = term.find("!="); at != absl::string_view::npos) {
      key = std::string(term.substr(0, at));
      value = std::string(term.substr(at + 2));
      has_value = not_equal = true;
    } else if (size_t eq = term.find('='); eq != absl::string_view::npos) {
      key = std::string(term.substr(0, eq));
      value = std::string(absl::StripPrefix(term.substr(eq + 1), "="));
      has_value = true;
    }
    const YAML::Node label = controller::kube::FieldAt(object, {"metadata", "labels", key});
    const bool present = label.IsDefined() && label.IsScalar();
    if (!has_value) {
      if (present == negated) return false;
    } else if (not_equal ? (present && label.Scalar() == value)
                         : (!present || label.Scalar() != value)) {
      return false;
    }
  }
  return true;
}

}  // namespace


using controller::kube::ApiError;
using controller::kube::ApiErrorInfo;
using controller::kube::ObjectKey;
using controller::kube::ParseDocumentText;
using controller::kube::ResourceVersionOf;
using controller::kube::StringAt;
using controller::kube::WatchSink;

namespace {

ApiErrorInfo Info(int http_code, std::string reason) {
  ApiErrorInfo info;
  info.http_code = http_code;
  info.reason = std::move(reason);
  return info;
}

std::string KeyOf(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : absl::StrCat(ns, "/", name);
}

// The collections Facet reads, served (and listed by discovery) before any
// object is stored in them.
constexpr const char* kKnownCollections[] = {
    "/api/v1/services",
    "/apis/apps/v1/controllerrevisions",
    "/apis/coordination.k8s.io/v1/leases",
    "/apis/discovery.k8s.io/v1/endpointslices",
    "/apis/facet.dev/v1alpha1/xdsauthorities",
    "/apis/facet.dev/v1alpha1/xdsresources",
    "/apis/facet.dev/v1alpha1/xdsvariantpolicies",
    "/apis/gateway.networking.k8s.io/v1/grpcroutes",
    "/apis/gateway.networking.k8s.io/v1beta1/referencegrants",
};

std::string SpecText(const YAML::Node& node) {
  if (!node.IsDefined()) return "";
  YAML::Emitter out;
  out << node;
  return out.c_str();
}

}  // namespace

class FakeKubeClient::Handle final : public WatchHandle {
 public:
  Handle(FakeKubeClient& fake, uint64_t id, std::shared_ptr<WatchSink> sink)
      : fake_(fake), id_(id), sink_(std::move(sink)) {}
  ~Handle() override {
    sink_->Cancel();
    fake_.Unregister(id_);
  }

 private:
  FakeKubeClient& fake_;
  const uint64_t id_;
  const std::shared_ptr<WatchSink> sink_;
};

FakeKubeClient::FakeKubeClient() = default;

FakeKubeClient::~FakeKubeClient() = default;

absl::StatusOr<FakeKubeClient::ParsedPath> FakeKubeClient::ParsePath(const std::string& path) {
  const std::vector<std::string> segments = absl::StrSplit(path, '/', absl::SkipEmpty());
  const size_t prefix = !segments.empty() && segments[0] == "api" ? 2 : 3;
  if (segments.size() <= prefix) {
    return absl::InvalidArgumentError(absl::StrCat("fake: not a resource path: ", path));
  }
  ParsedPath parsed;
  size_t plural = prefix;
  if (segments.size() > prefix + 2 && segments[prefix] == "namespaces") {
    parsed.ns = segments[prefix + 1];
    plural = prefix + 2;
  }
  parsed.collection = absl::StrCat(
      "/", absl::StrJoin(segments.begin(), segments.begin() + prefix, "/"), "/", segments[plural]);
  parsed.rest.assign(segments.begin() + plural + 1, segments.end());
  return parsed;
}

void FakeKubeClient::SetServed(const std::string& collection, bool served) {
  absl::MutexLock lock(&mu_);
  if (served) {
    not_served_.erase(collection);
  } else {
    not_served_.insert(collection);
  }
}

absl::Status FakeKubeClient::ServedLocked(const std::string& what,
                                          const std::string& collection) const {
  if (not_served_.count(collection) == 0) return absl::OkStatus();
  return ApiError(what, Info(404, "NotFound"), "the server could not find the requested resource");
}

std::optional<absl::StatusOr<YAML::Node>> FakeKubeClient::DiscoveryLocked(
    const std::string& path) const {
  const std::vector<std::string> segments = absl::StrSplit(path, '/', absl::SkipEmpty());
  const bool core = !segments.empty() && segments[0] == "api";
  if (segments.size() != (core ? 2u : 3u) || (!core && segments[0] != "apis")) return std::nullopt;
  const std::string prefix = absl::StrCat("/", absl::StrJoin(segments, "/"), "/");
  std::set<std::string> collections(std::begin(kKnownCollections), std::end(kKnownCollections));
  for (const auto& [collection, objects] : objects_) collections.insert(collection);
  YAML::Node resources(YAML::NodeType::Sequence);
  for (const std::string& collection : collections) {
    if (!absl::StartsWith(collection, prefix) || not_served_.count(collection) > 0) continue;
    const std::string plural = collection.substr(prefix.size());
    if (plural.find('/') != std::string::npos) continue;
    YAML::Node resource;
    resource["name"] = plural;
    resource["namespaced"] = true;
    resources.push_back(resource);
  }
  if (resources.size() == 0 && !core) {
    return absl::StatusOr<YAML::Node>(ApiError(absl::StrCat("GET ", path), Info(404, "NotFound"),
                                               "the server could not find the requested resource"));
  }
  YAML::Node list;
  list["kind"] = "APIResourceList";
  list["apiVersion"] = "v1";
  list["groupVersion"] = core ? "v1" : absl::StrCat(segments[1], "/", segments[2]);
  list["resources"] = resources;
  return absl::StatusOr<YAML::Node>(list);
}

std::string FakeKubeClient::Put(const std::string& collection, const YAML::Node& object,
                                bool deliver) {
  absl::MutexLock lock(&mu_);
  return PutLocked(collection, YAML::Clone(object), deliver);
}

std::string FakeKubeClient::PutLocked(const std::string& collection, YAML::Node object,
                                      bool deliver) {
  absl::StatusOr<std::string> key = ObjectKey(object);
  if (!key.ok()) {
    std::fprintf(stderr, "FakeKubeClient::Put: %s\n", std::string(key.status().message()).c_str());
    std::abort();
  }
  auto& stored = objects_[collection];
  const bool existed = stored.count(*key) > 0;
  const std::string version = absl::StrCat(++resource_version_);
  object["metadata"]["resourceVersion"] = version;
  if (!existed) {
    if (StringAt(object, {"metadata", "uid"}).empty()) {
      object["metadata"]["uid"] = absl::StrCat("uid-", next_uid_++);
    }
    if (StringAt(object, {"metadata", "generation"}).empty()) object["metadata"]["generation"] = 1;
    if (StringAt(object, {"metadata", "creationTimestamp"}).empty()) {
      object["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z";
    }
  }
  if (existed) {
    // As the API server does: the uid stays, and a spec change bumps
    // metadata.generation.
    const YAML::Node& previous = stored.at(*key);
    if (StringAt(object, {"metadata", "uid"}).empty()) {
      object["metadata"]["uid"] = StringAt(previous, {"metadata", "uid"});
    }
    int64_t generation = 1;
    (void)absl::SimpleAtoi(StringAt(previous, {"metadata", "generation"}), &generation);
    if (SpecText(controller::kube::Field(previous, "spec")) !=
            SpecText(controller::kube::Field(object, "spec")) &&
        StringAt(object, {"metadata", "generation"}) == StringAt(previous, {"metadata", "generation"})) {
      object["metadata"]["generation"] = generation + 1;
    }
  }
  stored.erase(*key);  // Not operator=: it would write through to the old node.
  stored.emplace(*key, object);
  RecordLocked(collection, StringAt(object, {"metadata", "namespace"}),
               {existed ? WatchEvent::Type::kModified : WatchEvent::Type::kAdded, object}, deliver);
  return version;
}

bool FakeKubeClient::Delete(const std::string& collection, const std::string& ns,
                            const std::string& name, bool deliver) {
  absl::MutexLock lock(&mu_);
  auto& stored = objects_[collection];
  const auto it = stored.find(KeyOf(ns, name));
  if (it == stored.end()) return false;
  YAML::Node last = YAML::Clone(it->second);
  stored.erase(it);
  last["metadata"]["resourceVersion"] = absl::StrCat(++resource_version_);
  RecordLocked(collection, ns, {WatchEvent::Type::kDeleted, last}, deliver);
  // The garbage collector's cascade: dependents naming the uid go too.
  const std::string uid = StringAt(last, {"metadata", "uid"});
  if (uid.empty()) return true;
  for (auto& [other_collection, objects] : objects_) {
    for (auto dependent = objects.begin(); dependent != objects.end();) {
      bool owned = false;
      for (const YAML::Node& reference :
           controller::kube::FieldAt(dependent->second, {"metadata", "ownerReferences"})) {
        owned = owned || StringAt(reference, {"uid"}) == uid;
      }
      if (!owned) {
        ++dependent;
        continue;
      }
      YAML::Node gone = YAML::Clone(dependent->second);
      gone["metadata"]["resourceVersion"] = absl::StrCat(++resource_version_);
      const std::string gone_ns = StringAt(gone, {"metadata", "namespace"});
      dependent = objects.erase(dependent);
      RecordLocked(other_collection, gone_ns, {WatchEvent::Type::kDeleted, gone}, deliver);
    }
  }
  return true;
}

void FakeKubeClient::RecordLocked(const std::string& collection, const std::string& ns,
                                  WatchEvent event, bool deliver) {
  history_.push_back({resource_version_, collection, ns, event});
  if (!deliver) return;
  for (const OpenWatch& watch : open_) {
    if (watch.collection != collection || (!watch.ns.empty() && watch.ns != ns)) continue;
    if (!MatchesLabels(event.object, watch.label_selector)) continue;
    watch.sink->Event({event.type, YAML::Clone(event.object)});
  }
}

std::map<std::string, YAML::Node> FakeKubeClient::Objects(const std::string& collection) const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, YAML::Node> copies;
  const auto it = objects_.find(collection);
  if (it == objects_.end()) return copies;
  for (const auto& [key, object] : it->second) copies.emplace(key, YAML::Clone(object));
  return copies;
}

std::string FakeKubeClient::resource_version() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat(resource_version_);
}

void FakeKubeClient::Compact() {
  absl::MutexLock lock(&mu_);
  compacted_ = resource_version_;
  history_.clear();
}

void FakeKubeClient::FailNextList(absl::Status status, bool continue_only) {
  absl::MutexLock lock(&mu_);
  list_faults_.push_back({std::move(status), continue_only});
}

void FakeKubeClient::FailNextGet(absl::Status status) {
  absl::MutexLock lock(&mu_);
  get_faults_.push_back(std::move(status));
}

void FakeKubeClient::FailNextWatch(absl::Status status) {
  absl::MutexLock lock(&mu_);
  watch_faults_.push_back(std::move(status));
}

void FakeKubeClient::OverrideNextListResourceVersion(std::string resource_version) {
  absl::MutexLock lock(&mu_);
  list_resource_version_override_ = std::move(resource_version);
}

void FakeKubeClient::PushEvent(const WatchEvent& event) {
  absl::MutexLock lock(&mu_);
  for (const OpenWatch& watch : open_) watch.sink->Event({event.type, YAML::Clone(event.object)});
}

std::string FakeKubeClient::SendBookmark() {
  absl::MutexLock lock(&mu_);
  const std::string version = absl::StrCat(++resource_version_);
  for (const OpenWatch& watch : open_) {
    YAML::Node bookmark;
    bookmark["kind"] = "Bookmark";
    bookmark["metadata"]["resourceVersion"] = version;
    watch.sink->Event({WatchEvent::Type::kBookmark, bookmark});
  }
  return version;
}

void FakeKubeClient::ExpireWatches() {
  absl::MutexLock lock(&mu_);
  for (const OpenWatch& watch : open_) {
    watch.sink->Event({WatchEvent::Type::kError, ExpiredStatusObject("too old resource version")});
    watch.sink->End(absl::OkStatus());
  }
  open_.clear();
}

void FakeKubeClient::EndWatches(absl::Status status) {
  absl::MutexLock lock(&mu_);
  for (const OpenWatch& watch : open_) watch.sink->End(status);
  open_.clear();
}

void FakeKubeClient::Unregister(uint64_t id) {
  absl::MutexLock lock(&mu_);
  open_.erase(std::remove_if(open_.begin(), open_.end(),
                             [id](const OpenWatch& watch) { return watch.id == id; }),
              open_.end());
}

std::vector<FakeKubeClient::ListCall> FakeKubeClient::list_calls() const {
  absl::MutexLock lock(&mu_);
  return list_calls_;
}

std::vector<FakeKubeClient::WatchCall> FakeKubeClient::watch_calls() const {
  absl::MutexLock lock(&mu_);
  return watch_calls_;
}

int FakeKubeClient::open_watches() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(open_.size());
}

bool FakeKubeClient::AwaitUntil(const std::function<bool()>& done, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
}

bool FakeKubeClient::WaitForListCalls(size_t count, absl::Duration timeout) const {
  return AwaitUntil([this, count]()
                        ABSL_NO_THREAD_SAFETY_ANALYSIS { return list_calls_.size() >= count; },
                    timeout);
}

bool FakeKubeClient::WaitForWatchCalls(size_t count, absl::Duration timeout) const {
  return AwaitUntil([this, count]()
                        ABSL_NO_THREAD_SAFETY_ANALYSIS { return watch_calls_.size() >= count; },
                    timeout);
}

bool FakeKubeClient::WaitForOpenWatches(int count, absl::Duration timeout) const {
  return AwaitUntil(
      [this, count]()
          ABSL_NO_THREAD_SAFETY_ANALYSIS { return static_cast<int>(open_.size()) == count; },
      timeout);
}

absl::Status FakeKubeClient::ExpiredError() {
  return ApiError("LIST (fake)", Info(410, "Expired"),
                  "The provided continue parameter is too old to display a consistent list "
                  "result.");
}

absl::Status FakeKubeClient::TooLargeResourceVersionError() {
  ApiErrorInfo info = Info(504, "Timeout");
  info.cause = "ResourceVersionTooLarge";
  return ApiError("LIST (fake)", info, "Too large resource version");
}

absl::Status FakeKubeClient::TooManyRequestsError(absl::Duration retry_after) {
  ApiErrorInfo info = Info(429, "TooManyRequests");
  info.retry_after = retry_after;
  return ApiError("WATCH (fake)", info, "too many requests, please try again later");
}

absl::Status FakeKubeClient::ConnectionRefusedError() {
  return controller::kube::ConnectionError("WATCH (fake)", "Connection refused", /*refused=*/true);
}

absl::Status FakeKubeClient::InternalServerError() {
  return ApiError("WATCH (fake)", Info(500, "InternalError"), "etcdserver: leader changed");
}

absl::Status FakeKubeClient::BrokenStreamError() {
  return controller::kube::ConnectionError("WATCH (fake)", "watch stream broken: connection reset",
                                           /*refused=*/false);
}

YAML::Node FakeKubeClient::ExpiredStatusObject(const std::string& message) {
  YAML::Node status;
  status["kind"] = "Status";
  status["apiVersion"] = "v1";
  status["status"] = "Failure";
  status["reason"] = "Expired";
  status["code"] = 410;
  status["message"] = message;
  return status;
}

absl::StatusOr<FakeKubeClient::ListResult> FakeKubeClient::List(const std::string& collection_path,
                                                                const ListOptions& options) {
  const std::string what = absl::StrCat("LIST ", collection_path);
  absl::MutexLock lock(&mu_);
  list_calls_.push_back({collection_path, options});
  for (auto it = list_faults_.begin(); it != list_faults_.end(); ++it) {
    if (it->continue_only && options.continue_token.empty()) continue;
    absl::Status status = std::move(it->status);
    list_faults_.erase(it);
    return status;
  }
  ASSIGN_OR_RETURN(ParsedPath path, ParsePath(collection_path));
  RETURN_IF_ERROR(ServedLocked(what, path.collection));
  if (!options.continue_token.empty() && !options.resource_version.empty()) {
    return ApiError(what, Info(400, "BadRequest"),
                    "specifying resource version is not allowed when using continue");
  }
  if (!options.resource_version.empty() && options.resource_version != "0") {
    int64_t requested = 0;
    if (!absl::SimpleAtoi(options.resource_version, &requested)) {
      return ApiError(what, Info(400, "BadRequest"), "invalid resource version");
    }
    if (requested > resource_version_) {
      ApiErrorInfo info = Info(504, "Timeout");
      info.cause = "ResourceVersionTooLarge";
      return ApiError(what, info, "Too large resource version");
    }
  }
  int64_t list_version = resource_version_;
  std::string after;
  if (!options.continue_token.empty()) {
    const std::pair<std::string, std::string> token =
        absl::StrSplit(options.continue_token, absl::MaxSplits('|', 1));
    if (!absl::SimpleAtoi(token.first, &list_version)) {
      return ApiError(what, Info(400, "BadRequest"), "invalid continue token");
    }
    if (list_version < compacted_) {
      return ApiError(what, Info(410, "Expired"),
                      "The provided continue parameter is too old to display a consistent list "
                      "result.");
    }
    after = token.second;
  }
  ListResult result;
  result.resource_version = absl::StrCat(list_version);
  if (list_resource_version_override_.has_value()) {
    result.resource_version = *std::move(list_resource_version_override_);
    list_resource_version_override_.reset();
  }
  const auto& stored = objects_[path.collection];
  for (auto it = after.empty() ? stored.begin() : stored.upper_bound(after); it != stored.end();
       ++it) {
    if (!path.ns.empty() && StringAt(it->second, {"metadata", "namespace"}) != path.ns) continue;
    if (!MatchesLabels(it->second, options.label_selector)) continue;
    if (options.limit > 0 && static_cast<int64_t>(result.items.size()) == options.limit) {
      result.continue_token = absl::StrCat(list_version, "|", std::prev(it)->first);
      break;
    }
    result.items.push_back(YAML::Clone(it->second));
  }
  return result;
}

absl::StatusOr<std::unique_ptr<FakeKubeClient::WatchHandle>> FakeKubeClient::Watch(
    const std::string& collection_path, const WatchOptions& options,
    std::function<void(WatchEvent)> on_event, std::function<void(absl::Status)> on_end) {
  const std::string what = absl::StrCat("WATCH ", collection_path);
  ASSIGN_OR_RETURN(ParsedPath path, ParsePath(collection_path));
  absl::MutexLock lock(&mu_);
  watch_calls_.push_back({collection_path, options});
  RETURN_IF_ERROR(ServedLocked(what, path.collection));
  auto sink = std::make_shared<WatchSink>(std::move(on_event), std::move(on_end));
  const uint64_t id = next_watch_id_++;
  auto handle = std::make_unique<Handle>(*this, id, sink);
  if (!watch_faults_.empty()) {
    absl::Status status = std::move(watch_faults_.front());
    watch_faults_.pop_front();
    sink->End(std::move(status));
    return handle;
  }
  const auto matches = [&path](const std::string& ns) { return path.ns.empty() || path.ns == ns; };
  const std::string selector = options.label_selector;
  const std::string& version = options.resource_version;
  if (version.empty() || version == "0") {
    for (const auto& [key, object] : objects_[path.collection]) {
      if (matches(StringAt(object, {"metadata", "namespace"})) && MatchesLabels(object, selector)) {
        sink->Event({WatchEvent::Type::kAdded, YAML::Clone(object)});
      }
    }
  } else {
    int64_t from = 0;
    if (!absl::SimpleAtoi(version, &from)) {
      sink->End(ApiError(what, Info(400, "BadRequest"), "invalid resource version"));
      return handle;
    }
    if (from < compacted_) {
      sink->Event({WatchEvent::Type::kError,
                   ExpiredStatusObject(
                       absl::StrCat("too old resource version: ", from, " (", compacted_, ")"))});
      sink->End(absl::OkStatus());
      return handle;
    }
    if (from > resource_version_) {
      ApiErrorInfo info = Info(504, "Timeout");
      info.cause = "ResourceVersionTooLarge";
      sink->End(ApiError(what, info, "Too large resource version"));
      return handle;
    }
    for (const Recorded& recorded : history_) {
      if (recorded.resource_version > from && recorded.collection == path.collection &&
          matches(recorded.ns) && MatchesLabels(recorded.event.object, selector)) {
        sink->Event({recorded.event.type, YAML::Clone(recorded.event.object)});
      }
    }
  }
  open_.push_back({id, path.collection, path.ns, sink, selector});
  return handle;
}

absl::Status FakeKubeClient::Delete(const std::string& path) {
  const std::string what = absl::StrCat("DELETE ", path);
  ASSIGN_OR_RETURN(ParsedPath parsed, ParsePath(path));
  if (parsed.rest.size() != 1) {
    return ApiError(what, Info(404, "NotFound"),
                    "the server could not find the requested resource");
  }
  if (!Delete(parsed.collection, parsed.ns, parsed.rest[0])) {
    return ApiError(what, Info(404, "NotFound"),
                    absl::StrCat("\"", parsed.rest[0], "\" not found"));
  }
  return absl::OkStatus();
}

absl::StatusOr<YAML::Node> FakeKubeClient::Get(const std::string& path) {
  const std::string what = absl::StrCat("GET ", path);
  absl::MutexLock lock(&mu_);
  if (!get_faults_.empty()) {
    absl::Status status = std::move(get_faults_.front());
    get_faults_.pop_front();
    return status;
  }
  if (std::optional<absl::StatusOr<YAML::Node>> discovery = DiscoveryLocked(path)) {
    return *std::move(discovery);
  }
  ASSIGN_OR_RETURN(ParsedPath parsed, ParsePath(path));
  RETURN_IF_ERROR(ServedLocked(what, parsed.collection));
  if (parsed.rest.empty() || parsed.rest.size() > 2) {
    return ApiError(what, Info(404, "NotFound"),
                    "the server could not find the requested resource");
  }
  const auto& stored = objects_[parsed.collection];
  const auto it = stored.find(KeyOf(parsed.ns, parsed.rest[0]));
  if (it == stored.end()) {
    return ApiError(what, Info(404, "NotFound"),
                    absl::StrCat("\"", parsed.rest[0], "\" not found"));
  }
  return YAML::Clone(it->second);
}

absl::StatusOr<YAML::Node> FakeKubeClient::Create(const std::string& collection_path,
                                                  const std::string& json) {
  const std::string what = absl::StrCat("POST ", collection_path);
  ASSIGN_OR_RETURN(ParsedPath parsed, ParsePath(collection_path));
  ASSIGN_OR_RETURN(YAML::Node object, ParseDocumentText(json, what));
  const std::string name = StringAt(object, {"metadata", "name"});
  if (name.empty()) return ApiError(what, Info(422, "Invalid"), "metadata.name: Required value");
  const std::string object_ns = StringAt(object, {"metadata", "namespace"});
  if (!object_ns.empty() && !parsed.ns.empty() && object_ns != parsed.ns) {
    return ApiError(what, Info(400, "BadRequest"),
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request");
  }
  if (!parsed.ns.empty()) object["metadata"]["namespace"] = parsed.ns;
  object.remove("status");
  absl::MutexLock lock(&mu_);
  const std::string key = KeyOf(StringAt(object, {"metadata", "namespace"}), name);
  if (objects_[parsed.collection].count(key) > 0) {
    return ApiError(what, Info(409, "AlreadyExists"),
                    absl::StrCat("\"", name, "\" already exists"));
  }
  object["metadata"]["generation"] = 1;
  PutLocked(parsed.collection, object, /*deliver=*/true);
  return YAML::Clone(objects_[parsed.collection][key]);
}

absl::StatusOr<YAML::Node> FakeKubeClient::Update(const std::string& path,
                                                  const std::string& json) {
  const std::string what = absl::StrCat("PUT ", path);
  ASSIGN_OR_RETURN(ParsedPath parsed, ParsePath(path));
  const bool status_only = parsed.rest.size() == 2 && parsed.rest[1] == "status";
  if (parsed.rest.empty() || (parsed.rest.size() == 2 && !status_only) || parsed.rest.size() > 2) {
    return ApiError(what, Info(404, "NotFound"),
                    "the server could not find the requested resource");
  }
  ASSIGN_OR_RETURN(YAML::Node object, ParseDocumentText(json, what));
  absl::MutexLock lock(&mu_);
  const std::string key = KeyOf(parsed.ns, parsed.rest[0]);
  auto& stored = objects_[parsed.collection];
  const auto it = stored.find(key);
  if (it == stored.end()) {
    return ApiError(what, Info(404, "NotFound"),
                    absl::StrCat("\"", parsed.rest[0], "\" not found"));
  }
  const std::string version = ResourceVersionOf(object);
  if (version.empty()) {
    return ApiError(
        what, Info(422, "Invalid"),
        "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update");
  }
  if (version != ResourceVersionOf(it->second)) {
    return ApiError(what, Info(409, "Conflict"),
                    absl::StrCat("Operation cannot be fulfilled on \"", parsed.rest[0],
                                 "\": the object has been modified; please apply your changes to "
                                 "the latest version and try again"));
  }
  const YAML::Node& current = it->second;
  YAML::Node updated;
  if (status_only) {
    updated = YAML::Clone(current);
    const YAML::Node new_status = controller::kube::Field(object, "status");
    if (new_status.IsDefined()) {
      updated["status"] = YAML::Clone(new_status);
    } else {
      updated.remove("status");
    }
  } else {
    updated = YAML::Clone(object);
    updated.remove("status");
    const YAML::Node old_status = controller::kube::Field(current, "status");
    if (old_status.IsDefined()) updated["status"] = YAML::Clone(old_status);
    for (absl::string_view field : {"uid", "creationTimestamp", "namespace"}) {
      const std::string value = StringAt(current, {"metadata", field});
      if (!value.empty()) updated["metadata"][std::string(field)] = value;
    }
    int64_t generation = 1;
    if (!absl::SimpleAtoi(StringAt(current, {"metadata", "generation"}), &generation)) {
      generation = 1;
    }
    if (SpecText(controller::kube::Field(current, "spec")) !=
        SpecText(controller::kube::Field(object, "spec"))) {
      ++generation;
    }
    updated["metadata"]["generation"] = generation;
  }
  PutLocked(parsed.collection, updated, /*deliver=*/true);
  return YAML::Clone(stored[key]);
}

}  // namespace facet::testing
