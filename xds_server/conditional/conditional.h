// Conditional elements: compiles a resource whose list elements carry "@when"
// conditions into the fewest variants that serve exactly the right content to
// every client.
//
// In a written resource (proto3 JSON as YAML), any element of a list that is a
// map may carry "@when" (a condition in the `match` syntax, see
// constraints/match_syntax.h) or "@whenConstraints" (canonical
// DynamicParameterConstraints). A client gets the element when its parameters
// satisfy the condition and every enclosing conditional element is included.
//
// Compilation: every distinct condition splits the parameter space in two; the
// cells of the partition formed by all conditions that some parameter set
// reaches (decided exactly with FindParameterSet) each give one resource
// content. Cells with equal content (the JSON text of the resource with the
// excluded elements and the "@" keys removed) form one variant. Each variant's
// constraints are an OR over its cells of ANDs of condition literals, with
// literals dropped while the term still reaches no cell of another variant.
// The variants are therefore mutually exclusive and together cover every
// parameter set by construction; literals are added back where needed so that
// every variant constrains the same keys (TP2). A resource whose conditions
// never change its content compiles to one unconstrained variant.
#ifndef FACET_XDS_SERVER_CONDITIONAL_CONDITIONAL_H_
#define FACET_XDS_SERVER_CONDITIONAL_CONDITIONAL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "xds_server/constraints/constraints.h"
#include "yaml-cpp/yaml.h"

namespace facet::xds {

inline constexpr char kWhenField[] = "@when";
inline constexpr char kWhenConstraintsField[] = "@whenConstraints";

// Bounds on the compilation of one resource. Exceeding one is a TooComplex
// error that names the limit.
struct ConditionalLimits {
  // Distinct conditions in one resource (equal conditions count once).
  int max_conditions = 16;
  // Cells of the partition the conditions make that parameter sets reach.
  int max_cells = 4096;
  // Variants compiled from one resource (spec.variants' own limit).
  int max_variants = 1024;
  // JSON bytes of all distinct contents together.
  size_t max_compiled_bytes = size_t{8} << 20;
  // Depth, size and string bounds of each condition and of each compiled
  // variant's constraints; search bounds of each satisfiability decision.
  ConstraintLimits constraints;
  // Search steps of all decisions made for one resource.
  int64_t search_steps = int64_t{1} << 22;
};

// One list element of the written resource that carries a condition.
struct ConditionalElement {
  std::string path;             // In the resource, e.g. "virtualHosts[0].routes[1]".
  std::string condition_field;  // kWhenField or kWhenConstraintsField.
  size_t condition = 0;         // Index of its (deduplicated) condition.
  int parent = -1;              // Innermost enclosing conditional element, or -1.
};

// What the variants compiled from one written variant were written as.
// Immutable once built; shared by those variants (thread-safe to read).
struct ConditionalOrigin {
  size_t written_index = 0;  // spec.variants[written_index].
  std::string written_label;
  YAML::Node written_resource;  // As written, with its "@" keys.
  std::vector<ConditionalElement> elements;  // In document order.
  std::map<std::string, size_t> element_at;  // path -> index into `elements`.
  std::vector<Constraint> conditions;        // Distinct conditions, in order of appearance.
};

// Where a path of a compiled variant's resource was written.
struct WrittenLocation {
  std::string path;  // In the written resource.
  // Innermost conditional element enclosing it (-1: none), and the rest of
  // `path` below that element (empty when the path is the element itself).
  int element = -1;
  std::string below_element;
};

// Maps `compiled_path` (a field path in the resource of the compiled variant
// that includes `included`, e.g. "virtual_hosts[0].routes[0].route.cluster";
// proto or lowerCamel field names) to where it was written. Parts of the path
// that the written resource does not hold (a field Facet filled in) are kept
// as given. Thread-safe.
WrittenLocation LocateWritten(const ConditionalOrigin& origin, const std::vector<size_t>& included,
                              absl::string_view compiled_path);

// Returns the path (in `resource`) of the first "@when" or "@whenConstraints"
// key, e.g. "virtualHosts[0].routes[1].@when", or nullopt when there is none.
std::optional<std::string> FindCondition(const YAML::Node& resource);

// A problem found while compiling. `reason` is a Finding reason
// (InvalidConstraints, InvalidSpec, TooComplex); `field` is a full object
// path such as "spec.variants[0].resource.virtualHosts[0].routes[1].@when".
struct ConditionalError {
  std::string reason;
  std::string field;
  std::string message;
};

struct CompiledVariant {
  std::string label;  // "<written label>/<n>".
  DynamicParameterConstraints constraints;
  YAML::Node resource;            // Without excluded elements and "@" keys.
  std::vector<size_t> included;   // Indices into origin->elements, ascending.
};

struct CompiledResource {
  std::shared_ptr<const ConditionalOrigin> origin;
  std::vector<CompiledVariant> variants;  // Empty when `errors` is not.
  std::vector<ConditionalError> errors;
};

// Compiles the resource of spec.variants[written_index] (labelled
// `written_label`). Never throws; pure and thread-safe for distinct YAML trees.
CompiledResource CompileConditions(const YAML::Node& resource, size_t written_index,
                                   absl::string_view written_label,
                                   const ConditionalLimits& limits = {});

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_CONDITIONAL_CONDITIONAL_H_
