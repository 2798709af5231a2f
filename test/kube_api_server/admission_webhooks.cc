#include "test/kube_api_server/admission_webhooks.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "test/kube_api_server/selectors.h"

namespace facet::testing {
namespace {

// admissionregistration.k8s.io/v1 defaults.
constexpr int kDefaultTimeoutSeconds = 10;
constexpr int kDefaultServicePort = 443;

bool ListAllows(const Json* list, const std::string& value) {
  if (list == nullptr || !list->is_array()) return false;
  for (const Json& item : *list) {
    if (item.is_string() && (item.get<std::string>() == "*" || item.get<std::string>() == value)) {
      return true;
    }
  }
  return false;
}

// The apiserver's rule matcher (webhook/predicates/rules): operations,
// apiGroups, apiVersions, resources ("*", "*/*", "res/sub") and scope.
bool RuleMatches(const Json& rule, const AdmissionAttributes& attributes) {
  const ResourceType& type = *attributes.type;
  if (!ListAllows(Find(rule, "operations"), attributes.operation) ||
      !ListAllows(Find(rule, "apiGroups"), type.group) ||
      !ListAllows(Find(rule, "apiVersions"), type.version)) {
    return false;
  }
  bool resource_matches = false;
  if (const Json* resources = Find(rule, "resources");
      resources != nullptr && resources->is_array()) {
    for (const Json& item : *resources) {
      if (!item.is_string()) continue;
      const std::string& entry = item.get<std::string>();
      const size_t slash = entry.find('/');
      const std::string resource = entry.substr(0, slash);
      const std::string sub = slash == std::string::npos ? "" : entry.substr(slash + 1);
      if ((resource == "*" || resource == type.plural) &&
          (sub == "*" || sub == attributes.subresource)) {
        resource_matches = true;
      }
    }
  }
  if (!resource_matches) return false;
  const std::string scope = GetString(rule, {"scope"});
  const bool is_namespace = type.group.empty() && type.plural == "namespaces";
  if (scope == "Namespaced") return !is_namespace && !attributes.ns.empty();
  if (scope == "Cluster") return is_namespace || attributes.ns.empty();
  return true;  // "*" or unset.
}

bool SelectorMatches(const Json* selector, const Json& object) {
  absl::StatusOr<LabelSelector> parsed = LabelSelector::FromJson(selector ? *selector : Json());
  return parsed.ok() && parsed->Matches(object);
}

bool WebhookMatches(const Json& webhook, const AdmissionAttributes& attributes) {
  const Json* rules = Find(webhook, "rules");
  if (rules == nullptr || !rules->is_array()) return false;
  if (std::none_of(rules->begin(), rules->end(),
                   [&](const Json& rule) { return RuleMatches(rule, attributes); })) {
    return false;
  }
  // Cluster-scoped objects (but Namespaces) are not subject to namespaceSelector.
  if (!attributes.namespace_object.is_null() &&
      !SelectorMatches(Find(webhook, "namespaceSelector"), attributes.namespace_object)) {
    return false;
  }
  // objectSelector matches when the new or the old object does.
  const Json* object_selector = Find(webhook, "objectSelector");
  return (!attributes.object.is_null() && SelectorMatches(object_selector, attributes.object)) ||
         (!attributes.old_object.is_null() &&
          SelectorMatches(object_selector, attributes.old_object));
}

std::string NewUid() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  const uint64_t a = random();
  const uint64_t b = random();
  return absl::StrFormat(
      "%08x-%04x-4%03x-%04x-%012x", static_cast<uint32_t>(a >> 32),
      static_cast<uint32_t>((a >> 16) & 0xffff), static_cast<uint32_t>(a & 0xfff),
      static_cast<uint32_t>(0x8000 | ((b >> 48) & 0x3fff)), b & 0xffffffffffffULL);
}

Json GroupVersion(const ResourceType& type, const char* last_key, const std::string& last) {
  Json value = Json::object();
  value["group"] = type.group;
  value["version"] = type.version;
  value[last_key] = last;
  return value;
}

// The AdmissionReview v1 request the apiserver sends for `attributes`.
Json AdmissionReview(const std::string& uid, const AdmissionAttributes& attributes) {
  const ResourceType& type = *attributes.type;
  Json request = Json::object();
  request["uid"] = uid;
  request["kind"] = GroupVersion(type, "kind", type.kind);
  request["resource"] = GroupVersion(type, "resource", type.plural);
  request["requestKind"] = request["kind"];
  request["requestResource"] = request["resource"];
  if (!attributes.subresource.empty()) {
    request["subResource"] = attributes.subresource;
    request["requestSubResource"] = attributes.subresource;
  }
  request["name"] = attributes.name;
  if (!attributes.ns.empty()) request["namespace"] = attributes.ns;
  request["operation"] = attributes.operation;
  request["userInfo"]["username"] = "facet-test";
  request["userInfo"]["groups"] = Json::array({"system:masters", "system:authenticated"});
  request["object"] = attributes.object;
  request["oldObject"] = attributes.old_object;
  request["dryRun"] = attributes.dry_run;
  const char* options = attributes.operation == "CREATE"   ? "CreateOptions"
                        : attributes.operation == "UPDATE" ? "UpdateOptions"
                                                           : "DeleteOptions";
  request["options"]["kind"] = options;
  request["options"]["apiVersion"] = "meta.k8s.io/v1";
  Json review = Json::object();
  review["apiVersion"] = "admission.k8s.io/v1";
  review["kind"] = "AdmissionReview";
  review["request"] = std::move(request);
  return review;
}

// Where and how to reach one webhook.
struct Endpoint {
  std::string url;          // As the apiserver prints it in errors.
  std::string server_name;  // TLS server name (SNI and verification).
  std::string connect_host;
  int connect_port = 0;
  std::string path;
};

// Resolves clientConfig (url, or service through `resolve_service`) into
// `endpoint`; on failure returns why the webhook cannot be called (with
// endpoint->url set when known).
absl::Status ResolveEndpoint(const Json& client_config, const ServiceResolver& resolve_service,
                             Endpoint* endpoint) {
  if (const Json* service = Find(client_config, "service"); service != nullptr) {
    const std::string ns = GetString(*service, {"namespace"});
    const std::string name = GetString(*service, {"name"});
    int port = kDefaultServicePort;
    if (const Json* value = Find(*service, "port");
        value != nullptr && value->is_number_integer()) {
      port = static_cast<int>(value->get<int64_t>());
    }
    endpoint->path = GetString(*service, {"path"});
    endpoint->server_name = absl::StrCat(name, ".", ns, ".svc");
    endpoint->url = absl::StrCat("https://", endpoint->server_name, ":", port, endpoint->path);
    std::optional<std::string> address = resolve_service(ns, name, port);
    if (!address.has_value()) {
      return absl::NotFoundError(absl::StrCat("service \"", name, "\" not found"));
    }
    const size_t colon = address->rfind(':');
    if (colon == std::string::npos ||
        !absl::SimpleAtoi(address->substr(colon + 1), &endpoint->connect_port)) {
      return absl::InvalidArgumentError(absl::StrCat("bad address ", *address));
    }
    endpoint->connect_host = address->substr(0, colon);
    return absl::OkStatus();
  }
  endpoint->url = GetString(client_config, {"url"});
  absl::string_view rest = endpoint->url;
  if (!absl::ConsumePrefix(&rest, "https://")) {
    return absl::InvalidArgumentError("clientConfig.url must use https");
  }
  const size_t slash = rest.find('/');
  absl::string_view host_port = rest.substr(0, slash);
  endpoint->path = slash == absl::string_view::npos ? "" : std::string(rest.substr(slash));
  endpoint->connect_port = kDefaultServicePort;
  const size_t colon = host_port.rfind(':');
  if (colon != absl::string_view::npos && host_port.back() != ']') {
    if (!absl::SimpleAtoi(host_port.substr(colon + 1), &endpoint->connect_port)) {
      return absl::InvalidArgumentError(absl::StrCat("bad port in ", endpoint->url));
    }
    host_port = host_port.substr(0, colon);
  }
  endpoint->server_name = std::string(absl::StripPrefix(absl::StripSuffix(host_port, "]"), "["));
  endpoint->connect_host = endpoint->server_name;
  return absl::OkStatus();
}

// Returns an X509 store holding the PEM certificates of `ca_bundle` (base64,
// as in clientConfig.caBundle), or null when there are none.
X509_STORE* CaStore(const std::string& ca_bundle) {
  std::string pem;
  if (ca_bundle.empty() || !absl::Base64Unescape(ca_bundle, &pem)) return nullptr;
  X509_STORE* store = X509_STORE_new();
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    added += X509_STORE_add_cert(store, cert);
    X509_free(cert);
  }
  BIO_free(bio);
  if (added == 0) {
    X509_STORE_free(store);
    return nullptr;
  }
  return store;
}

