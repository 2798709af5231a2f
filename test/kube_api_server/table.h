// Server-side printing (meta.k8s.io/v1 Table), as the apiserver answers
// `kubectl get`: a Name column, the type's printer columns (for the CRDs their
// additionalPrinterColumns) and PartialObjectMetadata rows.
#ifndef FACET_TEST_KUBE_API_SERVER_TABLE_H_
#define FACET_TEST_KUBE_API_SERVER_TABLE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "test/kube_api_server/json.h"
#include "test/kube_api_server/resource_types.h"

namespace facet::testing {

// Builds a Table for `objects`. `include_object` is the includeObject query
// parameter: "None", "Object", or anything else for "Metadata" (the default).
Json MakeTable(const ResourceType& type, const std::vector<const Json*>& objects,
               const std::string& resource_version, const std::string& continue_token,
               absl::string_view include_object, absl::Time now);

// Evaluates the JSONPath subset printer columns use: `.a.b`, `.list[0]`,
// `.list[*].field` and `.list[?(@.key=="value")].field`. Returns the first
// match in document order (the one kube-apiserver's table convertor prints),
// or nullptr when nothing matches.
const Json* EvaluateJsonPath(const Json& object, absl::string_view path);

// Formats a duration like k8s.io/apimachinery's duration.HumanDuration ("5s", "3m2s", "4d").
std::string HumanDuration(absl::Duration d);

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_TABLE_H_
