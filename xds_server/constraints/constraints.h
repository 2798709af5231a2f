// Dynamic parameter constraints (xRFC TP2): validation, compilation and
// matching of the constraints attached to one variant of an xDS resource.
#ifndef FACET_XDS_SERVER_CONSTRAINTS_CONSTRAINTS_H_
#define FACET_XDS_SERVER_CONSTRAINTS_CONSTRAINTS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "envoy/service/discovery/v3/discovery.pb.h"

namespace facet::xds {

using DynamicParameterConstraints = envoy::service::discovery::v3::DynamicParameterConstraints;

// The dynamic parameters a client sent with a subscription. A key that is not
// in the map is absent, which is different from a key with an empty value.
using ParameterSet = std::map<std::string, std::string>;

// Renders a parameter set for messages, e.g. `{env=prod, version=v1}`, quoting
// keys and values that are not plain words.
std::string ParameterSetToString(const ParameterSet& params);

// Returns an unambiguous canonical encoding of a parameter set (each key and
// value length-prefixed), for use as a map key: equal sets give equal text.
std::string CanonicalParameters(const ParameterSet& params);

// Returns the parameters of `params` whose keys are in `keys`. Constraints
// that mention only `keys` match `params` exactly when they match the
// projection (TP2: unconstrained parameters are ignored).
ParameterSet ProjectParameters(const ParameterSet& params, const std::set<std::string>& keys);

// Returns the constraints `params` satisfies exactly (every key equal to its
// value; empty for an empty set): how a server says that one locator selects
// nothing without touching the client's other subscriptions.
DynamicParameterConstraints ExactConstraints(const ParameterSet& params);

// Bounds on the constraints Facet accepts and on the work spent deciding them.
// Structural violations are InvalidArgument errors and exceeding the work
// budget is ResourceExhausted; both name the limit.
struct ConstraintLimits {
  // Nesting depth of one expression; a lone SingleConstraint has depth 1.
  int max_depth = 16;
  // DynamicParameterConstraints messages in one expression.
  int max_nodes = 256;
  // Distinct keys across all variants of one resource.
  int max_keys_per_resource = 32;
  // Variants of one resource.
  int max_variants_per_resource = 1024;
  // Length of any key or value.
  size_t max_string_length = 256;
  // Work budget of one decision (one FindParameterSet call, or one of the
  // searches of CheckVariantSet). A step is one key assignment, one leaf
  // evaluation, one constraint decided, or a scan of up to 64 keys; each
  // carries at most max_depth operator updates and one update per key of the
  // decided constraint. Partitions of 256 variants over 8 keys take 10k-30k
  // steps per search, 1024 variants over 10 keys up to about 200k.
  int64_t max_search_steps = 1 << 20;
  // Work budget of every search made for one object (its variant set and
  // its references together). The builder points `object_budget` at a
  // counter set to this for each object it checks.
  int64_t object_search_steps = 1 << 22;
  // Work budget of the own checks (variant sets) of all the objects one
  // snapshot build validates. Each object gets at most what is left of it;
  // an object whose checks it cannot finish is not rejected but deferred to
  // the next build (the snapshot builder's job, not CheckVariantSet's).
  int64_t build_search_steps = 1 << 25;
  // When set, every search draws its steps from this counter and fails with
  // ResourceExhausted once it is spent. Not owned; one thread at a time.
  int64_t* object_budget = nullptr;
  // Overlapping pairs CheckVariantSet reports before it stops looking.
  int max_reported_overlaps = 16;
};

// The validated, compiled constraints of one resource variant.
//
// Immutable and therefore thread-safe; copies share one representation, so
// copying is cheap.
class Constraint {
 public:
  // One operator or leaf of the compiled expression. Nodes are stored in
  // pre-order (node 0 is the root); the operands of node n are
  // children()[n.first_child .. n.first_child + n.num_children).
  struct Node {
    enum class Kind : uint8_t {
      kTrue,    // the empty expression: matches everything (root only)
      kValue,   // key is present and equal to `value`
      kExists,  // key is present
      kAnd,
      kOr,
      kNot,  // exactly one operand
    };
    Kind kind = Kind::kTrue;
    int32_t parent = -1;
    int32_t first_child = 0;
    int32_t num_children = 0;
    int32_t key = -1;  // index into key_list() for kValue and kExists
    std::string value;
  };

  // Returns the constraint that matches every parameter set. Same as a
  // default-constructed Constraint.
  static Constraint Unconstrained();

  // Validates `proto` against TP2 and `limits` and compiles it. An empty
  // (default) proto is unconstrained. Rejects, with InvalidArgument naming the
  // offending field by path (e.g. "and_constraints.constraints[1].constraint.key:
  // must not be empty"): an empty key, a SingleConstraint with neither value
  // nor exists, an empty or/and list, an empty message below the root, and any
  // violation of max_depth, max_nodes or max_string_length.
  static absl::StatusOr<Constraint> Compile(const DynamicParameterConstraints& proto,
                                            const ConstraintLimits& limits = {});

  Constraint();

  // Returns whether `params` satisfies the constraints under TP2 semantics:
  // keys the constraints do not mention are ignored, `exists` is true when the
  // key is present with any value, and an exact value never matches an absent
  // key. Does not allocate.
  bool Matches(const ParameterSet& params) const;

  // Returns whether this constraint matches every parameter set because it is
  // the empty expression. (A non-empty tautology such as `a OR NOT a` is not
  // reported as unconstrained.)
  bool unconstrained() const;

  // Returns the keys mentioned anywhere in the expression.
  const std::set<std::string>& keys() const;

  // Returns the same keys as keys(), indexable by Node::key.
  const std::vector<std::string>& key_list() const;

  // Returns the constraints exactly as given to Compile(), which is what is
  // sent on the wire.
  const DynamicParameterConstraints& proto() const;

  // Returns the compiled expression; see Node.
  const std::vector<Node>& nodes() const;
  const std::vector<int32_t>& children() const;

  // Returns a short human-readable form for messages, e.g.
  // `env=prod AND NOT exists(version)`. Keys and values that are not plain
  // words are quoted.
  std::string ToString() const;

 private:
  struct Rep;
  explicit Constraint(std::shared_ptr<const Rep> rep);

  std::shared_ptr<const Rep> rep_;  // never null
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_CONSTRAINTS_CONSTRAINTS_H_
