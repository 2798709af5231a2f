#include "xds_server/constraints/match_syntax.h"

#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "xds_server/common/status_macros.h"

namespace facet::xds {
namespace {

constexpr absl::string_view kValueSpecExpected =
    "expected a string, a list of strings, or an object with one of exists/not/or/and";

absl::Status Error(absl::string_view path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

bool IsIdentifier(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

std::string KeyPath(absl::string_view path, absl::string_view key) {
  if (IsIdentifier(key)) return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
  return absl::StrCat(path, "[\"", absl::CEscape(key), "\"]");
}

std::string IndexPath(absl::string_view path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

// A plain (unquoted) YAML boolean, as in the YAML 1.2 core schema.
std::optional<bool> AsBool(const YAML::Node& node) {
  if (!node.IsScalar() || node.Tag() == "!") return std::nullopt;
  const std::string& text = node.Scalar();
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  return std::nullopt;
}

DynamicParameterConstraints ValueConstraint(const std::string& key, const std::string& value) {
  DynamicParameterConstraints out;
  out.mutable_constraint()->set_key(key);
  out.mutable_constraint()->set_value(value);
  return out;
}

DynamicParameterConstraints ExistsConstraint(const std::string& key) {
  DynamicParameterConstraints out;
  out.mutable_constraint()->set_key(key);
  out.mutable_constraint()->mutable_exists();
  return out;
}

DynamicParameterConstraints NotConstraint(DynamicParameterConstraints operand) {
  DynamicParameterConstraints out;
  *out.mutable_not_constraints() = std::move(operand);
  return out;
}

// Returns the single operand itself, else an or/and list of the operands.
DynamicParameterConstraints ListConstraint(std::vector<DynamicParameterConstraints> operands,
                                           bool is_or) {
  if (operands.size() == 1) return std::move(operands[0]);
  DynamicParameterConstraints out;
  auto* list = is_or ? out.mutable_or_constraints() : out.mutable_and_constraints();
  for (auto& operand : operands) *list->add_constraints() = std::move(operand);
  return out;
}

class MatchCompiler {
 public:
  explicit MatchCompiler(const ConstraintLimits& limits) : limits_(limits) {}

  absl::StatusOr<DynamicParameterConstraints> CompileTop(const YAML::Node& match,
                                                         const std::string& path) {
    if (!match.IsDefined()) {
      return Error(path, "is missing; expected a map of parameter keys to values");
    }
    if (match.IsMap()) return CompileEntries(match, path);
    if (!match.IsSequence()) {
      return Error(path, "expected a map of parameter keys to values, or a list of such maps");
    }
    if (match.size() == 0) {
      return Error(path, "must list at least one map of parameter keys to values");
    }
    std::vector<DynamicParameterConstraints> alternatives;
    for (size_t i = 0; i < match.size(); ++i) {
      const std::string item_path = IndexPath(path, i);
      const YAML::Node item = match[i];
      if (!item.IsMap()) return Error(item_path, "expected a map of parameter keys to values");
      if (item.size() == 0) {
        return Error(item_path,
                     "an empty map matches everything and cannot be one of several "
                     "alternatives; use `{}` alone for an unconstrained variant");
      }
      ASSIGN_OR_RETURN(DynamicParameterConstraints alternative, CompileEntries(item, item_path));
      alternatives.push_back(std::move(alternative));
    }
    return ListConstraint(std::move(alternatives), /*is_or=*/true);
  }

 private:
  absl::Status CheckLength(const std::string& s, const std::string& path,
                           absl::string_view what) const {
    if (s.size() > limits_.max_string_length) {
      return Error(path, absl::StrCat(what, " is ", s.size(), " characters long, more than ",
                                      limits_.max_string_length, " (limit max_string_length)"));
    }
    return absl::OkStatus();
  }

  // A map of parameter keys to ValueSpecs, ANDed in key order.
  absl::StatusOr<DynamicParameterConstraints> CompileEntries(const YAML::Node& map,
                                                             const std::string& path) {
    // A std::map, not a sorted vector: assigning a YAML::Node overwrites the
    // node it refers to, so Nodes must never be moved by a sort.
    std::map<std::string, YAML::Node> entries;
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it->first.IsScalar()) return Error(path, "parameter keys must be strings");
      const std::string& key = it->first.Scalar();
      if (key.empty()) return Error(path, "parameter keys must not be empty");
      RETURN_IF_ERROR(CheckLength(key, KeyPath(path, key), "the key"));
      if (!entries.emplace(key, it->second).second) {
        return Error(path, absl::StrCat("duplicate parameter key \"", absl::CEscape(key), "\""));
      }
    }
    if (entries.empty()) return DynamicParameterConstraints();
    std::vector<DynamicParameterConstraints> conjuncts;
    for (const auto& [key, spec] : entries) {
      ASSIGN_OR_RETURN(DynamicParameterConstraints conjunct,
                       CompileValue(spec, key, KeyPath(path, key), /*depth=*/1));
      conjuncts.push_back(std::move(conjunct));
    }
    return ListConstraint(std::move(conjuncts), /*is_or=*/false);
  }

  absl::StatusOr<DynamicParameterConstraints> CompileValue(const YAML::Node& spec,
                                                           const std::string& key,
                                                           const std::string& path, int depth) {
    if (depth > limits_.max_depth) {
      return Error(path, absl::StrCat("operators are nested more than ", limits_.max_depth,
                                      " levels deep (limit max_depth)"));
    }
    if (spec.IsScalar()) {
      RETURN_IF_ERROR(CheckLength(spec.Scalar(), path, "the value"));
      return ValueConstraint(key, spec.Scalar());
    }
    if (spec.IsSequence()) return CompileValueList(spec, key, path);
    if (!spec.IsMap() || spec.size() == 0) return Error(path, kValueSpecExpected);
    if (spec.size() != 1) {
      return Error(path,
                   "an object in value position must have exactly one of "
                   "exists/not/or/and");
    }
    const auto entry = spec.begin();
    const std::string op = entry->first.IsScalar() ? entry->first.Scalar() : std::string();
    const YAML::Node operand = entry->second;
    const std::string op_path = KeyPath(path, op);
    if (op == "exists") {
      const std::optional<bool> exists = AsBool(operand);
      if (!exists.has_value()) return Error(op_path, "expected true or false");
      DynamicParameterConstraints out = ExistsConstraint(key);
      return *exists ? out : NotConstraint(std::move(out));
    }
    if (op == "not") {
      ASSIGN_OR_RETURN(DynamicParameterConstraints inner,
                       CompileValue(operand, key, op_path, depth + 1));
      return NotConstraint(std::move(inner));
    }
    if (op == "or" || op == "and") {
      if (!operand.IsSequence() || operand.size() == 0) {
        return Error(op_path, "expected a non-empty list of value specs");
      }
      std::vector<DynamicParameterConstraints> operands;
      for (size_t i = 0; i < operand.size(); ++i) {
        ASSIGN_OR_RETURN(DynamicParameterConstraints inner,
                         CompileValue(operand[i], key, IndexPath(op_path, i), depth + 1));
        operands.push_back(std::move(inner));
      }
      return ListConstraint(std::move(operands), /*is_or=*/op == "or");
    }
    return Error(path, absl::StrCat("unknown operator \"", absl::CEscape(op),
                                    "\"; expected exactly one of exists/not/or/and"));
  }

  // A list of strings: the key equals any of them.
  absl::StatusOr<DynamicParameterConstraints> CompileValueList(const YAML::Node& list,
                                                               const std::string& key,
                                                               const std::string& path) {
    if (list.size() == 0) return Error(path, kValueSpecExpected);
    std::set<std::string> values;
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node item = list[i];
      const std::string item_path = IndexPath(path, i);
      if (!item.IsScalar()) return Error(item_path, "expected a string");
      RETURN_IF_ERROR(CheckLength(item.Scalar(), item_path, "the value"));
      values.insert(item.Scalar());
    }
    std::vector<DynamicParameterConstraints> alternatives;
    for (const std::string& value : values) alternatives.push_back(ValueConstraint(key, value));
    return ListConstraint(std::move(alternatives), /*is_or=*/true);
  }

  const ConstraintLimits& limits_;
};

}  // namespace

absl::StatusOr<DynamicParameterConstraints> CompileMatch(const YAML::Node& match,
                                                         absl::string_view path,
                                                         const ConstraintLimits& limits) {
  const std::string root(path.empty() ? absl::string_view("match") : path);
  try {
    MatchCompiler compiler(limits);
    ASSIGN_OR_RETURN(DynamicParameterConstraints proto, compiler.CompileTop(match, root));
    absl::StatusOr<Constraint> compiled = Constraint::Compile(proto, limits);
    if (!compiled.ok()) {
      return Error(root, absl::StrCat("the translated constraints are invalid: ",
                                      compiled.status().message()));
    }
    return proto;
  } catch (const std::exception& e) {
    return Error(root, absl::StrCat("malformed YAML: ", e.what()));
  }
}

}  // namespace facet::xds
