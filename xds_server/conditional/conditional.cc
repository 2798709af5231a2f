#include "xds_server/conditional/conditional.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/constraints/variant_set.h"
#include "xds_server/json/proto_json.h"
#include "xds_server/json/yaml_json.h"

namespace facet::xds {
namespace {

std::string JoinPath(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

std::string ElementPath(absl::string_view path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

bool IsConditionKey(absl::string_view key) {
  return key == kWhenField || key == kWhenConstraintsField;
}

std::string Ordinal(size_t n) {
  const size_t tens = n % 100;
  const char* suffix = "th";
  if (tens < 11 || tens > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return absl::StrCat(n, suffix);
}

// Walks the written resource once: records every conditional element and
// compiles its condition.
class Collector {
 public:
  Collector(const ConditionalLimits& limits, std::string base, ConditionalOrigin* origin,
            std::vector<ConditionalError>* errors)
      : limits_(limits), base_(std::move(base)), origin_(*origin), errors_(*errors) {}

  void Visit(const YAML::Node& node, const std::string& path, bool is_element, int parent) {
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) {
        Visit(node[i], ElementPath(path, i), /*is_element=*/true, parent);
      }
      return;
    }
    if (!node.IsMap()) return;
    int self = parent;
    const YAML::Node when = json::Child(node, kWhenField);
    const YAML::Node when_constraints = json::Child(node, kWhenConstraintsField);
    if (when.IsDefined() || when_constraints.IsDefined()) {
      self = Element(node, path, is_element, parent, when, when_constraints);
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "?";
      if (IsConditionKey(key)) continue;
      Visit(entry.second, JoinPath(path, key), /*is_element=*/false, self);
    }
  }

 private:
  std::string Full(absl::string_view path) const { return JoinPath(base_, path); }

  void Error(absl::string_view reason, absl::string_view field, absl::string_view message) {
    errors_.push_back({std::string(reason), std::string(field), std::string(message)});
  }

  // Registers a conditional element; returns its index, or `parent` when it
  // is not usable.
  int Element(const YAML::Node& node, const std::string& path, bool is_element, int parent,
              const YAML::Node& when, const YAML::Node& when_constraints) {
    const bool uses_when = when.IsDefined();
    const std::string field = uses_when ? kWhenField : kWhenConstraintsField;
    const std::string condition_path = Full(JoinPath(path, field));
    if (!is_element) {
      Error("InvalidSpec", condition_path,
            absl::StrCat("only an element of a list (a route, a virtual host, a weighted "
                         "cluster, an endpoint, a filter chain, ...) may carry a condition; ",
                         path.empty() ? "this is the resource itself" : "this is a field value"));
      return parent;
    }
    if (uses_when && when_constraints.IsDefined()) {
      Error("InvalidSpec", Full(path),
            "both @when and @whenConstraints are set; an element uses one of the two forms");
      return parent;
    }
    DynamicParameterConstraints proto;
    if (uses_when) {
      if (when.IsNull()) {
        Error("InvalidConstraints", condition_path,
              "expected a condition in the match syntax (a map or a list of maps), found null");
        return parent;
      }
      absl::StatusOr<DynamicParameterConstraints> compiled =
          CompileMatch(when, condition_path, limits_.constraints);
      if (!compiled.ok()) {
        Error("InvalidConstraints", condition_path, compiled.status().message());
        return parent;
      }
      proto = *std::move(compiled);
    } else {
      absl::Status parsed = json::ParseMessage(when_constraints, condition_path, &proto);
      if (!parsed.ok()) {
        Error("InvalidConstraints", condition_path, parsed.message());
        return parent;
      }
    }
    absl::StatusOr<Constraint> constraint = Constraint::Compile(proto, limits_.constraints);
    if (!constraint.ok()) {
      Error("InvalidConstraints", condition_path, constraint.status().message());
      return parent;
    }
    const std::string key = proto.SerializeAsString();
    auto it = condition_index_.find(key);
    if (it == condition_index_.end()) {
      // Cells are 32-bit truth assignments.
      const int max_conditions = std::min(limits_.max_conditions, 32);
      if (static_cast<int>(origin_.conditions.size()) >= max_conditions) {
        if (!reported_too_many_) {
          Error("TooComplex", condition_path,
                absl::StrCat("is the ", Ordinal(origin_.conditions.size() + 1),
                             " distinct condition of this resource; the limit is ",
                             max_conditions,
                             " distinct conditions per resource (equal conditions count once)"));
          reported_too_many_ = true;
        }
        return parent;
      }
      it = condition_index_.emplace(key, origin_.conditions.size()).first;
      origin_.conditions.push_back(*std::move(constraint));
    }
    origin_.element_at.emplace(path, origin_.elements.size());
    origin_.elements.push_back({path, field, it->second, parent});
    return static_cast<int>(origin_.elements.size() - 1);
  }

  const ConditionalLimits& limits_;
  const std::string base_;
  ConditionalOrigin& origin_;
  std::vector<ConditionalError>& errors_;
  absl::flat_hash_map<std::string, size_t> condition_index_;
  bool reported_too_many_ = false;
};

// Copies `node` without the elements `keep` rejects and without "@" keys.
class Renderer {
 public:
  Renderer(const ConditionalOrigin& origin, const std::vector<bool>& included)
      : origin_(origin), included_(included) {}

  YAML::Node Render(const YAML::Node& node, const std::string& path) const {
    if (node.IsSequence()) {
      YAML::Node out(YAML::NodeType::Sequence);
      for (size_t i = 0; i < node.size(); ++i) {
        const std::string element = ElementPath(path, i);
        auto it = origin_.element_at.find(element);
        if (it != origin_.element_at.end() && !included_[it->second]) continue;
        out.push_back(Render(node[i], element));
      }
      return out;
    }
    if (node.IsMap()) {
      YAML::Node out(YAML::NodeType::Map);
      for (const auto& entry : node) {
        const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "?";
        if (IsConditionKey(key)) continue;
        out.force_insert(YAML::Clone(entry.first), Render(entry.second, JoinPath(path, key)));
      }
      return out;
    }
    return YAML::Clone(node);
  }

 private:
  const ConditionalOrigin& origin_;
  const std::vector<bool>& included_;
};

// A conjunction of condition literals: bit i of `care` says whether condition
// i appears, bit i of `value` whether it appears un-negated.
struct Term {
  uint32_t care = 0;
  uint32_t value = 0;

  bool Covers(uint32_t cell) const { return ((cell ^ value) & care) == 0; }
};

class Compiler {
 public:
  Compiler(const ConditionalLimits& limits, std::string base, ConditionalOrigin* origin,
           std::vector<ConditionalError>* errors)
      : limits_(limits), base_(std::move(base)), origin_(*origin), errors_(*errors) {}

  std::vector<CompiledVariant> Run() {
    if (!EnumerateCells()) return {};
    if (!GroupCells()) return {};
    return BuildVariants();
  }

 private:
  size_t n() const { return origin_.conditions.size(); }

  void TooComplex(absl::string_view message) {
    errors_.push_back({"TooComplex", base_, std::string(message)});
  }

  // Finds the cells (truth assignments of all conditions) that some parameter
  // set reaches, depth first with condition i false before true.
  bool EnumerateCells() {
    ConstraintLimits limits = limits_.constraints;
    budget_ = limits_.search_steps;
    limits.object_budget = &budget_;
    std::vector<const Constraint*> holds;
    std::vector<const Constraint*> fails;
    bool ok = true;
    auto dfs = [&](auto&& self, size_t i, uint32_t bits) -> void {
      if (!ok) return;
      if (i == n()) {
        if (static_cast<int>(cells_.size()) >= limits_.max_cells) {
          TooComplex(absl::StrCat("the ", n(), " distinct conditions split the parameter space "
                                  "into more than ",
                                  limits_.max_cells,
                                  " cells, the limit per resource; use fewer independent "
                                  "conditions"));
          ok = false;
          return;
        }
        cells_.push_back(bits);
        return;
      }
      bool sibling_reachable = false;
      for (bool value : {false, true}) {
        (value ? holds : fails).push_back(&origin_.conditions[i]);
        bool reachable = true;
        if (value && !sibling_reachable) {
          // The parent cell is reachable, so one of its halves is.
        } else {
          absl::StatusOr<std::optional<ParameterSet>> found =
              FindParameterSet(holds, fails, limits);
          if (!found.ok()) {
            TooComplex(absl::StrCat("deciding which combinations of its conditions clients can "
                                    "have: ",
                                    found.status().message()));
            ok = false;
          } else {
            reachable = found->has_value();
          }
        }
        if (ok && reachable) self(self, i + 1, bits | (value ? uint32_t{1} << i : 0));
        if (!value) sibling_reachable = reachable;
        (value ? holds : fails).pop_back();
        if (!ok) return;
      }
    };
    dfs(dfs, 0, 0);
    return ok;
  }

  std::vector<bool> Included(uint32_t cell) const {
    std::vector<bool> included(origin_.elements.size());
    for (size_t e = 0; e < origin_.elements.size(); ++e) {
      const ConditionalElement& element = origin_.elements[e];
      included[e] = ((cell >> element.condition) & 1) != 0 &&
                    (element.parent < 0 || included[element.parent]);
    }
    return included;
  }

  // Assigns every cell to a variant: one per distinct content.
  bool GroupCells() {
    std::map<std::vector<bool>, size_t> by_inclusion;
    std::map<std::string, size_t> by_content;
    size_t bytes = 0;
    for (uint32_t cell : cells_) {
      std::vector<bool> included = Included(cell);
      auto it = by_inclusion.find(included);
      if (it == by_inclusion.end()) {
        YAML::Node resource = Renderer(origin_, included).Render(origin_.written_resource, "");
        absl::StatusOr<std::string> json = json::YamlToJson(resource, base_);
        if (!json.ok()) {
          errors_.push_back({"InvalidResource", base_, std::string(json.status().message())});
          return false;
        }
        bytes += json->size();
        if (bytes > limits_.max_compiled_bytes) {
          TooComplex(absl::StrCat("the distinct contents its conditions select come to more "
                                  "than ",
                                  limits_.max_compiled_bytes,
                                  " bytes of JSON, the limit per resource; use fewer conditions "
                                  "or a smaller resource"));
          return false;
        }
        auto [content, added] = by_content.emplace(*std::move(json), groups_.size());
        if (added) {
          if (static_cast<int>(groups_.size()) >= limits_.max_variants) {
            TooComplex(absl::StrCat("its conditions select more than ", limits_.max_variants,
                                    " distinct contents, and the limit is ", limits_.max_variants,
                                    " variants per resource"));
            return false;
          }
          Group group;
          group.resource = std::move(resource);
          for (size_t e = 0; e < included.size(); ++e) {
            if (included[e]) group.included.push_back(e);
          }
          groups_.push_back(std::move(group));
        }
        it = by_inclusion.emplace(std::move(included), content->second).first;
      }
      groups_[it->second].cells.push_back(cell);
      cell_group_.push_back(it->second);
    }
    return true;
  }

  // Whether `term` reaches no cell outside group `g`.
  bool Exclusive(const Term& term, size_t g) const {
    for (size_t c = 0; c < cells_.size(); ++c) {
      if (cell_group_[c] != g && term.Covers(cells_[c])) return false;
    }
    return true;
  }

  std::vector<Term> Minimize(size_t g) const {
    const Group& group = groups_[g];
    const uint32_t all = n() == 32 ? ~uint32_t{0} : (uint32_t{1} << n()) - 1;
    std::vector<Term> terms;
    for (uint32_t cell : group.cells) {
      if (std::any_of(terms.begin(), terms.end(), [&](const Term& t) { return t.Covers(cell); })) {
        continue;
      }
      Term term{all, cell};
      for (size_t i = 0; i < n(); ++i) {
        const uint32_t bit = uint32_t{1} << i;
        Term wider{term.care & ~bit, term.value & ~bit};
        if (Exclusive(wider, g)) term = wider;
      }
      terms.push_back(term);
    }
    return terms;
  }

  std::set<std::string> KeysOf(const std::vector<Term>& terms) const {
    std::set<std::string> keys;
    for (const Term& term : terms) {
      for (size_t i = 0; i < n(); ++i) {
        if ((term.care >> i) & 1) {
          const auto& k = origin_.conditions[i].keys();
          keys.insert(k.begin(), k.end());
        }
      }
    }
    return keys;
  }

  // Splits terms of group `g` on conditions that mention the keys in
  // `missing`, keeping the halves that reach a cell of `g`, until every key
  // is mentioned. Splitting never changes which cells a group reaches.
  void MentionKeys(size_t g, const std::set<std::string>& all_keys, std::vector<Term>* terms) {
    for (const std::string& key : all_keys) {
      if (KeysOf(*terms).count(key) > 0) continue;
      size_t condition = 0;
      while (origin_.conditions[condition].keys().count(key) == 0) ++condition;
      const uint32_t bit = uint32_t{1} << condition;
      // No term mentions the condition (it would mention the key).
      Term& term = terms->front();
      std::vector<Term> halves;
      for (uint32_t value : {uint32_t{0}, bit}) {
        Term half{term.care | bit, term.value | value};
        if (std::any_of(groups_[g].cells.begin(), groups_[g].cells.end(),
                        [&](uint32_t cell) { return half.Covers(cell); })) {
          halves.push_back(half);
        }
      }
      terms->erase(terms->begin());
      terms->insert(terms->begin(), halves.begin(), halves.end());
    }
  }

  DynamicParameterConstraints TermProto(const Term& term) const {
    std::vector<DynamicParameterConstraints> literals;
    for (size_t i = 0; i < n(); ++i) {
      if (((term.care >> i) & 1) == 0) continue;
      const DynamicParameterConstraints& condition = origin_.conditions[i].proto();
      DynamicParameterConstraints literal;
      if ((term.value >> i) & 1) {
        literal = condition;
      } else {
        *literal.mutable_not_constraints() = condition;
      }
      literals.push_back(std::move(literal));
    }
    if (literals.size() == 1) return literals.front();
    DynamicParameterConstraints out;
    for (auto& literal : literals) {
      *out.mutable_and_constraints()->add_constraints() = std::move(literal);
    }
    return out;
  }

  std::vector<CompiledVariant> BuildVariants() {
    std::vector<std::vector<Term>> terms(groups_.size());
    std::set<std::string> keys;
    if (groups_.size() > 1) {
      for (size_t g = 0; g < groups_.size(); ++g) {
        terms[g] = Minimize(g);
        const std::set<std::string> mentioned = KeysOf(terms[g]);
        keys.insert(mentioned.begin(), mentioned.end());
      }
      for (size_t g = 0; g < groups_.size(); ++g) MentionKeys(g, keys, &terms[g]);
    }
    std::vector<CompiledVariant> out;
    for (size_t g = 0; g < groups_.size(); ++g) {
      CompiledVariant variant;
      variant.label = absl::StrCat(origin_.written_label.substr(0, 240), "/", g);
      if (terms[g].size() == 1) {
        variant.constraints = TermProto(terms[g].front());
      } else {
        for (const Term& term : terms[g]) {
          *variant.constraints.mutable_or_constraints()->add_constraints() = TermProto(term);
        }
      }
      absl::StatusOr<Constraint> check = Constraint::Compile(variant.constraints,
                                                             limits_.constraints);
      if (!check.ok()) {
        TooComplex(absl::StrCat("the constraints of compiled variant \"", variant.label,
                                "\" exceed a limit: ", check.status().message(),
                                "; use fewer or simpler conditions"));
        return {};
      }
      variant.resource = groups_[g].resource;
      variant.included = groups_[g].included;
      out.push_back(std::move(variant));
    }
    return out;
  }

  struct Group {
    YAML::Node resource;
    std::vector<size_t> included;
    std::vector<uint32_t> cells;
  };

  const ConditionalLimits& limits_;
  const std::string base_;
  ConditionalOrigin& origin_;
  std::vector<ConditionalError>& errors_;
  int64_t budget_ = 0;
  std::vector<uint32_t> cells_;
  std::vector<size_t> cell_group_;  // Parallel to cells_.
  std::vector<Group> groups_;
};

std::string NormalizeFieldName(absl::string_view name) {
  std::string out;
  for (char c : name) {
    if (c != '_') out.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// One step of a field path: a field name or a list index.
struct PathStep {
  std::string name;
  std::optional<size_t> index;
};

std::vector<PathStep> ParsePath(absl::string_view path) {
  std::vector<PathStep> steps;
  for (absl::string_view part : absl::StrSplit(path, '.', absl::SkipEmpty())) {
    size_t open = part.find('[');
    if (open != 0) steps.push_back({std::string(part.substr(0, open)), std::nullopt});
    while (open != absl::string_view::npos) {
      const size_t close = part.find(']', open);
      if (close == absl::string_view::npos) break;
      size_t index = 0;
      if (absl::SimpleAtoi(part.substr(open + 1, close - open - 1), &index)) {
        steps.push_back({"", index});
      } else {
        steps.push_back({std::string(part.substr(open, close - open + 1)), std::nullopt});
      }
      open = part.find('[', close);
    }
  }
  return steps;
}

// Returns whether `node` holds a condition key, in document order (a map's
// own keys before those under its values), and then appends the steps to it
// to *steps (as ParsePath makes them), innermost first. Builds no path on the
// way: nearly every resource has no condition, and its every node is looked
// at.
bool FindFirstCondition(const YAML::Node& node, std::vector<PathStep>* steps) {
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      if (FindFirstCondition(node[i], steps)) {
        steps->push_back({"", i});
        return true;
      }
    }
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      if (entry.first.IsScalar() && IsConditionKey(entry.first.Scalar())) {
        steps->push_back({entry.first.Scalar(), std::nullopt});
        return true;
      }
    }
    for (const auto& entry : node) {
      if (FindFirstCondition(entry.second, steps)) {
        steps->push_back({entry.first.IsScalar() ? entry.first.Scalar() : "?", std::nullopt});
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::optional<std::string> FindCondition(const YAML::Node& resource) {
  std::vector<PathStep> steps;
  if (!FindFirstCondition(resource, &steps)) return std::nullopt;
  std::string path;
  for (auto step = steps.rbegin(); step != steps.rend(); ++step) {
    path = step->index.has_value() ? ElementPath(path, *step->index) : JoinPath(path, step->name);
  }
  return path;
}

WrittenLocation LocateWritten(const ConditionalOrigin& origin, const std::vector<size_t>& included,
                              absl::string_view compiled_path) {
  WrittenLocation out;
  YAML::Node node;
  node.reset(origin.written_resource);
  bool following = true;
  size_t element_end = 0;  // Length of out.path up to the innermost element.
  for (const PathStep& step : ParsePath(compiled_path)) {
    if (following && step.index.has_value() && node.IsSequence()) {
      // The compiled list holds the written elements that are included.
      size_t kept = 0;
      bool found = false;
      for (size_t i = 0; i < node.size(); ++i) {
        const std::string element = ElementPath(out.path, i);
        auto it = origin.element_at.find(element);
        if (it != origin.element_at.end() &&
            !std::binary_search(included.begin(), included.end(), it->second)) {
          continue;
        }
        if (kept++ == *step.index) {
          out.path = element;
          const YAML::Node& list = node;
          node.reset(list[i]);  // Rebinds; assignment would write into the tree.
          if (it != origin.element_at.end()) {
            out.element = static_cast<int>(it->second);
            element_end = out.path.size();
          }
          found = true;
          break;
        }
      }
      if (found) continue;
      following = false;
    } else if (following && !step.index.has_value() && node.IsMap()) {
      const std::string wanted = NormalizeFieldName(step.name);
      bool found = false;
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) continue;
        const std::string& key = entry.first.Scalar();
        if (key == step.name || NormalizeFieldName(key) == wanted) {
          out.path = JoinPath(out.path, key);
          node.reset(entry.second);
          found = true;
          break;
        }
      }
      if (found) continue;
      following = false;
    } else {
      following = false;
    }
    out.path = step.index.has_value() ? ElementPath(out.path, *step.index)
                                      : JoinPath(out.path, step.name);
  }
  if (out.element >= 0) {
    absl::string_view below = absl::string_view(out.path).substr(element_end);
    if (!below.empty() && below.front() == '.') below.remove_prefix(1);
    out.below_element = std::string(below);
  }
  return out;
}

CompiledResource CompileConditions(const YAML::Node& resource, size_t written_index,
                                   absl::string_view written_label,
                                   const ConditionalLimits& limits) {
  CompiledResource out;
  auto origin = std::make_shared<ConditionalOrigin>();
  origin->written_index = written_index;
  origin->written_label = std::string(written_label);
  origin->written_resource.reset(resource);
  const std::string base = absl::StrCat("spec.variants[", written_index, "].resource");
  Collector(limits, base, origin.get(), &out.errors)
      .Visit(resource, "", /*is_element=*/false, /*parent=*/-1);
  if (out.errors.empty()) {
    out.variants = Compiler(limits, base, origin.get(), &out.errors).Run();
  }
  if (!out.errors.empty()) out.variants.clear();
  out.origin = std::move(origin);
  return out;
}

}  // namespace facet::xds
