// Near-linear decisions for the constraint shapes that make up most
// partitions, used by variant_set.cc before its general search. Internal to
// xds_server/constraints.
//
// Two shapes are recognised:
// - exact tuples: every constraint is one `key=value` or an AND of them over
//   distinct keys (`{env: prod, version: v1}`); the empty expression
//   (unconstrained) is the empty tuple;
// - one-key value sets: every constraint mentions the same single key and is
//   `key=v`, an OR of such, or the NOT of one of those
//   (`{zone: [a, b]}`, `{zone: {not: [a, b]}}`).
// Within one of these shapes, overlaps, gaps and coverage are decided by
// hashing values instead of searching, in time linear in the size of the
// constraints (plus the number of pairs reported).
#ifndef FACET_XDS_SERVER_CONSTRAINTS_SIMPLE_SHAPES_H_
#define FACET_XDS_SERVER_CONSTRAINTS_SIMPLE_SHAPES_H_

#include <cstdint>
#include <optional>

#include "absl/types/span.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/constraints/variant_set.h"

namespace facet::xds::internal {

// Fills the overlaps and gap of `report` (the key set mismatches must be
// empty) when every variant is an exact tuple over the same keys, or every
// variant is a one-key value set with at most one negated variant. Returns
// false, leaving `report` untouched, for any other shape. Adds the work done
// to `*steps`. Overlapping pairs are the first limits.max_reported_overlaps
// by (a, b), as CheckVariantSet documents.
bool CheckSimpleVariantSet(absl::Span<const Constraint> variants, const ConstraintLimits& limits,
                           VariantSetReport& report, int64_t* steps);

// Answers FindParameterSet when all constraints are exact tuples, or all are
// one-key value sets over the same key (unconstrained ones allowed in both).
// Returns nullopt for any other shape. Adds the work done to `*steps`.
std::optional<std::optional<ParameterSet>> FindSimpleParameterSet(
    absl::Span<const Constraint* const> all_true, absl::Span<const Constraint* const> all_false,
    int64_t* steps);

}  // namespace facet::xds::internal

#endif  // FACET_XDS_SERVER_CONSTRAINTS_SIMPLE_SHAPES_H_
