#include "test/kube_api_server/kube_api.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "test/kube_api_server/admission_webhooks.h"
#include "test/kube_api_server/discovery.h"
#include "test/kube_api_server/names.h"
#include "test/kube_api_server/protobuf_body.h"
#include "test/kube_api_server/selectors.h"
#include "test/kube_api_server/strategic_merge.h"
#include "test/kube_api_server/table.h"

namespace facet::testing {
namespace {

constexpr char kJson[] = "application/json";
constexpr int64_t kDefaultWatchTimeoutSeconds = 1800;
constexpr char kExpiredContinueMessage[] =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.";
constexpr char kPatchNotApplied[] =
    "the server rejected our request due to an error in our request";
// ---- Status errors, with the apiserver's reasons and messages ----

Json Details(const ResourceType& type, const std::string& name, bool kind_is_kind = false) {
  Json details = Json::object();
  if (!name.empty()) details["name"] = name;
  if (!type.group.empty()) details["group"] = type.group;
  details["kind"] = kind_is_kind ? type.kind : type.plural;
  return details;
}

ApiError NotFound(const ResourceType& type, const std::string& name) {
  return {404, "NotFound", absl::StrCat(type.QualifiedResource(), " \"", name, "\" not found"),
          Details(type, name)};
}

ApiError AlreadyExists(const ResourceType& type, const std::string& name) {
  return {409, "AlreadyExists",
          absl::StrCat(type.QualifiedResource(), " \"", name, "\" already exists"),
          Details(type, name)};
}

ApiError Conflict(const ResourceType& type, const std::string& name, absl::string_view why) {
  return {409, "Conflict",
          absl::StrCat("Operation cannot be fulfilled on ", type.QualifiedResource(), " \"", name,
                       "\": ", why),
          Details(type, name)};
}

ApiError Invalid(const ResourceType& type, const std::string& name, const std::string& field,
                 const std::string& detail) {
  Json details = Details(type, name, /*kind_is_kind=*/true);
  Json cause = Json::object();
  cause["reason"] = "FieldValueInvalid";
  cause["message"] = detail;
  cause["field"] = field;
  details["causes"] = Json::array({cause});
  return {422, "Invalid",
          absl::StrCat(type.QualifiedKind(), " \"", name, "\" is invalid: ", field, ": ", detail),
          details};
}

ApiError BadRequest(std::string message) { return {400, "BadRequest", std::move(message), Json()}; }

ApiError Expired(std::string message) { return {410, "Expired", std::move(message), Json()}; }

ApiError ResourceVersionTooLarge(int64_t requested, int64_t current) {
  Json details = Json::object();
  Json cause = Json::object();
  cause["reason"] = "ResourceVersionTooLarge";
  cause["message"] = "Too large resource version";
  details["causes"] = Json::array({cause});
  details["retryAfterSeconds"] = 1;
  return {504, "Timeout",
          absl::StrCat("Timeout: Too large resource version: ", requested, ", current: ", current),
          details};
}

ApiError PageNotFound() {
  Json details = Json::object();
  Json cause = Json::object();
  cause["reason"] = "UnexpectedServerResponse";
  cause["message"] = "404 page not found";
  details["causes"] = Json::array({cause});
  return {404, "NotFound", "the server could not find the requested resource", details};
}

ApiError InjectedFault(int code, int retry_after_seconds) {
  // The reasons and messages the apiserver uses for these codes.
  struct Known {
    int code;
    const char* reason;
    const char* message;
  };
  static constexpr Known kKnown[] = {
      {401, "Unauthorized", "Unauthorized"},
      {403, "Forbidden", "forbidden: injected fault"},
      {409, "Conflict", "conflict: injected fault"},
      {410, "Expired", "too old resource version"},
      {429, "TooManyRequests", "Too many requests, please try again later."},
      {500, "InternalError", "Internal error occurred: injected fault"},
      {503, "ServiceUnavailable", "The server is currently unable to handle the request"},
      {504, "Timeout",
       "The server was unable to return a response in the time allotted, but may still be "
       "processing the request"},
  };
  ApiError error{code, "", "injected fault", Json(), retry_after_seconds};
  if (code == 404) error = PageNotFound();
  for (const Known& known : kKnown) {
    if (known.code == code) {
      error.reason = known.reason;
      error.message = known.message;
    }
  }
  if (retry_after_seconds > 0) {
    if (!error.details.is_object()) error.details = Json::object();
    error.details["retryAfterSeconds"] = retry_after_seconds;
  }
  error.retry_after_seconds = retry_after_seconds;
  return error;
}

Json StatusJson(const ApiError& error) {
  Json status = Json::object();
  status["kind"] = "Status";
  status["apiVersion"] = "v1";
  status["metadata"] = Json::object();
  status["status"] = "Failure";
  status["message"] = error.message;
  if (!error.reason.empty()) status["reason"] = error.reason;
  if (!error.details.is_null()) status["details"] = error.details;
  status["code"] = error.code;
  return status;
}

ApiResponse ErrorResponse(const ApiError& error) { return {error.code, StatusJson(error)}; }

// ---- Small helpers ----

std::string Timestamp(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone());
}

// What a custom resource's generation counts changes of: everything but
// metadata, and but status when status is a subresource.
Json SpecPart(const ResourceType& type, const Json& object) {
  Json copy = object;
  copy.erase("metadata");
  if (type.status_subresource) copy.erase("status");
  return copy;
}

bool IsService(const ResourceType& type) { return type.group.empty() && type.kind == "Service"; }

std::string MediaType(const std::string& content_type) {
  std::string media = content_type.substr(0, content_type.find(';'));
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(media));
}

absl::StatusOr<Json> DecodeBody(const HttpRequest& request) {
  std::string media = MediaType(request.Header("content-type"));
  if (absl::StrContains(media, "yaml")) return ParseYaml(request.body);
  if (media == "application/vnd.kubernetes.protobuf") return DecodeKubernetesProtobuf(request.body);
  return ParseJson(request.body);
}

// Maps a body decoding failure to the apiserver's answer.
ApiResponse BodyError(const absl::Status& status) {
  if (absl::IsUnimplemented(status)) {
    return ErrorResponse({415, "UnsupportedMediaType", std::string(status.message()), Json()});
  }
  return ErrorResponse(BadRequest(std::string(status.message())));
}

std::string EventLine(absl::string_view type, const Json& object) {
  return absl::StrCat("{\"type\":\"", type, "\",\"object\":", Dump(object), "}\n");
}

Json Bookmark(const ResourceType& type, int64_t resource_version, bool initial_events_end) {
  Json bookmark = Json::object();
  bookmark["kind"] = type.kind;
  bookmark["apiVersion"] = type.ApiVersion();
  bookmark["metadata"]["resourceVersion"] = absl::StrCat(resource_version);
  if (initial_events_end) {
    bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"] = "true";
  }
  return bookmark;
}

std::string EncodeContinue(int64_t resource_version, const std::string& start) {
  Json token = Json::object();
  token["v"] = "meta.k8s.io/v1";
  token["rv"] = resource_version;
  token["start"] = start;
  return absl::WebSafeBase64Escape(Dump(token));
}

bool DecodeContinue(const std::string& encoded, int64_t* resource_version, std::string* start) {
  std::string raw;
  if (!absl::WebSafeBase64Unescape(encoded, &raw)) return false;
  auto token = ParseJson(raw);
  if (!token.ok() || GetString(*token, {"v"}) != "meta.k8s.io/v1") return false;
  const Json* rv = Find(*token, "rv");
  const Json* start_json = Find(*token, "start");
  if (rv == nullptr || !rv->is_number_integer() || start_json == nullptr ||
      !start_json->is_string()) {
    return false;
  }
  *resource_version = rv->get<int64_t>();
  *start = start_json->get<std::string>();
  return true;
}

