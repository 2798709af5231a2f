// Strategic merge patch (application/strategic-merge-patch+json), what
// `kubectl apply` and `kubectl patch` send for built-in types: a JSON merge
// patch whose lists of keyed elements merge element by element, plus the
// patch directives kubectl writes.
#ifndef FACET_TEST_KUBE_API_SERVER_STRATEGIC_MERGE_H_
#define FACET_TEST_KUBE_API_SERVER_STRATEGIC_MERGE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "test/kube_api_server/json.h"

namespace facet::testing {

// Applies `patch` to `original`. Maps merge recursively and null removes a
// key, as in RFC 7386. A list whose dotted path from the root (list indexes
// left out: "spec.ports") is in `merge_keys` merges by that key: an element
// with a new key is appended, one with a known key merged into it, one with
// "$patch": "delete" removes it; metadata.ownerReferences merge by uid and
// metadata.finalizers as a set for every type; other lists are replaced.
// Directives: "$setElementOrder/<list>" (the order of the merged list),
// "$retainKeys" (the keys a map keeps), "$deleteFromPrimitiveList/<list>",
// "$patch": "replace" | "delete" | "merge" on a map, and a
// {"$patch": "replace"} element that makes its list replace. InvalidArgument
// (the apiserver's 400) for a malformed patch: an unknown $patch value, a
// merged element without its key.
absl::StatusOr<Json> ApplyStrategicMergePatch(
    const Json& original, const Json& patch,
    const std::vector<std::pair<std::string, std::string>>& merge_keys);

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_STRATEGIC_MERGE_H_
