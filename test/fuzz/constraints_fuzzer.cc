// Fuzzes dynamic parameter constraints (xds_server/constraints) in both
// syntaxes. The input is one YAML document:
//
//   canonical: [DynamicParameterConstraints as proto JSON, ...]
//   match: [a `match` value, ...]
//   params: [{key: value, ...}, ...]
//
// Every constraint that compiles is matched against every parameter set, and
// the decision procedure's answers are checked against Matches(): a witness
// FindParameterSet or CheckVariantSet returns must satisfy what it claims.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "xds_server/constraints/constraints.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/constraints/variant_set.h"
#include "xds_server/json/proto_json.h"
#include "yaml-cpp/yaml.h"
#include "test/fuzz/fuzz_support.h"

namespace {

using facet::xds::Constraint;
using facet::xds::ConstraintLimits;
using facet::xds::DynamicParameterConstraints;
using facet::xds::ParameterSet;

constexpr size_t kMaxConstraints = 8;
constexpr size_t kMaxParameterSets = 8;

using facet::fuzz::Check;

ConstraintLimits FuzzLimits() {
  ConstraintLimits limits;
  // Small budgets keep one input fast; exceeding them is a valid answer.
  limits.max_search_steps = 1 << 14;
  limits.max_variants_per_resource = static_cast<int>(kMaxConstraints);
  return limits;
}

std::optional<YAML::Node> Load(const uint8_t* data, size_t size) {
  try {
    return YAML::Load(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

void AddCompiled(const DynamicParameterConstraints& proto, const ConstraintLimits& limits,
                 std::vector<Constraint>& out) {
  absl::StatusOr<Constraint> compiled = Constraint::Compile(proto, limits);
  if (!compiled.ok()) return;
  Check(compiled->nodes().size() <= static_cast<size_t>(limits.max_nodes) || compiled->unconstrained());
  Check(!compiled->ToString().empty());
  out.push_back(*std::move(compiled));
}

void Run(const YAML::Node& root) {
  const ConstraintLimits limits = FuzzLimits();
  std::vector<Constraint> constraints;
  std::vector<ParameterSet> params;
  if (!root.IsMap()) return;

  if (const YAML::Node canonical = root["canonical"]; canonical.IsDefined() && canonical.IsSequence()) {
    for (size_t i = 0; i < canonical.size() && constraints.size() < kMaxConstraints; ++i) {
      DynamicParameterConstraints proto;
      if (facet::json::ParseMessage(canonical[i], "canonical", &proto).ok()) {
        AddCompiled(proto, limits, constraints);
      }
    }
  }
  if (const YAML::Node match = root["match"]; match.IsDefined() && match.IsSequence()) {
    for (size_t i = 0; i < match.size() && constraints.size() < kMaxConstraints; ++i) {
      absl::StatusOr<DynamicParameterConstraints> proto =
          facet::xds::CompileMatch(match[i], "match", limits);
      if (!proto.ok()) continue;
      // CompileMatch validated it: compiling again must succeed.
      absl::StatusOr<Constraint> compiled = Constraint::Compile(*proto, limits);
      Check(compiled.ok());
      constraints.push_back(*std::move(compiled));
    }
  }
  if (const YAML::Node sets = root["params"]; sets.IsDefined() && sets.IsSequence()) {
    for (size_t i = 0; i < sets.size() && params.size() < kMaxParameterSets; ++i) {
      if (!sets[i].IsMap()) continue;
      ParameterSet set;
      for (const auto& entry : sets[i]) {
        if (entry.first.IsScalar() && entry.second.IsScalar()) {
          set[entry.first.Scalar()] = entry.second.Scalar();
        }
      }
      params.push_back(std::move(set));
    }
  }

  for (const Constraint& constraint : constraints) {
    for (const ParameterSet& set : params) {
      bool matches = constraint.Matches(set);
      // Parameters the constraint does not mention are ignored.
      Check(constraint.Matches(facet::xds::ProjectParameters(set, constraint.keys())) == matches);
    }
    // A witness satisfies the constraint; no witness means nothing matches.
    const Constraint* self[] = {&constraint};
    absl::StatusOr<std::optional<ParameterSet>> witness =
        facet::xds::FindParameterSet(self, {}, limits);
    if (witness.ok() && witness->has_value()) Check(constraint.Matches(**witness));
    if (witness.ok() && !witness->has_value()) {
      for (const ParameterSet& set : params) Check(!constraint.Matches(set));
    }
  }
  for (size_t a = 0; a + 1 < constraints.size(); ++a) {
    const Constraint* yes[] = {&constraints[a]};
    const Constraint* no[] = {&constraints[a + 1]};
    absl::StatusOr<std::optional<ParameterSet>> witness =
        facet::xds::FindParameterSet(yes, no, limits);
    if (witness.ok() && witness->has_value()) {
      Check(constraints[a].Matches(**witness) && !constraints[a + 1].Matches(**witness));
    }
  }

  absl::StatusOr<facet::xds::VariantSetReport> report =
      facet::xds::CheckVariantSet(constraints, limits);
  if (report.ok()) {
    for (const auto& overlap : report->overlaps) {
      Check(overlap.a < overlap.b && overlap.b < constraints.size());
      Check(constraints[overlap.a].Matches(overlap.witness) &&
            constraints[overlap.b].Matches(overlap.witness));
    }
    if (report->gap.has_value()) {
      for (const Constraint& constraint : constraints) Check(!constraint.Matches(*report->gap));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (std::optional<YAML::Node> root = Load(data, size)) Run(*root);
  return 0;
}