bool WantsTable(const HttpRequest& request) {
  return absl::StrContains(request.Header("accept"), "as=Table");
}

bool WantsAggregatedDiscovery(const HttpRequest& request) {
  return absl::StrContains(request.Header("accept"), "as=APIGroupDiscoveryList");
}

bool IsDryRun(const HttpRequest& request) { return request.Query("dryRun") == "All"; }

Json ListJson(const ResourceType& type, Json items, const std::string& resource_version,
              const std::string& continue_token, std::optional<int64_t> remaining) {
  Json list = Json::object();
  list["apiVersion"] = type.ApiVersion();
  list["kind"] = absl::StrCat(type.kind, "List");
  list["metadata"] = Json::object();
  list["metadata"]["resourceVersion"] = resource_version;
  if (!continue_token.empty()) list["metadata"]["continue"] = continue_token;
  if (remaining.has_value() && *remaining > 0) list["metadata"]["remainingItemCount"] = *remaining;
  list["items"] = std::move(items);
  return list;
}

// The update handler's checks: the body names the object on the URL.
std::optional<ApiError> CheckNameAndNamespace(const ResourceTarget& target, const Json& object) {
  std::string name = GetString(object, {"metadata", "name"});
  if (name != target.name) {
    return BadRequest(absl::StrCat("the name of the object (", name,
                                   ") does not match the name on the URL (", target.name, ")"));
  }
  std::string ns = GetString(object, {"metadata", "namespace"});
  if (target.type->namespaced && !ns.empty() && ns != target.ns) {
    return BadRequest(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  return std::nullopt;
}

std::vector<std::string> ExtraFieldSelectors(const ResourceType& type) {
  if (type.kind == "Namespace") return {"status.phase"};
  return {};
}

}  // namespace

// ---- Target ----

std::string ResourceTarget::Key() const {
  return absl::StrCat(type->group, "/", type->plural, "/", ns, "/", name);
}

std::string ResourceTarget::Prefix() const {
  if (type->namespaced && !ns.empty())
    return absl::StrCat(type->group, "/", type->plural, "/", ns, "/");
  return absl::StrCat(type->group, "/", type->plural, "/");
}

// ---- Construction and test controls ----

KubeApi::KubeApi(Config config)
    : types_(std::move(config.types)),
      bookmark_interval_(config.bookmark_interval),
      service_map_file_(std::move(config.service_map_file)),
      store_(config.watch_history),
      token_(std::move(config.token)),
      random_(std::random_device{}()) {
  absl::MutexLock lock(&mu_);
  for (const std::string& ns : config.namespaces) {
    const ResourceType* type = FindResourceType("", "v1", "namespaces");
    Target target{type, "", ns, "", false};
    Json object = Json::object();
    object["apiVersion"] = "v1";
    object["kind"] = "Namespace";
    object["metadata"]["name"] = ns;
    CreateLocked(target, std::move(object), /*dry_run=*/false);
  }
  // kube-apiserver keeps Service default/kubernetes (its own address).
  if (NamespaceExistsLocked("default")) {
    Target target{FindResourceType("", "v1", "services"), "default", "", "", false};
    CreateLocked(target, KubernetesService(), /*dry_run=*/false);
  }
}

void KubeApi::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
  changed_.SignalAll();
}

void KubeApi::Reopen() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = false;
  changed_.SignalAll();
}

std::string KubeApi::token() const {
  absl::MutexLock lock(&mu_);
  return token_;
}

void KubeApi::SetToken(std::string token) {
  absl::MutexLock lock(&mu_);
  token_ = std::move(token);
}

void KubeApi::DropWatches(bool mid_event) {
  absl::MutexLock lock(&mu_);
  ++drop_epoch_;
  drop_mid_event_ = mid_event;
  changed_.SignalAll();
}

void KubeApi::ExpireWatches() {
  absl::MutexLock lock(&mu_);
  ++expire_epoch_;
  store_.Compact();
  changed_.SignalAll();
}

void KubeApi::CompactHistory() {
  absl::MutexLock lock(&mu_);
  store_.Compact();
  changed_.SignalAll();
}

void KubeApi::FailNextRequests(int count, int http_code, int retry_after_seconds) {
  absl::MutexLock lock(&mu_);
  fail_count_ = count;
  fail_code_ = http_code;
  fail_retry_after_ = retry_after_seconds;
}

void KubeApi::SetLatency(absl::Duration latency) {
  absl::MutexLock lock(&mu_);
  latency_ = latency;
}

void KubeApi::SetChunking(bool split_events, bool coalesce_events) {
  absl::MutexLock lock(&mu_);
  split_events_ = split_events;
  coalesce_events_ = coalesce_events;
}

void KubeApi::SetHang(bool hang) {
  absl::MutexLock lock(&mu_);
  hang_ = hang;
  changed_.SignalAll();
}

void KubeApi::SetServiceAddress(const std::string& ns, const std::string& name, int port,
                                const std::string& address) {
  absl::MutexLock lock(&mu_);
  service_addresses_[absl::StrCat(ns, "/", name, ":", port)] = address;
}

std::optional<std::string> KubeApi::ResolveService(const std::string& ns, const std::string& name,
                                                   int port) const {
  const std::string key = absl::StrCat(ns, "/", name, ":", port);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = service_addresses_.find(key); it != service_addresses_.end()) return it->second;
  }
  if (service_map_file_.empty()) return std::nullopt;
  std::ifstream in(service_map_file_);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (fields.size() == 2 && fields[0] == key) return fields[1];
  }
  return std::nullopt;
}

int64_t KubeApi::resource_version() const {
  absl::MutexLock lock(&mu_);
  return store_.resource_version();
}

int64_t KubeApi::watch_count() const {
  absl::MutexLock lock(&mu_);
  return watch_count_;
}

int64_t KubeApi::list_count() const {
  absl::MutexLock lock(&mu_);
  return list_count_;
}

int64_t KubeApi::open_watch_count() const {
  absl::MutexLock lock(&mu_);
  return open_watches_;
}

bool KubeApi::WaitForCounter(const int64_t* counter, int64_t count,
                             absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  absl::Time deadline = absl::Now() + timeout;
  while (*counter < count) {
    if (changed_.WaitWithDeadline(&mu_, deadline)) return *counter >= count;
  }
  return true;
}

bool KubeApi::WaitForOpenWatches(int64_t count, absl::Duration timeout) const {
  return WaitForCounter(&open_watches_, count, timeout);
}

bool KubeApi::WaitForWatchCount(int64_t count, absl::Duration timeout) const {
  return WaitForCounter(&watch_count_, count, timeout);
}

std::optional<std::string> KubeApi::GetObject(const std::string& api_path) const {
  std::optional<Target> target = ParseResourcePath(api_path);
  if (!target.has_value()) return std::nullopt;
  absl::MutexLock lock(&mu_);
  if (!target->name.empty()) {
    const Json* object = store_.Get(target->Key());
    if (object == nullptr) return std::nullopt;
    return Dump(*object);
  }
  auto objects = store_.ListAt(target->Prefix(), 0);
  Json items = Json::array();
  for (auto& [key, object] : *objects) items.push_back(std::move(object));
  return Dump(ListJson(*target->type, std::move(items), absl::StrCat(store_.resource_version()), "",
                       std::nullopt));
}

