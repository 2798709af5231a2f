// The concise hand-written `match` form of dynamic parameter constraints and
// its translation to the canonical DynamicParameterConstraints proto.
//
// Grammar:
//
//   Match     := Entries | [Entries, ...]  # a list of maps is ORed
//   Entries   := {key: ValueSpec, ...}     # all entries ANDed; {} = unconstrained
//   ValueSpec := string                    # the key equals this value
//              | [string, ...]             # the key equals any of the values
//              | {exists: true|false}      # the key is present / absent
//              | {not: ValueSpec}          # negation
//              | {or: [ValueSpec, ...]}    # any of (non-empty)
//              | {and: [ValueSpec, ...]}   # all of (non-empty)
//
// Every map key of Entries is a parameter key, including "and", "or", "not"
// and "exists": operators only appear in value position, so nothing is
// ambiguous. An object in value position has exactly one operator field.
// Scalars are taken as their text (`1`, `true`, `v1` are the strings "1",
// "true", "v1"); null, empty lists, empty maps in value position, unknown
// operators, a non-boolean `exists`, an empty or duplicate key and an empty
// map inside a top-level list are errors.
//
// Canonical output (deterministic, so equal specs give equal protos):
//   - one key: that key's constraint; several keys: and_constraints with the
//     keys in sorted order; {}: the empty (unconstrained) proto;
//   - a top-level list: or_constraints of the maps' translations, in order;
//   - a string: constraint{key, value};
//   - a list of strings: or_constraints of constraint{key, value}, values
//     sorted and deduplicated; a single value is just its constraint;
//   - exists: true: constraint{key, exists{}}; exists: false:
//     not_constraints{constraint{key, exists{}}};
//   - not/or/and: not_constraints / or_constraints / and_constraints of the
//     operands in the order written; a one-operand or/and is its operand.
#ifndef FACET_XDS_SERVER_CONSTRAINTS_MATCH_SYNTAX_H_
#define FACET_XDS_SERVER_CONSTRAINTS_MATCH_SYNTAX_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xds_server/constraints/constraints.h"
#include "yaml-cpp/yaml.h"

namespace facet::xds {

// Translates a `match` node to canonical constraints and validates them with
// Constraint::Compile(proto, limits). Errors are InvalidArgument and start
// with the YAML path of the offending node, prefixed by `path` (e.g.
// "spec.variants[2].match.env: expected a string, ..."). Never throws.
// Thread-safe for distinct YAML trees (yaml-cpp does not promise that
// concurrent reads of one tree are safe).
absl::StatusOr<DynamicParameterConstraints> CompileMatch(const YAML::Node& match,
                                                         absl::string_view path,
                                                         const ConstraintLimits& limits = {});

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_CONSTRAINTS_MATCH_SYNTAX_H_
