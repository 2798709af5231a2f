// The exact decision procedure over dynamic parameter constraints (xRFC TP2)
// and the control-plane checks built on it: overlapping variants, gaps, and
// variants that constrain different key sets.
//
// Exactness: a constraint only compares a key with the values it mentions or
// tests its presence, so every value of a key that no constraint in the query
// mentions behaves the same. Each key therefore ranges over a finite domain:
// its mentioned values, one "other" value (rendered as a concrete string that
// is not mentioned: "other", "other-2", ...) and "absent". When no constraint
// tests the key with `exists`, "other" and "absent" are indistinguishable and
// only "absent" is tried. Deciding over these domains is exact for all
// parameter sets.
//
// Search: depth-first over keys (most-mentioned undecided key first) with
// incremental three-valued evaluation of every constraint. A key assignment
// updates only the leaves of still-undecided constraints that mention the key
// and propagates changes towards the roots; everything is undone from a
// trail. Subtrees die as soon as the outcome is settled, and keys that no
// undecided constraint mentions are never branched on (left absent).
//
// Before searching, both functions recognise the shapes most partitions have
// (every constraint an exact tuple over the same keys, or a value list of one
// key with at most one negated default; see simple_shapes.h) and decide those
// by hashing values, in linear time and with the same answers.
#ifndef FACET_XDS_SERVER_CONSTRAINTS_VARIANT_SET_H_
#define FACET_XDS_SERVER_CONSTRAINTS_VARIANT_SET_H_

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "xds_server/constraints/constraints.h"

namespace facet::xds {

// Returns a parameter set that every constraint in `all_true` matches and no
// constraint in `all_false` matches, or nullopt if none exists. The answer is
// exact (see above); keys left out of the witness are absent. Pointers must be
// non-null. Fails only with ResourceExhausted when the search needs more than
// `limits.max_search_steps` steps. Thread-safe.
absl::StatusOr<std::optional<ParameterSet>> FindParameterSet(
    absl::Span<const Constraint* const> all_true, absl::Span<const Constraint* const> all_false,
    const ConstraintLimits& limits = {});

// The findings of CheckVariantSet. Indices are positions in the checked span.
struct VariantSetReport {
  // Variant `b` constrains a different set of keys than variant `a` (always
  // variant 0); one entry per variant that differs from variant 0.
  struct KeySetMismatch {
    size_t a;
    size_t b;
    std::set<std::string> keys_a;
    std::set<std::string> keys_b;
  };
  // Variants `a` < `b` both match `witness`.
  struct Overlap {
    size_t a;
    size_t b;
    ParameterSet witness;
  };

  // Returns whether the variants satisfy all TP2 best practices.
  bool ok() const { return key_set_mismatches.empty() && overlaps.empty() && !gap.has_value(); }

  std::vector<KeySetMismatch> key_set_mismatches;
  // Overlapping pairs sorted by (a, b). Complete unless `overlaps_truncated`,
  // in which case the search stopped after limits.max_reported_overlaps pairs
  // and more exist.
  std::vector<Overlap> overlaps;
  bool overlaps_truncated = false;
  // A parameter set that matches no variant, if one exists.
  std::optional<ParameterSet> gap;
};

// Runs the TP2 control-plane checks over the variants of one resource: 1) all
// variants constrain the same keys, 2) no parameter set matches two variants
// (exact; a violation must be rejected), 3) some parameter set matches no
// variant (a gap; clients sending it see the resource as missing).
//
// Errors: InvalidArgument when there are more than max_variants_per_resource
// variants or more than max_keys_per_resource distinct keys;
// ResourceExhausted when a search exceeds max_search_steps. Thread-safe.
absl::StatusOr<VariantSetReport> CheckVariantSet(absl::Span<const Constraint> variants,
                                                 const ConstraintLimits& limits = {});

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_CONSTRAINTS_VARIANT_SET_H_