absl::Status KubeApi::CreateNamespace(const std::string& name) {
  absl::MutexLock lock(&mu_);
  if (NamespaceExistsLocked(name)) return absl::OkStatus();
  Target target{FindResourceType("", "v1", "namespaces"), "", name, "", false};
  Json object = Json::object();
  object["apiVersion"] = "v1";
  object["kind"] = "Namespace";
  object["metadata"]["name"] = name;
  ApiResponse response = CreateLocked(target, std::move(object), /*dry_run=*/false);
  if (response.code != 201) {
    return absl::InvalidArgumentError(GetString(response.body, {"message"}));
  }
  return absl::OkStatus();
}

// ---- Request entry point ----

void KubeApi::SendJson(HttpResponder& responder, int code, const Json& body,
                       const std::string& content_type) const {
  responder.Send(code, {{"Content-Type", content_type}, {"Cache-Control", "no-cache, private"}},
                 Dump(body));
}

void KubeApi::SendError(HttpResponder& responder, const ApiError& error) const {
  std::vector<std::pair<std::string, std::string>> headers = {
      {"Content-Type", kJson}, {"Cache-Control", "no-cache, private"}};
  if (error.retry_after_seconds > 0) {
    headers.emplace_back("Retry-After", absl::StrCat(error.retry_after_seconds));
  }
  responder.Send(error.code, headers, Dump(StatusJson(error)));
}

void KubeApi::Handle(const HttpRequest& request, HttpResponder& responder) {
  const bool health =
      request.path == "/healthz" || request.path == "/readyz" || request.path == "/livez";
  absl::Duration latency;
  {
    absl::MutexLock lock(&mu_);
    latency = latency_;
  }
  if (latency > absl::ZeroDuration()) absl::SleepFor(latency);
  std::optional<ApiError> fault;
  std::string token;
  {
    absl::MutexLock lock(&mu_);
    while (hang_ && !shutting_down_) changed_.Wait(&mu_);
    if (shutting_down_) {
      responder.Abort();
      return;
    }
    if (!health && fail_count_ > 0) {
      --fail_count_;
      fault = InjectedFault(fail_code_, fail_retry_after_);
    }
    token = token_;
  }
  if (fault.has_value()) {
    SendError(responder, *fault);
    return;
  }
  const bool anonymous_ok = health || request.path == "/version";
  if (!token.empty() && !anonymous_ok) {
    std::string authorization = request.Header("authorization");
    if (authorization != absl::StrCat("Bearer ", token)) {
      SendError(responder, {401, "Unauthorized", "Unauthorized", Json()});
      return;
    }
  }
  Dispatch(request, responder);
}

void KubeApi::Dispatch(const HttpRequest& request, HttpResponder& responder) {
  if (ServeDiscovery(request, responder)) return;
  std::optional<Target> target = ParseResourcePath(request.path);
  if (!target.has_value()) {
    SendError(responder, PageNotFound());
    return;
  }
  ServeResource(request, *target, responder);
}

bool KubeApi::ServeDiscovery(const HttpRequest& request, HttpResponder& responder) {
  const std::string& path = request.path;
  if (path == "/healthz" || path == "/readyz" || path == "/livez") {
    responder.Send(200, {{"Content-Type", "text/plain; charset=utf-8"}}, "ok");
    return true;
  }
  if (request.method != "GET" && request.method != "HEAD") return false;
  const bool aggregated = WantsAggregatedDiscovery(request);
  std::optional<Json> document;
  if (path == "/version") {
    document = VersionJson();
  } else if ((path == "/api" || path == "/apis") && aggregated) {
    SendJson(responder, 200, AggregatedDiscoveryJson(types_, /*core=*/path == "/api"),
             kAggregatedDiscoveryContentType);
    return true;
  } else if (path == "/api") {
    document = ApiVersionsJson(port_.load());
  } else if (path == "/apis") {
    document = ApiGroupListJson(types_);
  } else if (path == "/openapi/v2") {
    const bool protobuf =
        absl::StrContains(request.Header("accept"), kOpenApiV2ProtobufContentType);
    // As kube-openapi answers it: the protobuf as application/octet-stream
    // (the media type asked for is not one Go's mime parser accepts back).
    responder.Send(200,
                   {{"Content-Type", protobuf ? "application/octet-stream" : "application/json"}},
                   OpenApiV2Document(protobuf));
    return true;
  } else if (path == "/openapi/v3") {
    document = OpenApiRootJson(types_);
  } else if (absl::StartsWith(path, "/openapi/v3/")) {
    document = OpenApiGroupVersionJson(types_, path.substr(strlen("/openapi/v3/")));
  } else if (path == "/api/v1") {
    document = ResourceListJson(types_, "v1");
  } else if (absl::StartsWith(path, "/apis/")) {
    std::vector<std::string> parts = absl::StrSplit(path.substr(strlen("/apis/")), '/');
    if (parts.size() == 1) document = ApiGroupJson(types_, parts[0]);
    if (parts.size() == 2) {
      document = ResourceListJson(types_, absl::StrCat(parts[0], "/", parts[1]));
    }
  }
  if (!document.has_value()) return false;
  SendJson(responder, 200, *document);
  return true;
}

std::optional<KubeApi::Target> KubeApi::ParseResourcePath(const std::string& path) const {
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  std::string group;
  std::string version;
  size_t rest = 0;
  if (parts.size() >= 3 && parts[0] == "api") {
    version = parts[1];
    rest = 2;
  } else if (parts.size() >= 4 && parts[0] == "apis") {
    group = parts[1];
    version = parts[2];
    rest = 3;
  } else {
    return std::nullopt;
  }
  Target target;
  std::vector<std::string> segments(parts.begin() + static_cast<std::ptrdiff_t>(rest), parts.end());
  if (!segments.empty() && segments[0] == "watch") {
    target.watch_path = true;
    segments.erase(segments.begin());
  }
  if (segments.empty()) return std::nullopt;
  // Core namespaces: /api/v1/namespaces[/NAME[/status]].
  bool namespaced_form = segments[0] == "namespaces" && segments.size() >= 3 &&
                         !(group.empty() && segments.size() == 3 &&
                           (segments[2] == "status" || segments[2] == "finalize"));
  if (namespaced_form) {
    target.ns = segments[1];
    segments.erase(segments.begin(), segments.begin() + 2);
  }
  target.type = types_.Find(group, version, segments[0]);
  if (target.type == nullptr || segments.size() > 3) return std::nullopt;
  if (namespaced_form != target.type->namespaced &&
      !(target.type->namespaced && segments.size() == 1)) {
    return std::nullopt;
  }
  if (segments.size() >= 2) target.name = segments[1];
  if (segments.size() == 3) {
    if (segments[2] != "status" || !target.type->status_subresource) return std::nullopt;
    target.subresource = segments[2];
  }
  return target;
}

void KubeApi::ServeResource(const HttpRequest& request, const Target& target,
                            HttpResponder& responder) {
  const std::string& method = request.method;
  const bool collection = target.name.empty();
  ApiResponse response;
  if (method == "GET" && collection) {
    std::string watch = request.Query("watch");
    if (target.watch_path || watch == "true" || watch == "1") {
      Watch(request, target, responder);
      return;
    }
    response = List(request, target);
  } else if (method == "GET" && target.watch_path) {
    Target single = target;
    single.name.clear();
    HttpRequest with_selector = request;
    with_selector.query["fieldSelector"] = absl::StrCat("metadata.name=", target.name);
    Watch(with_selector, single, responder);
    return;
  } else if (method == "GET") {
    response = Get(request, target);
  } else if (method == "POST" && collection && target.subresource.empty()) {
    response = Create(request, target);
  } else if (method == "PUT" && !collection) {
    response = Update(request, target);
  } else if (method == "PATCH" && !collection) {
    response = Patch(request, target);
  } else if (method == "DELETE" && !collection && target.subresource.empty()) {
    response = Delete(request, target);
  } else if (method == "DELETE" && collection) {
    response = DeleteCollection(request, target);
  } else {
    response =
        ErrorResponse({405, "MethodNotAllowed",
                       "the server does not allow this method on the requested resource", Json()});
  }
  RecordStatusWrite(request, target, response.code);
  SendJson(responder, response.code, response.body);
}

