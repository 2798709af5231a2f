// Validating admission webhooks as kube-apiserver calls them: which webhooks
// of the stored admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations
// match a write (rules, scope, namespaceSelector, objectSelector), and the
// AdmissionReview v1 round trip over HTTPS verified with the caBundle, with
// timeoutSeconds, failurePolicy and the apiserver's error shapes.
// Internal to test/kube_api_server.
#ifndef FACET_TEST_KUBE_API_SERVER_ADMISSION_WEBHOOKS_H_
#define FACET_TEST_KUBE_API_SERVER_ADMISSION_WEBHOOKS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "test/kube_api_server/json.h"
#include "test/kube_api_server/resource_types.h"

namespace facet::testing {

// One write as admission sees it.
struct AdmissionAttributes {
  std::string operation;  // CREATE, UPDATE or DELETE.
  const ResourceType* type = nullptr;
  std::string ns;  // "" for cluster-scoped objects.
  std::string name;
  std::string subresource;  // "" or "status".
  Json object;              // The object as it would be stored; null for DELETE.
  Json old_object;          // The stored object; null for CREATE.
  // The object's Namespace (for namespaceSelector); null for cluster-scoped
  // objects. For a Namespace itself, the namespace's own object.
  Json namespace_object;
  bool dry_run = false;
};

// A webhook of a configuration.
struct MatchedWebhook {
  std::string configuration;  // metadata.name of its ValidatingWebhookConfiguration.
  Json webhook;               // One element of its webhooks[].
};

// The Status a refused write is answered with.
struct AdmissionRejection {
  int code;
  std::string reason;
  std::string message;
  Json details;  // null when absent.
};

// Returns the address ("host:port") that Service `ns`/`name` port `port`
// reaches, or nullopt when there is none (the apiserver's "service not found").
using ServiceResolver = std::function<std::optional<std::string>(
    const std::string& ns, const std::string& name, int port)>;

// Returns the webhooks of `configurations` (ordered by name, as the apiserver
// orders them) whose rules and selectors match `attributes`. Writes of
// ValidatingWebhookConfigurations themselves never match, as on a real server.
// A malformed selector matches nothing.
std::vector<MatchedWebhook> MatchingWebhooks(const std::vector<Json>& configurations,
                                             const AdmissionAttributes& attributes);

// Sends an AdmissionReview v1 to each of `webhooks` in turn; returns the first
// denial ("admission webhook \"NAME\" denied the request: MESSAGE", code and
// reason from the response's status) or failure to call a webhook whose
// failurePolicy is Fail (500 InternalError "failed calling webhook ..."), or
// nullopt when the write is admitted. Blocks for up to each webhook's
// timeoutSeconds (default 10). Thread-safe.
std::optional<AdmissionRejection> CallWebhooks(const std::vector<MatchedWebhook>& webhooks,
                                               const AdmissionAttributes& attributes,
                                               const ServiceResolver& resolve_service);

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_ADMISSION_WEBHOOKS_H_