std::string CallErrorText(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "connect: connection refused";
    case httplib::Error::Read:
    case httplib::Error::ConnectionTimeout:
      return "context deadline exceeded";
    case httplib::Error::SSLServerVerification:
      return "tls: failed to verify certificate: x509: certificate signed by unknown authority "
             "or not valid for the server name";
    default:
      return httplib::to_string(error);
  }
}

// The outcome of one call: allowed, denied (the apiserver's Status), or a
// failure to call the webhook (subject to failurePolicy).
struct CallResult {
  bool allowed = false;
  std::optional<AdmissionRejection> denial;
  std::string call_error;  // Non-empty when the webhook could not be called.
};

CallResult CallWebhook(const MatchedWebhook& matched, const AdmissionAttributes& attributes,
                       const ServiceResolver& resolve_service) {
  const Json& webhook = matched.webhook;
  const std::string name = GetString(webhook, {"name"});
  CallResult result;
  const Json* found_config = Find(webhook, "clientConfig");
  const Json client_config = found_config != nullptr ? *found_config : Json::object();
  Endpoint endpoint;
  const absl::Status resolved = ResolveEndpoint(client_config, resolve_service, &endpoint);
  int timeout_seconds = kDefaultTimeoutSeconds;
  if (const Json* value = Find(webhook, "timeoutSeconds");
      value != nullptr && value->is_number_integer()) {
    timeout_seconds = static_cast<int>(value->get<int64_t>());
  }
  const std::string post = absl::StrCat("failed to call webhook: Post \"", endpoint.url,
                                        "?timeout=", timeout_seconds, "s\": ");
  if (!resolved.ok()) {
    result.call_error = absl::StrCat(post, resolved.message());
    return result;
  }
  httplib::SSLClient client(endpoint.server_name, endpoint.connect_port);
  if (endpoint.connect_host != endpoint.server_name) {
    client.set_hostname_addr_map({{endpoint.server_name, endpoint.connect_host}});
  }
  client.enable_server_certificate_verification(true);
  if (X509_STORE* store = CaStore(GetString(client_config, {"caBundle"})); store != nullptr) {
    client.set_ca_cert_store(store);  // Takes ownership.
  }
  client.set_connection_timeout(timeout_seconds);
  client.set_read_timeout(timeout_seconds);
  client.set_write_timeout(timeout_seconds);
  const std::string uid = NewUid();
  httplib::Result response = client.Post(
      absl::StrCat(endpoint.path.empty() ? "/" : endpoint.path, "?timeout=", timeout_seconds, "s"),
      Dump(AdmissionReview(uid, attributes)), "application/json");
  if (!response) {
    result.call_error = absl::StrCat(post, CallErrorText(response.error()));
    return result;
  }
  if (response->status < 200 || response->status >= 300) {
    result.call_error = absl::StrCat(post, "the server responded with the status code ",
                                     response->status, " but did not return more information");
    return result;
  }
  absl::StatusOr<Json> review = ParseJson(response->body);
  if (!review.ok()) {
    result.call_error =
        absl::StrCat("received invalid webhook response: ", review.status().message());
    return result;
  }
  const std::string invalid = "received invalid webhook response: ";
  if (GetString(*review, {"apiVersion"}) != "admission.k8s.io/v1" ||
      GetString(*review, {"kind"}) != "AdmissionReview") {
    result.call_error = absl::StrCat(
        invalid, "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got ",
        GetString(*review, {"apiVersion"}), ", Kind=", GetString(*review, {"kind"}));
    return result;
  }
  const Json* answer = Find(*review, "response");
  if (answer == nullptr || !answer->is_object()) {
    result.call_error = absl::StrCat(invalid, "webhook response was absent");
    return result;
  }
  if (GetString(*answer, {"uid"}) != uid) {
    result.call_error = absl::StrCat(invalid, "expected response.uid=\"", uid, "\", got \"",
                                     GetString(*answer, {"uid"}), "\"");
    return result;
  }
  const Json* allowed = Find(*answer, "allowed");
  if (allowed != nullptr && allowed->is_boolean() && allowed->get<bool>()) {
    result.allowed = true;
    return result;
  }
  // webhookerrors.ToStatusErr: the code is at least 400, the message names the webhook.
  const Json* status = Find(*answer, "status");
  const Json& fields = status != nullptr && status->is_object() ? *status : Json::object();
  AdmissionRejection denial;
  const Json* code = Find(fields, "code");
  denial.code = code != nullptr && code->is_number_integer() && code->get<int64_t>() >= 400
                    ? static_cast<int>(code->get<int64_t>())
                    : 400;
  denial.reason = GetString(fields, {"reason"});
  const std::string denied_by = absl::StrCat("admission webhook \"", name, "\" denied the request");
  if (const std::string message = GetString(fields, {"message"}); !message.empty()) {
    denial.message = absl::StrCat(denied_by, ": ", message);
  } else if (!denial.reason.empty()) {
    denial.message = absl::StrCat(denied_by, ": ", denial.reason);
  } else {
    denial.message = absl::StrCat(denied_by, " without explanation");
  }
  if (const Json* details = Find(fields, "details"); details != nullptr) denial.details = *details;
  result.denial = std::move(denial);
  return result;
}

}  // namespace