void KubeApi::RecordStatusWrite(const HttpRequest& request, const Target& target, int code) {
  if (target.subresource != "status" || (request.method != "PUT" && request.method != "PATCH")) {
    return;
  }
  absl::string_view path = request.path;
  absl::ConsumeSuffix(&path, "/status");
  absl::MutexLock lock(&status_log_mu_);
  status_writes_.push_back({absl::Now(), std::string(path), code});
}

std::vector<StatusWrite> KubeApi::status_writes() const {
  absl::MutexLock lock(&status_log_mu_);
  return status_writes_;
}

// ---- Reads ----

ApiResponse KubeApi::Get(const HttpRequest& request, const Target& target) {
  absl::MutexLock lock(&mu_);
  const Json* object = store_.Get(target.Key());
  if (object == nullptr) return ErrorResponse(NotFound(*target.type, target.name));
  if (WantsTable(request)) {
    return {200,
            MakeTable(*target.type, {object}, GetString(*object, {"metadata", "resourceVersion"}),
                      "", request.Query("includeObject"), absl::Now())};
  }
  return {200, *object};
}

ApiResponse KubeApi::List(const HttpRequest& request, const Target& target) {
  auto labels = LabelSelector::Parse(request.Query("labelSelector"));
  if (!labels.ok()) return ErrorResponse(BadRequest(std::string(labels.status().message())));
  auto fields =
      FieldSelector::Parse(request.Query("fieldSelector"), ExtraFieldSelectors(*target.type));
  if (!fields.ok()) return ErrorResponse(BadRequest(std::string(fields.status().message())));
  int64_t limit = 0;
  if (request.HasQuery("limit") && !absl::SimpleAtoi(request.Query("limit"), &limit)) {
    return ErrorResponse(
        BadRequest(absl::StrCat("invalid limit \"", request.Query("limit"), "\"")));
  }
  const std::string rv_param = request.Query("resourceVersion");
  const std::string match = request.Query("resourceVersionMatch");
  const std::string continue_param = request.Query("continue");
  const std::string prefix = target.Prefix();

  absl::MutexLock lock(&mu_);
  ++list_count_;
  const int64_t current = store_.resource_version();
  int64_t list_rv = current;
  std::string start;
  if (!continue_param.empty()) {
    if (!rv_param.empty()) {
      return ErrorResponse(
          BadRequest("specifying resource version is not allowed when using continue"));
    }
    int64_t token_rv;
    if (!DecodeContinue(continue_param, &token_rv, &start)) {
      return ErrorResponse(BadRequest("continue key is not valid: invalid continue token"));
    }
    list_rv = token_rv < 0 ? current : token_rv;
    if (list_rv < store_.compacted_resource_version()) {
      ApiResponse expired = ErrorResponse(Expired(kExpiredContinueMessage));
      // Like the apiserver, offer a token that continues inconsistently at the latest version.
      expired.body["metadata"]["continue"] = EncodeContinue(-1, start);
      return expired;
    }
  } else if (!rv_param.empty()) {
    int64_t requested;
    if (!absl::SimpleAtoi(rv_param, &requested) || requested < 0) {
      return ErrorResponse(Invalid(*target.type, "", "resourceVersion",
                                   absl::StrCat("Invalid value: \"", rv_param, "\"")));
    }
    if (requested > current) return ErrorResponse(ResourceVersionTooLarge(requested, current));
    if (requested == 0) {
      limit = 0;  // The watch cache serves resourceVersion=0 whole, ignoring limit.
    } else if (match == "Exact") {
      list_rv = requested;
    }
  } else if (!match.empty()) {
    return ErrorResponse(
        BadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided"));
  }
  auto snapshot = store_.ListAt(prefix, list_rv == current ? 0 : list_rv);
  if (!snapshot.ok()) {
    if (!continue_param.empty()) return ErrorResponse(Expired(kExpiredContinueMessage));
    return ErrorResponse(Expired(absl::StrCat("too old resource version: ", list_rv, " (",
                                              store_.compacted_resource_version(), ")")));
  }
  std::vector<const Json*> page;
  std::string last_key;
  int64_t remaining = 0;
  bool more = false;
  for (auto it = snapshot->lower_bound(prefix + start); it != snapshot->end(); ++it) {
    if (!labels->Matches(it->second) || !fields->Matches(it->second)) continue;
    if (limit > 0 && static_cast<int64_t>(page.size()) >= limit) {
      more = true;
      ++remaining;
      continue;
    }
    page.push_back(&it->second);
    last_key = it->first;
  }
  std::string next;
  if (more) {
    std::string relative = last_key.substr(prefix.size());
    relative.push_back('\0');
    next = EncodeContinue(list_rv, relative);
  }
  std::optional<int64_t> remaining_count;
  if (more && labels->empty() && fields->empty()) remaining_count = remaining;
  const std::string rv_string = absl::StrCat(list_rv);
  if (WantsTable(request)) {
    Json table =
        MakeTable(*target.type, page, rv_string, next, request.Query("includeObject"), absl::Now());
    if (remaining_count.has_value()) table["metadata"]["remainingItemCount"] = *remaining_count;
    return {200, std::move(table)};
  }
  Json items = Json::array();
  for (const Json* object : page) items.push_back(*object);
  return {200, ListJson(*target.type, std::move(items), rv_string, next, remaining_count)};
}

// ---- Writes ----

bool KubeApi::NamespaceExistsLocked(const std::string& ns) const {
  return store_.Get(absl::StrCat("/namespaces//", ns)) != nullptr;
}

std::string KubeApi::NewUidLocked() {
  uint64_t a = random_();
  uint64_t b = random_();
  return absl::StrFormat(
      "%08x-%04x-4%03x-%04x-%012x", static_cast<uint32_t>(a >> 32),
      static_cast<uint32_t>((a >> 16) & 0xffff), static_cast<uint32_t>(a & 0xfff),
      static_cast<uint32_t>(0x8000 | ((b >> 48) & 0x3fff)), b & 0xffffffffffffULL);
}

ApiResponse KubeApi::CreateLocked(const Target& target, Json object, bool dry_run) {
  const ResourceType& type = *target.type;
  if (!object.is_object()) return ErrorResponse(BadRequest("the request body must be an object"));
  if (GetString(object, {"kind"}).empty()) {
    return ErrorResponse(
        BadRequest(absl::StrCat("Object 'Kind' is missing in '", Dump(object), "'")));
  }
  if (GetString(object, {"kind"}) != type.kind ||
      GetString(object, {"apiVersion"}) != type.ApiVersion()) {
    return ErrorResponse(BadRequest(
        absl::StrCat("the API version in the data (", GetString(object, {"apiVersion"}),
                     ") and kind (", GetString(object, {"kind"}), ") do not match the expected ",
                     type.ApiVersion(), " ", type.kind)));
  }
  Json& metadata = object["metadata"];
  if (!metadata.is_object()) metadata = Json::object();
  std::string ns = GetString(metadata, {"namespace"});
  if (type.namespaced) {
    if (!ns.empty() && ns != target.ns) {
      return ErrorResponse(BadRequest(
          "the namespace of the provided object does not match the namespace sent on the request"));
    }
    metadata["namespace"] = target.ns;
  } else {
    metadata.erase("namespace");
  }
  std::string name = GetString(metadata, {"name"});
  if (name.empty() && !GetString(metadata, {"generateName"}).empty()) {
    static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    name = GetString(metadata, {"generateName"});
    for (int i = 0; i < 5; ++i) name.push_back(kAlphabet[random_() % (sizeof(kAlphabet) - 1)]);
    metadata["name"] = name;
  }
  if (name.empty()) {
    return ErrorResponse(
        Invalid(type, "", "metadata.name", "Required value: name or generateName is required"));
  }
  bool valid_name = type.kind == "Namespace" ? IsDnsLabel(name) : IsDnsSubdomain(name);
  if (!valid_name) {
    return ErrorResponse(Invalid(
        type, name, "metadata.name",
        absl::StrCat("Invalid value: \"", name,
                     "\": ", type.kind == "Namespace" ? kLabelMessage : kSubdomainMessage)));
  }
  if (!target.name.empty() && name != target.name) {
    return ErrorResponse(
        BadRequest(absl::StrCat("the name of the object (", name,
                                ") does not match the name on the URL (", target.name, ")")));
  }
  if (type.namespaced && !NamespaceExistsLocked(target.ns)) {
    const ResourceType* namespaces = FindResourceType("", "v1", "namespaces");
    return ErrorResponse(NotFound(*namespaces, target.ns));
  }
  Target object_target = target;
  object_target.name = name;
  if (store_.Get(object_target.Key()) != nullptr) return ErrorResponse(AlreadyExists(type, name));

  metadata.erase("resourceVersion");
  metadata.erase("deletionTimestamp");
  metadata.erase("deletionGracePeriodSeconds");
  metadata.erase("selfLink");
  metadata["uid"] = NewUidLocked();
  metadata["creationTimestamp"] = Timestamp(absl::Now());
  if (type.custom) {
    metadata["generation"] = 1;
    if (type.status_subresource) object.erase("status");
  } else {
    metadata.erase("generation");
  }
  if (type.kind == "Namespace") {
    Member(metadata["labels"], "kubernetes.io/metadata.name") = name;
    Member(object["spec"], "finalizers") = Json::array({"kubernetes"});
    object["status"] = Json::object();
    object["status"]["phase"] = "Active";
  }
  if (IsService(type)) {
    if (std::optional<FieldError> error =
            PrepareServiceForCreate(object, ServiceAllocationsLocked())) {
      return ErrorResponse(Invalid(type, name, error->field, error->detail));
    }
  }
  if (dry_run) return {201, object};
  const Json& stored = store_.Put(object_target.Key(), std::move(object));
  changed_.SignalAll();
  return {201, stored};
}

ApiResponse KubeApi::UpdateLocked(const Target& target, const Json& current, Json object,
                                  bool dry_run) {
  const ResourceType& type = *target.type;
  if (!object.is_object()) return ErrorResponse(BadRequest("the request body must be an object"));
  if (GetString(object, {"kind"}) != type.kind ||
      GetString(object, {"apiVersion"}) != type.ApiVersion()) {
    return ErrorResponse(BadRequest(
        absl::StrCat("the API version in the data (", GetString(object, {"apiVersion"}),
                     ") and kind (", GetString(object, {"kind"}), ") do not match the expected ",
                     type.ApiVersion(), " ", type.kind)));
  }
  if (std::optional<ApiError> error = CheckNameAndNamespace(target, object); error.has_value()) {
    return ErrorResponse(*error);
  }
  const std::string current_rv = GetString(current, {"metadata", "resourceVersion"});
  const std::string requested_rv = GetString(object, {"metadata", "resourceVersion"});
  if (requested_rv.empty()) {
    if (!type.allow_unconditional_update) {
      return ErrorResponse(Invalid(type, target.name, "metadata.resourceVersion",
                                   "Invalid value: 0x0: must be specified for an update"));
    }
  } else if (requested_rv != current_rv) {
    return ErrorResponse(Conflict(type, target.name,
                                  "the object has been modified; please apply your changes to "
                                  "the latest version and try again"));
  }
  const std::string uid = GetString(object, {"metadata", "uid"});
  if (!uid.empty() && uid != GetString(current, {"metadata", "uid"})) {
    return ErrorResponse(
        Conflict(type, target.name,
                 absl::StrCat("Precondition failed: UID in precondition: ", uid,
                              ", UID in object meta: ", GetString(current, {"metadata", "uid"}))));
  }
  Json result;
  if (target.subresource == "status") {
    // The status strategy: everything but status comes from the stored object.
    result = current;
    if (const Json* status = Find(object, "status"); status != nullptr) {
      result["status"] = *status;
    } else {
      result.erase("status");
    }
  } else {
    result = std::move(object);
    Json& metadata = result["metadata"];
    if (!metadata.is_object()) metadata = Json::object();
    const Json& old_metadata = *Find(current, "metadata");
    for (const char* field : {"uid", "creationTimestamp", "generation", "deletionTimestamp",
                              "deletionGracePeriodSeconds", "namespace", "resourceVersion"}) {
      if (const Json* value = Find(old_metadata, field); value != nullptr) {
        metadata[field] = *value;
      } else {
        metadata.erase(field);
      }
    }
    metadata.erase("selfLink");
    if (type.status_subresource) {
      if (const Json* status = Find(current, "status"); status != nullptr) {
        result["status"] = *status;
      } else {
        result.erase("status");
      }
    }
    if (IsService(type)) {
      if (std::optional<FieldError> error =
              PrepareServiceForUpdate(current, result, ServiceAllocationsLocked())) {
        return ErrorResponse(Invalid(type, target.name, error->field, error->detail));
      }
    }
    if (type.custom && SpecPart(type, result) != SpecPart(type, current)) {
      const Json* generation = Find(old_metadata, "generation");
      metadata["generation"] =
          (generation != nullptr && generation->is_number_integer() ? generation->get<int64_t>()
                                                                    : 0) +
          1;
    }
  }
  if (result == current) return {200, current};  // No-op: no new resourceVersion, no event.
  if (dry_run) return {200, result};
  const Json* finalizers = FindPath(result, {"metadata", "finalizers"});
  bool no_finalizers = finalizers == nullptr || !finalizers->is_array() || finalizers->empty();
  if (FindPath(result, {"metadata", "deletionTimestamp"}) != nullptr && no_finalizers) {
    // The last finalizer is gone: the pending deletion completes.
    Json deleted = store_.Remove(target.Key());
    changed_.SignalAll();
    return {200, deleted};
  }
  const Json& stored = store_.Put(target.Key(), std::move(result));
  changed_.SignalAll();
  return {200, stored};
}

ServiceAllocations KubeApi::ServiceAllocationsLocked() const {
  ServiceAllocations allocations;
  Target all{FindResourceType("", "v1", "services"), "", "", "", false};
  auto services = store_.ListAt(all.Prefix(), 0);
  for (const auto& [key, service] : *services) allocations.Add(service);
  return allocations;
}

// ---- Validating admission webhooks ----

ApiResponse KubeApi::WriteAdmitted(const Target& target, bool is_delete, bool dry_run,
                                   absl::FunctionRef<ApiResponse(bool dry_run)> write) {
  const ResourceType* webhook_type =
      FindResourceType("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations");
  const std::string webhook_prefix = Target{webhook_type, "", "", "", false}.Prefix();
  // Retries when the object changes while its webhooks run (as the apiserver's
  // GuaranteedUpdate re-runs admission on a conflict).
  constexpr int kAttempts = 5;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    AdmissionAttributes attributes;
    std::vector<MatchedWebhook> webhooks;
    ApiResponse preview;
    Target object_target = target;
    std::string seen_version;  // The stored object's resourceVersion ("" when absent).
    {
      absl::MutexLock lock(&mu_);
      auto stored_configurations = store_.ListAt(webhook_prefix, 0);
      if (stored_configurations->empty()) return write(dry_run);
      preview = write(/*dry_run=*/true);
      if (preview.code >= 300) return preview;
      if (object_target.name.empty()) {
        object_target.name = GetString(preview.body, {"metadata", "name"});
      }
      const Json* stored = store_.Get(object_target.Key());
      if (stored != nullptr) seen_version = GetString(*stored, {"metadata", "resourceVersion"});
      attributes.operation = is_delete ? "DELETE" : preview.code == 201 ? "CREATE" : "UPDATE";
      attributes.type = target.type;
      attributes.ns = target.ns;
      attributes.name = object_target.name;
      attributes.subresource = target.subresource;
      if (!is_delete) attributes.object = preview.body;
      if (stored != nullptr && attributes.operation != "CREATE") attributes.old_object = *stored;
      if (target.type->group.empty() && target.type->plural == "namespaces") {
        attributes.namespace_object =
            attributes.object.is_null() ? attributes.old_object : attributes.object;
      } else if (target.type->namespaced) {
        const Json* ns = store_.Get(absl::StrCat("/namespaces//", target.ns));
        attributes.namespace_object = ns != nullptr ? *ns : Json::object();
      }
      attributes.dry_run = dry_run;
      std::vector<Json> configurations;
      for (auto& [key, configuration] : *stored_configurations) {
        configurations.push_back(std::move(configuration));
      }
      webhooks = MatchingWebhooks(configurations, attributes);
      if (webhooks.empty()) return write(dry_run);
    }
    std::optional<AdmissionRejection> rejection = CallWebhooks(
        webhooks, attributes, [this](const std::string& ns, const std::string& name, int port) {
          return ResolveService(ns, name, port);
        });
    if (rejection.has_value()) {
      return ErrorResponse(
          {rejection->code, rejection->reason, rejection->message, rejection->details});
    }
    if (dry_run) return preview;
    absl::MutexLock lock(&mu_);
    const Json* stored = store_.Get(object_target.Key());
    if ((stored == nullptr ? "" : GetString(*stored, {"metadata", "resourceVersion"})) !=
        seen_version) {
      continue;
    }
    if (attributes.operation != "CREATE") return write(/*dry_run=*/false);
    // Store the object the webhooks saw (same uid and creationTimestamp).
    if (target.type->namespaced && !NamespaceExistsLocked(target.ns)) continue;
    const Json& created = store_.Put(object_target.Key(), std::move(preview.body));
    changed_.SignalAll();
    return {201, created};
  }
  return ErrorResponse(Conflict(*target.type, target.name,
                                "the object has been modified; please apply your changes to the "
                                "latest version and try again"));
}

