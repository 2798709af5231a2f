// Label and field selectors as the apiserver parses them for list and watch.
#ifndef FACET_TEST_KUBE_API_SERVER_SELECTORS_H_
#define FACET_TEST_KUBE_API_SERVER_SELECTORS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "test/kube_api_server/json.h"

namespace facet::testing {

// A parsed labelSelector: equality (=, ==, !=), set (in, notin) and
// existence (key, !key) requirements, all of which must hold. Value type.
class LabelSelector {
 public:
  // Parses `text` ("" selects everything). InvalidArgument on bad syntax.
  static absl::StatusOr<LabelSelector> Parse(absl::string_view text);
  // Reads a metav1.LabelSelector object ({matchLabels, matchExpressions}, as
  // in a webhook's namespaceSelector); null or {} selects everything.
  // InvalidArgument for an unknown operator or a malformed expression.
  static absl::StatusOr<LabelSelector> FromJson(const Json& selector);
  bool empty() const { return requirements_.empty(); }
  // Returns whether `object`'s metadata.labels satisfy every requirement.
  bool Matches(const Json& object) const;

 private:
  enum class Op { kIn, kNotIn, kExists, kNotExists };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

// A parsed fieldSelector over the fields the apiserver supports for custom
// resources (metadata.name, metadata.namespace) and `extra_fields`
// (e.g. status.phase for namespaces). Value type.
class FieldSelector {
 public:
  // InvalidArgument on bad syntax or an unsupported field (the apiserver's
  // "field label not supported" 400).
  static absl::StatusOr<FieldSelector> Parse(absl::string_view text,
                                             const std::vector<std::string>& extra_fields);
  bool empty() const { return terms_.empty(); }
  bool Matches(const Json& object) const;

 private:
  struct Term {
    std::string field;
    bool equal;
    std::string value;
  };
  std::vector<Term> terms_;
};

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_SELECTORS_H_
