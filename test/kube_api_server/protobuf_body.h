// Decodes the Kubernetes protobuf request bodies the real kubectl sends for
// built-in types (`kubectl create namespace` posts a protobuf Namespace).
#ifndef FACET_TEST_KUBE_API_SERVER_PROTOBUF_BODY_H_
#define FACET_TEST_KUBE_API_SERVER_PROTOBUF_BODY_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "test/kube_api_server/json.h"

namespace facet::testing {

// Decodes an application/vnd.kubernetes.protobuf body ("k8s\0" + runtime.Unknown)
// holding a core/v1 Namespace into its JSON form: metadata (name,
// generateName, namespace, labels, annotations, finalizers) and
// spec.finalizers. Unimplemented for other kinds, InvalidArgument for
// malformed input.
absl::StatusOr<Json> DecodeKubernetesProtobuf(absl::string_view body);

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_PROTOBUF_BODY_H_