// ---- Write verbs ----

ApiResponse KubeApi::Create(const HttpRequest& request, const Target& target) {
  auto body = DecodeBody(request);
  if (!body.ok()) return BodyError(body.status());
  return WriteAdmitted(target, /*is_delete=*/false, IsDryRun(request),
                       [&](bool dry_run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                         return CreateLocked(target, *body, dry_run);
                       });
}

ApiResponse KubeApi::Update(const HttpRequest& request, const Target& target) {
  auto body = DecodeBody(request);
  if (!body.ok()) return BodyError(body.status());
  // As the apiserver's handler does, before looking at storage.
  if (std::optional<ApiError> error = CheckNameAndNamespace(target, *body); error.has_value()) {
    return ErrorResponse(*error);
  }
  // Runs with mu_ held (inside WriteAdmitted).
  auto write = [&](bool dry_run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const Json* current = store_.Get(target.Key());
    if (current == nullptr) {
      if (!target.type->allow_create_on_update || !target.subresource.empty() ||
          !GetString(*body, {"metadata", "resourceVersion"}).empty()) {
        return ErrorResponse(NotFound(*target.type, target.name));
      }
      return CreateLocked(target, *body, dry_run);
    }
    return UpdateLocked(target, Json(*current), *body, dry_run);
  };
  return WriteAdmitted(target, /*is_delete=*/false, IsDryRun(request), write);
}

