// The object name rules of k8s.io/apimachinery's validation package that the
// test Kubernetes API server checks, with the messages it gives.
#ifndef FACET_TEST_KUBE_API_SERVER_NAMES_H_
#define FACET_TEST_KUBE_API_SERVER_NAMES_H_

#include "absl/strings/string_view.h"

namespace facet::testing {

// The detail of an invalid RFC 1123 subdomain (most object names).
extern const char kSubdomainMessage[];
// The detail of an invalid RFC 1123 label (namespaces, Service port names).
extern const char kLabelMessage[];

// RFC 1123 label: 1-63 lower-case alphanumerics or '-', alphanumeric at both ends.
bool IsDnsLabel(absl::string_view name);
// RFC 1123 subdomain: at most 253 characters of dot-separated labels.
bool IsDnsSubdomain(absl::string_view name);

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_NAMES_H_