std::vector<MatchedWebhook> MatchingWebhooks(const std::vector<Json>& configurations,
                                             const AdmissionAttributes& attributes) {
  std::vector<MatchedWebhook> matched;
  if (attributes.type->group == "admissionregistration.k8s.io") return matched;
  std::vector<const Json*> ordered;
  for (const Json& configuration : configurations) ordered.push_back(&configuration);
  std::sort(ordered.begin(), ordered.end(), [](const Json* a, const Json* b) {
    return GetString(*a, {"metadata", "name"}) < GetString(*b, {"metadata", "name"});
  });
  for (const Json* configuration : ordered) {
    const Json* webhooks = Find(*configuration, "webhooks");
    if (webhooks == nullptr || !webhooks->is_array()) continue;
    for (const Json& webhook : *webhooks) {
      if (WebhookMatches(webhook, attributes)) {
        matched.push_back({GetString(*configuration, {"metadata", "name"}), webhook});
      }
    }
  }
  return matched;
}

std::optional<AdmissionRejection> CallWebhooks(const std::vector<MatchedWebhook>& webhooks,
                                               const AdmissionAttributes& attributes,
                                               const ServiceResolver& resolve_service) {
  for (const MatchedWebhook& matched : webhooks) {
    const std::string side_effects = GetString(matched.webhook, {"sideEffects"});
    if (attributes.dry_run && side_effects != "None" && side_effects != "NoneOnDryRun") {
      return AdmissionRejection{
          400, "BadRequest",
          absl::StrCat("admission webhook \"", GetString(matched.webhook, {"name"}),
                       "\" does not support dry run"),
          Json()};
    }
    CallResult result = CallWebhook(matched, attributes, resolve_service);
    if (result.denial.has_value()) return result.denial;
    if (result.allowed) continue;
    // A failure to call: failurePolicy decides (v1 default: Fail).
    if (GetString(matched.webhook, {"failurePolicy"}) == "Ignore") continue;
    const std::string error =
        absl::StrCat("failed calling webhook \"", GetString(matched.webhook, {"name"}),
                     "\": ", result.call_error);
    Json cause = Json::object();
    cause["message"] = error;
    Json details = Json::object();
    details["causes"] = Json::array({cause});
    return AdmissionRejection{500, "InternalError",
                              absl::StrCat("Internal error occurred: ", error), std::move(details)};
  }
  return std::nullopt;
}

}  // namespace facet::testing