ApiResponse KubeApi::Patch(const HttpRequest& request, const Target& target) {
  const ResourceType& type = *target.type;
  const std::string media = MediaType(request.Header("content-type"));
  const bool apply = media == "application/apply-patch+yaml";
  const bool strategic = media == "application/strategic-merge-patch+json";
  if (media != "application/json-patch+json" && media != "application/merge-patch+json" && !apply &&
      !(strategic && !type.custom)) {
    std::string accepted = "application/json-patch+json, application/merge-patch+json";
    if (!type.custom) absl::StrAppend(&accepted, ", application/strategic-merge-patch+json");
    absl::StrAppend(&accepted, ", application/apply-patch+yaml");
    return ErrorResponse({415, "UnsupportedMediaType",
                          absl::StrCat("the body of the request was in an unknown format - "
                                       "accepted media types include: ",
                                       accepted),
                          Json()});
  }
  const std::string force = request.Query("force");
  if (apply && request.Query("fieldManager").empty()) {
    ApiError error =
        Invalid(type, target.name, "fieldManager", "Required value: is required for apply patch");
    error.message =
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is "
        "required for apply patch";
    return ErrorResponse(error);
  }
  if (!apply && !force.empty()) {
    ApiError error =
        Invalid(type, target.name, "force", "Forbidden: may not be specified for non-apply patch");
    error.message =
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be "
        "specified for non-apply patch";
    return ErrorResponse(error);
  }
  auto patch = apply ? ParseYaml(request.body) : ParseJson(request.body);
  if (!patch.ok()) return ErrorResponse(BadRequest(std::string(patch.status().message())));
  // Runs with mu_ held (inside WriteAdmitted).
  auto write = [&](bool dry_run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> ApiResponse {
    const Json* stored = store_.Get(target.Key());
    if (stored == nullptr) {
      if (!apply || !target.subresource.empty()) return ErrorResponse(NotFound(type, target.name));
      Json object = *patch;
      if (object.is_object() && GetString(object, {"metadata", "name"}).empty()) {
        Member(object["metadata"], "name") = target.name;
      }
      return CreateLocked(target, std::move(object), dry_run);
    }
    Json current = *stored;
    Json patched;
    if (media == "application/json-patch+json") {
      auto result = ApplyJsonPatch(current, *patch);
      if (!result.ok()) {
        if (absl::IsInvalidArgument(result.status())) {
          return ErrorResponse(BadRequest(std::string(result.status().message())));
        }
        // The apiserver answers NewGenericServerResponse(422): the cause is not told.
        return ErrorResponse({422, "Invalid", kPatchNotApplied, Json::object()});
      }
      patched = *std::move(result);
    } else if (strategic) {
      auto result = ApplyStrategicMergePatch(current, *patch, type.merge_keys);
      if (!result.ok()) return ErrorResponse(BadRequest(std::string(result.status().message())));
      patched = *std::move(result);
    } else {
      if (!patch->is_object()) {
        return ErrorResponse(BadRequest("the patch must be a JSON object"));
      }
      patched = current;
      patched.merge_patch(*patch);
    }
    if (patched.is_object() && GetString(patched, {"metadata", "resourceVersion"}).empty()) {
      Member(patched["metadata"], "resourceVersion") =
          GetString(current, {"metadata", "resourceVersion"});
    }
    return UpdateLocked(target, current, std::move(patched), dry_run);
  };
  return WriteAdmitted(target, /*is_delete=*/false, IsDryRun(request), write);
}

void KubeApi::DeleteNamespaceContentsLocked(const std::string& ns) {
  for (const ResourceType& type : AllResourceTypes()) {
    if (!type.namespaced) continue;
    Target target{&type, ns, "", "", false};
    auto objects = store_.ListAt(target.Prefix(), 0);
    for (const auto& [key, object] : *objects) store_.Remove(key);
  }
}

void KubeApi::CollectDependentsLocked(const std::string& uid, const std::string& ns) {
  // The garbage collector's background cascade, done at once: every object
  // whose ownerReferences name a deleted uid goes too (namespaced dependents
  // live in their owner's namespace), and so on down.
  std::vector<std::pair<std::string, std::string>> owners = {{uid, ns}};
  while (!owners.empty()) {
    const auto [owner_uid, owner_ns] = owners.back();
    owners.pop_back();
    for (const ResourceType& type : AllResourceTypes()) {
      if (!type.namespaced) continue;
      Target scope{&type, owner_ns, "", "", false};
      auto objects = store_.ListAt(scope.Prefix(), 0);
      for (const auto& [key, object] : *objects) {
        const Json* references = FindPath(object, {"metadata", "ownerReferences"});
        if (references == nullptr || !references->is_array()) continue;
        for (const Json& reference : *references) {
          if (GetString(reference, {"uid"}) != owner_uid) continue;
          owners.emplace_back(GetString(object, {"metadata", "uid"}),
                              GetString(object, {"metadata", "namespace"}));
          store_.Remove(key);
          break;
        }
      }
    }
  }
}

ApiResponse KubeApi::Delete(const HttpRequest& request, const Target& target) {
  const ResourceType& type = *target.type;
  Json options = Json::object();
  if (!absl::StripAsciiWhitespace(request.body).empty()) {
    auto parsed = ParseJson(request.body);
    if (!parsed.ok()) return ErrorResponse(BadRequest(std::string(parsed.status().message())));
    options = *std::move(parsed);
  }
  // DeleteOptions.dryRun is a list (["All"]); the query parameter works too.
  const Json* dry_run_option = Find(options, "dryRun");
  const bool dry_run_requested =
      IsDryRun(request) || (dry_run_option != nullptr && Dump(*dry_run_option) == R"(["All"])");
  // Runs with mu_ held (inside WriteAdmitted).
  auto write = [&](bool dry_run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> ApiResponse {
    const Json* stored = store_.Get(target.Key());
    if (stored == nullptr) return ErrorResponse(NotFound(type, target.name));
    Json current = *stored;
    const std::string precondition_rv = GetString(options, {"preconditions", "resourceVersion"});
    const std::string precondition_uid = GetString(options, {"preconditions", "uid"});
    const std::string current_rv = GetString(current, {"metadata", "resourceVersion"});
    const std::string current_uid = GetString(current, {"metadata", "uid"});
    if (!precondition_rv.empty() && precondition_rv != current_rv) {
      return ErrorResponse(
          Conflict(type, target.name,
                   absl::StrCat("the ResourceVersion in the precondition (", precondition_rv,
                                ") does not match the ResourceVersion in record (", current_rv,
                                "). The object might have been modified")));
    }
    if (!precondition_uid.empty() && precondition_uid != current_uid) {
      return ErrorResponse(
          Conflict(type, target.name,
                   absl::StrCat("Precondition failed: UID in precondition: ", precondition_uid,
                                ", UID in object meta: ", current_uid)));
    }
    if (dry_run) return {200, current};
    if (type.kind == "Namespace") {
      DeleteNamespaceContentsLocked(target.name);
      Json deleted = store_.Remove(target.Key());
      changed_.SignalAll();
      deleted["metadata"]["deletionTimestamp"] = Timestamp(absl::Now());
      Member(deleted["status"], "phase") = "Terminating";
      return {200, deleted};
    }
    const Json* finalizers = FindPath(current, {"metadata", "finalizers"});
    if (finalizers != nullptr && finalizers->is_array() && !finalizers->empty()) {
      // Graceful deletion: mark and wait for the finalizers to be removed.
      if (FindPath(current, {"metadata", "deletionTimestamp"}) != nullptr) return {202, current};
      Json& metadata = current["metadata"];
      metadata["deletionTimestamp"] = Timestamp(absl::Now());
      metadata["deletionGracePeriodSeconds"] = 0;
      if (const Json* generation = Find(metadata, "generation"); generation != nullptr &&
                                                                 generation->is_number_integer() &&
                                                                 generation->get<int64_t>() > 0) {
        metadata["generation"] = generation->get<int64_t>() + 1;
      }
      const Json& marked = store_.Put(target.Key(), std::move(current));
      changed_.SignalAll();
      return {202, marked};
    }
    store_.Remove(target.Key());
    CollectDependentsLocked(current_uid, target.ns);
    changed_.SignalAll();
    Json status = Json::object();
    status["kind"] = "Status";
    status["apiVersion"] = "v1";
    status["metadata"] = Json::object();
    status["status"] = "Success";
    Json details = Details(type, target.name);
    details["uid"] = current_uid;
    status["details"] = details;
    return {200, status};
  };
  return WriteAdmitted(target, /*is_delete=*/true, dry_run_requested, write);
}

ApiResponse KubeApi::DeleteCollection(const HttpRequest& request, const Target& target) {
  auto labels = LabelSelector::Parse(request.Query("labelSelector"));
  if (!labels.ok()) return ErrorResponse(BadRequest(std::string(labels.status().message())));
  auto fields =
      FieldSelector::Parse(request.Query("fieldSelector"), ExtraFieldSelectors(*target.type));
  if (!fields.ok()) return ErrorResponse(BadRequest(std::string(fields.status().message())));
  absl::MutexLock lock(&mu_);
  auto objects = store_.ListAt(target.Prefix(), 0);
  Json deleted = Json::array();
  for (const auto& [key, object] : *objects) {
    if (!labels->Matches(object) || !fields->Matches(object)) continue;
    if (!IsDryRun(request)) deleted.push_back(store_.Remove(key));
  }
  changed_.SignalAll();
  return {200, ListJson(*target.type, std::move(deleted), absl::StrCat(store_.resource_version()),
                        "", std::nullopt)};
}

// ---- Watch ----

void KubeApi::Watch(const HttpRequest& request, const Target& target, HttpResponder& responder) {
  const ResourceType& type = *target.type;
  auto labels = LabelSelector::Parse(request.Query("labelSelector"));
  if (!labels.ok()) {
    SendError(responder, BadRequest(std::string(labels.status().message())));
    return;
  }
  auto fields = FieldSelector::Parse(request.Query("fieldSelector"), ExtraFieldSelectors(type));
  if (!fields.ok()) {
    SendError(responder, BadRequest(std::string(fields.status().message())));
    return;
  }
  int64_t timeout_seconds = kDefaultWatchTimeoutSeconds;
  if (request.HasQuery("timeoutSeconds") &&
      (!absl::SimpleAtoi(request.Query("timeoutSeconds"), &timeout_seconds) ||
       timeout_seconds < 0)) {
    SendError(responder, BadRequest("invalid timeoutSeconds"));
    return;
  }
  if (timeout_seconds == 0) timeout_seconds = kDefaultWatchTimeoutSeconds;
  const std::string rv_param = request.Query("resourceVersion");
  int64_t start_rv = 0;
  if (!rv_param.empty() && (!absl::SimpleAtoi(rv_param, &start_rv) || start_rv < 0)) {
    SendError(responder, Invalid(type, "", "resourceVersion",
                                 absl::StrCat("Invalid value: \"", rv_param, "\"")));
    return;
  }
  const bool bookmarks =
      request.Query("allowWatchBookmarks") == "true" || request.Query("allowWatchBookmarks") == "1";
  const bool send_initial_events = request.Query("sendInitialEvents") == "true";
  if (send_initial_events &&
      (!bookmarks || request.Query("resourceVersionMatch") != "NotOlderThan")) {
    SendError(responder, Invalid(type, "", "sendInitialEvents",
                                 "Forbidden: sendInitialEvents requires allowWatchBookmarks=true "
                                 "and resourceVersionMatch=NotOlderThan"));
    return;
  }
  const std::string prefix = target.Prefix();
  const absl::Time deadline = absl::Now() + absl::Seconds(timeout_seconds);

  // Turns one stored event into the lines this watch sends (selectors may turn
  // a MODIFIED into ADDED or DELETED, as the apiserver's cacher does).
  auto convert = [&](const StoredEvent& event, std::vector<std::string>* lines) {
    if (!absl::StartsWith(event.key, prefix)) return;
    auto matches = [&](const Json& object) {
      return labels->Matches(object) && fields->Matches(object);
    };
    switch (event.type) {
      case EventType::kAdded:
        if (matches(event.object)) lines->push_back(EventLine("ADDED", event.object));
        break;
      case EventType::kDeleted:
        if (matches(event.object)) lines->push_back(EventLine("DELETED", event.object));
        break;
      case EventType::kModified: {
        bool now_matches = matches(event.object);
        bool matched = event.previous.has_value() && matches(*event.previous);
        if (now_matches && matched) lines->push_back(EventLine("MODIFIED", event.object));
        if (now_matches && !matched) lines->push_back(EventLine("ADDED", event.object));
        if (!now_matches && matched) lines->push_back(EventLine("DELETED", event.object));
        break;
      }
    }
  };

  std::vector<std::string> lines;
  int64_t cursor = 0;
  std::optional<std::string> too_old;
  int64_t my_drop_epoch;
  int64_t my_expire_epoch;
  {
    absl::MutexLock lock(&mu_);
    ++watch_count_;
    ++open_watches_;
    changed_.SignalAll();
    my_drop_epoch = drop_epoch_;
    my_expire_epoch = expire_epoch_;
    if (rv_param.empty() || start_rv == 0 || send_initial_events) {
      // Synthetic ADDED events for the current state, in key order.
      cursor = store_.resource_version();
      auto objects = store_.ListAt(prefix, 0);
      for (const auto& [key, object] : *objects) {
        if (labels->Matches(object) && fields->Matches(object)) {
          lines.push_back(EventLine("ADDED", object));
        }
      }
      if (send_initial_events) {
        lines.push_back(EventLine("BOOKMARK", Bookmark(type, cursor, /*initial_events_end=*/true)));
      }
    } else if (start_rv < store_.compacted_resource_version()) {
      too_old = absl::StrCat("too old resource version: ", start_rv, " (",
                             store_.compacted_resource_version(), ")");
    } else {
      cursor = start_rv;
    }
  }
  struct OpenWatch {
    KubeApi* api;
    ~OpenWatch() {
      absl::MutexLock lock(&api->mu_);
      --api->open_watches_;
      api->changed_.SignalAll();
    }
  } open_watch{this};

  auto write_lines = [&](const std::vector<std::string>& batch, bool split, bool coalesce) {
    std::vector<std::string> chunks;
    if (coalesce && !batch.empty()) {
      chunks.push_back(absl::StrJoin(batch, ""));
    } else {
      chunks = batch;
    }
    for (const std::string& chunk : chunks) {
      if (split && chunk.size() > 1) {
        size_t half = chunk.size() / 2;
        if (!responder.WriteChunk(absl::string_view(chunk).substr(0, half)) ||
            !responder.WriteChunk(absl::string_view(chunk).substr(half))) {
          return false;
        }
      } else if (!responder.WriteChunk(chunk)) {
        return false;
      }
    }
    return true;
  };
  auto expire_line = [](const std::string& message) {
    return EventLine("ERROR", StatusJson(Expired(message)));
  };

  if (!responder.StartStream(200,
                             {{"Content-Type", kJson}, {"Cache-Control", "no-cache, private"}})) {
    return;
  }
  bool split;
  bool coalesce;
  {
    absl::MutexLock lock(&mu_);
    split = split_events_;
    coalesce = coalesce_events_;
  }
  if (too_old.has_value()) {
    responder.WriteChunk(expire_line(*too_old));
    responder.FinishStream();
    return;
  }
  if (!write_lines(lines, split, coalesce)) return;

  absl::Time next_bookmark = absl::Now() + bookmark_interval_;
  enum class Action { kNone, kAbort, kAbortMidEvent, kExpire, kTimeout };
  while (true) {
    Action action = Action::kNone;
    std::string expire_message;
    lines.clear();
    {
      absl::MutexLock lock(&mu_);
      absl::Time wake = std::min(deadline, absl::Now() + absl::Milliseconds(200));
      if (bookmarks) wake = std::min(wake, next_bookmark);
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return shutting_down_ || drop_epoch_ != my_drop_epoch || expire_epoch_ != my_expire_epoch ||
               (!hang_ && store_.resource_version() > cursor);
      };
      while (!ready() && absl::Now() < wake) changed_.WaitWithDeadline(&mu_, wake);
      split = split_events_;
      coalesce = coalesce_events_;
      if (shutting_down_) {
        action = Action::kAbort;
      } else if (drop_epoch_ != my_drop_epoch) {
        action = drop_mid_event_ ? Action::kAbortMidEvent : Action::kAbort;
      } else if (expire_epoch_ != my_expire_epoch) {
        action = Action::kExpire;
        expire_message = absl::StrCat("too old resource version: ", cursor, " (",
                                      store_.compacted_resource_version(), ")");
      } else if (!hang_) {
        if (store_.resource_version() > cursor) {
          if (cursor < store_.compacted_resource_version()) {
            action = Action::kExpire;
            expire_message = absl::StrCat("too old resource version: ", cursor, " (",
                                          store_.compacted_resource_version(), ")");
          } else {
            for (const StoredEvent& event : store_.EventsAfter(cursor)) convert(event, &lines);
            cursor = store_.resource_version();
          }
        }
        const absl::Time now = absl::Now();
        if (action == Action::kNone && now >= deadline) {
          if (bookmarks) {
            lines.push_back(EventLine("BOOKMARK", Bookmark(type, cursor, false)));
          }
          action = Action::kTimeout;
        } else if (action == Action::kNone && bookmarks && now >= next_bookmark) {
          lines.push_back(EventLine("BOOKMARK", Bookmark(type, cursor, false)));
          next_bookmark = now + bookmark_interval_;
        }
      }
    }
    switch (action) {
      case Action::kAbort:
        responder.Abort();
        return;
      case Action::kAbortMidEvent: {
        std::string partial = EventLine("MODIFIED", Bookmark(type, cursor, false));
        responder.WriteChunk(absl::string_view(partial).substr(0, partial.size() / 2));
        responder.Abort();
        return;
      }
      case Action::kExpire:
        if (write_lines(lines, split, coalesce)) {
          responder.WriteChunk(expire_line(expire_message));
          responder.FinishStream();
        }
        return;
      case Action::kTimeout:
        if (write_lines(lines, split, coalesce)) responder.FinishStream();
        return;
      case Action::kNone:
        if (!write_lines(lines, split, coalesce)) return;
        if (responder.PeerClosed()) {
          responder.CloseAfterResponse();
          return;
        }
        break;
    }
  }
}

}  // namespace facet::testing
