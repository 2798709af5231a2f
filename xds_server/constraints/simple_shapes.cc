#include "xds_server/constraints/simple_shapes.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace facet::xds::internal {
namespace {

using Kind = Constraint::Node::Kind;

// The (key, value) pairs of an exact tuple, sorted by key.
using Tuple = std::vector<std::pair<absl::string_view, absl::string_view>>;

// Sets `out` to the tuple `c` requires; false when `c` is not an exact tuple.
bool AsTuple(const Constraint& c, Tuple& out) {
  out.clear();
  const std::vector<Constraint::Node>& nodes = c.nodes();
  const Constraint::Node& root = nodes[0];
  switch (root.kind) {
    case Kind::kTrue:
      return true;
    case Kind::kValue:
      out.emplace_back(c.key_list()[root.key], root.value);
      return true;
    case Kind::kAnd:
      // As many operands as keys, each a value leaf: every key exactly once.
      if (static_cast<size_t>(root.num_children) != c.key_list().size()) return false;
      for (int32_t i = 0; i < root.num_children; ++i) {
        const Constraint::Node& child = nodes[c.children()[root.first_child + i]];
        if (child.kind != Kind::kValue) return false;
        out.emplace_back(c.key_list()[child.key], child.value);
      }
      std::sort(out.begin(), out.end());
      return true;
    default:
      return false;
  }
}

// The values a one-key constraint accepts (or, when `negated`, rejects).
struct ValueSet {
  bool negated = false;
  std::vector<absl::string_view> values;  // Sorted, unique.
};

// Sets `out` from a one-key value-set constraint; false for any other shape
// (the empty expression included).
bool AsValueSet(const Constraint& c, ValueSet& out) {
  if (c.key_list().size() != 1) return false;
  const std::vector<Constraint::Node>& nodes = c.nodes();
  int32_t index = 0;
  out.negated = nodes[0].kind == Kind::kNot;
  if (out.negated) index = c.children()[nodes[0].first_child];
  const Constraint::Node& node = nodes[index];
  out.values.clear();
  if (node.kind == Kind::kValue) {
    out.values.push_back(node.value);
  } else if (node.kind == Kind::kOr) {
    for (int32_t i = 0; i < node.num_children; ++i) {
      const Constraint::Node& child = nodes[c.children()[node.first_child + i]];
      if (child.kind != Kind::kValue) return false;
      out.values.push_back(child.value);
    }
  } else {
    return false;
  }
  std::sort(out.values.begin(), out.values.end());
  out.values.erase(std::unique(out.values.begin(), out.values.end()), out.values.end());
  return true;
}

// Appends a length-prefixed value, so that different value lists never
// encode the same.
void AppendValue(std::string* out, absl::string_view value) {
  absl::StrAppend(out, value.size(), ":", value);
}

ParameterSet ToParameters(const Tuple& tuple) {
  ParameterSet params;
  for (const auto& [key, value] : tuple) params.emplace(std::string(key), std::string(value));
  return params;
}

// Records the pair (a, b) unless the report is full, in which case it marks
// it truncated. Returns false once full.
bool Record(VariantSetReport& report, const ConstraintLimits& limits, size_t a, size_t b,
            ParameterSet witness) {
  if (static_cast<int64_t>(report.overlaps.size()) >= limits.max_reported_overlaps) {
    report.overlaps_truncated = true;
    return false;
  }
  report.overlaps.push_back({a, b, std::move(witness)});
  return true;
}

bool CheckTuples(absl::Span<const Constraint> variants, const ConstraintLimits& limits,
                 VariantSetReport& report, int64_t* steps) {
  std::vector<Tuple> tuples(variants.size());
  std::vector<std::string> encoded(variants.size());
  for (size_t i = 0; i < variants.size(); ++i) {
    if (!AsTuple(variants[i], tuples[i])) return false;
    for (const auto& [key, value] : tuples[i]) AppendValue(&encoded[i], value);
    *steps += 1 + static_cast<int64_t>(tuples[i].size());
  }
  // Variants with equal tuples, in index order; all other pairs are disjoint
  // (same keys, some value differs).
  absl::flat_hash_map<absl::string_view, std::vector<size_t>> groups;
  std::vector<const std::vector<size_t>*> group_of(variants.size());
  std::vector<size_t> position(variants.size());
  for (size_t i = 0; i < variants.size(); ++i) {
    std::vector<size_t>& group = groups[encoded[i]];
    position[i] = group.size();
    group.push_back(i);
  }
  for (size_t i = 0; i < variants.size(); ++i) group_of[i] = &groups[encoded[i]];
  VariantSetReport out;
  for (size_t a = 0; a < variants.size() && !out.overlaps_truncated; ++a) {
    const std::vector<size_t>& group = *group_of[a];
    for (size_t j = position[a] + 1; j < group.size(); ++j) {
      ++*steps;
      if (!Record(out, limits, a, group[j], ToParameters(tuples[a]))) break;
    }
  }
  // Every variant needs all of its keys present: the empty set matches none
  // (unless the variants are unconstrained and match everything).
  if (!tuples[0].empty()) out.gap = ParameterSet{};
  report.overlaps = std::move(out.overlaps);
  report.overlaps_truncated = out.overlaps_truncated;
  report.gap = std::move(out.gap);
  return true;
}

// The smallest value of `values` not in `excluded`, or nullopt.
std::optional<absl::string_view> FirstOutside(
    const std::vector<absl::string_view>& values,
    const absl::flat_hash_set<absl::string_view>& excluded, int64_t* steps) {
  for (absl::string_view value : values) {
    ++*steps;
    if (!excluded.contains(value)) return value;
  }
  return std::nullopt;
}

bool CheckValueSets(absl::Span<const Constraint> variants, const ConstraintLimits& limits,
                    VariantSetReport& report, int64_t* steps) {
  std::vector<ValueSet> sets(variants.size());
  std::optional<size_t> negated;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (!AsValueSet(variants[i], sets[i])) return false;
    if (sets[i].negated) {
      if (negated.has_value()) return false;  // Two defaults: left to the search.
      negated = i;
    }
    *steps += 1 + static_cast<int64_t>(sets[i].values.size());
  }
  const std::string key = variants[0].key_list()[0];
  auto witness = [&](std::optional<absl::string_view> value) {
    ParameterSet params;
    if (value.has_value()) params.emplace(key, std::string(*value));
    return params;
  };
  // Per value, the positive variants that accept it, in index order.
  absl::flat_hash_map<absl::string_view, std::vector<size_t>> accepting;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (sets[i].negated) continue;
    for (absl::string_view value : sets[i].values) accepting[value].push_back(i);
  }
  absl::flat_hash_set<absl::string_view> rejected_by_default;
  if (negated.has_value()) {
    rejected_by_default.insert(sets[*negated].values.begin(), sets[*negated].values.end());
  }
  VariantSetReport out;
  std::vector<size_t> partners;
  for (size_t a = 0; a < variants.size() && !out.overlaps_truncated; ++a) {
    // The first few variants after `a` that overlap it, in index order.
    const size_t wanted =
        static_cast<size_t>(std::max<int64_t>(limits.max_reported_overlaps, 0)) + 1 -
        out.overlaps.size();
    partners.clear();
    if (!sets[a].negated) {
      for (absl::string_view value : sets[a].values) {
        const std::vector<size_t>& list = accepting[value];
        auto it = std::upper_bound(list.begin(), list.end(), a);
        for (size_t n = 0; it != list.end() && n < wanted; ++it, ++n) partners.push_back(*it);
        *steps += 1 + static_cast<int64_t>(std::min(wanted, list.size()));
      }
      if (negated.has_value() && *negated > a &&
          FirstOutside(sets[a].values, rejected_by_default, steps).has_value()) {
        partners.push_back(*negated);
      }
    } else {
      for (size_t b = a + 1; b < variants.size() && partners.size() < wanted; ++b) {
        if (FirstOutside(sets[b].values, rejected_by_default, steps).has_value()) {
          partners.push_back(b);
        }
      }
    }
    std::sort(partners.begin(), partners.end());
    partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
    for (size_t b : partners) {
      std::optional<absl::string_view> common;
      if (sets[a].negated || sets[b].negated) {
        const ValueSet& positive = sets[a].negated ? sets[b] : sets[a];
        common = FirstOutside(positive.values, rejected_by_default, steps);
      } else {
        std::vector<absl::string_view> both;
        std::set_intersection(sets[a].values.begin(), sets[a].values.end(),
                              sets[b].values.begin(), sets[b].values.end(),
                              std::back_inserter(both));
        *steps += static_cast<int64_t>(sets[a].values.size() + sets[b].values.size());
        common = both.front();
      }
      if (!Record(out, limits, a, b, witness(common))) break;
    }
  }
  // Without a default, a client without the key matches nothing; with one,
  // a value it rejects that no other variant accepts.
  if (!negated.has_value()) {
    out.gap = ParameterSet{};
  } else {
    for (absl::string_view value : sets[*negated].values) {
      ++*steps;
      if (!accepting.contains(value)) {
        out.gap = witness(value);
        break;
      }
    }
  }
  report.overlaps = std::move(out.overlaps);
  report.overlaps_truncated = out.overlaps_truncated;
  report.gap = std::move(out.gap);
  return true;
}

std::optional<std::optional<ParameterSet>> FindTuple(
    absl::Span<const Constraint* const> all_true, absl::Span<const Constraint* const> all_false,
    int64_t* steps) {
  Tuple tuple;
  absl::flat_hash_map<absl::string_view, absl::string_view> required;
  for (const Constraint* c : all_true) {
    if (!AsTuple(*c, tuple)) return std::nullopt;
    for (const auto& [key, value] : tuple) {
      ++*steps;
      auto [it, inserted] = required.emplace(key, value);
      if (!inserted && it->second != value) return std::optional<ParameterSet>();
    }
  }
  // `required`, with every other key absent, avoids each tuple that asks for
  // more than it; a tuple within it matches every set that has it.
  bool covered = false;
  for (const Constraint* c : all_false) {
    if (!AsTuple(*c, tuple)) return std::nullopt;
    const bool within = std::all_of(tuple.begin(), tuple.end(), [&](const auto& pair) {
      ++*steps;
      auto it = required.find(pair.first);
      return it != required.end() && it->second == pair.second;
    });
    covered = covered || within;
  }
  if (covered) return std::optional<ParameterSet>();
  ParameterSet params;
  for (const auto& [key, value] : required) params.emplace(std::string(key), std::string(value));
  return std::optional<ParameterSet>(std::move(params));
}

std::optional<std::optional<ParameterSet>> FindValue(
    absl::Span<const Constraint* const> all_true, absl::Span<const Constraint* const> all_false,
    int64_t* steps) {
  // A value passes a constraint by being in its set (a positive one that
  // must match, a negated one that must not) or by being outside it.
  std::string key;
  int64_t must_be_in = 0;
  absl::flat_hash_map<absl::string_view, int64_t> in_count;
  absl::flat_hash_set<absl::string_view> must_be_outside;
  absl::btree_set<absl::string_view> mentioned;
  ValueSet set;
  for (bool must_match : {true, false}) {
    for (const Constraint* c : must_match ? all_true : all_false) {
      ++*steps;
      if (c->unconstrained()) {
        if (!must_match) return std::optional<ParameterSet>();
        continue;
      }
      if (!AsValueSet(*c, set)) return std::nullopt;
      if (key.empty()) key = c->key_list()[0];
      if (c->key_list()[0] != key) return std::nullopt;
      const bool inside = must_match != set.negated;
      if (inside) ++must_be_in;
      for (absl::string_view value : set.values) {
        ++*steps;
        mentioned.insert(value);
        if (inside) {
          ++in_count[value];
        } else {
          must_be_outside.insert(value);
        }
      }
    }
  }
  // Mentioned values in order, then absent (no constraint tests `exists`,
  // so any unmentioned value behaves as absent): the general search's order.
  for (absl::string_view value : mentioned) {
    ++*steps;
    auto it = in_count.find(value);
    if ((it == in_count.end() ? 0 : it->second) == must_be_in && !must_be_outside.contains(value)) {
      return std::optional<ParameterSet>(ParameterSet{{key, std::string(value)}});
    }
  }
  if (must_be_in == 0) return std::optional<ParameterSet>(ParameterSet{});
  return std::optional<ParameterSet>();
}

}  // namespace

bool CheckSimpleVariantSet(absl::Span<const Constraint> variants, const ConstraintLimits& limits,
                           VariantSetReport& report, int64_t* steps) {
  if (variants.empty() || !report.key_set_mismatches.empty()) return false;
  return CheckTuples(variants, limits, report, steps) ||
         CheckValueSets(variants, limits, report, steps);
}

std::optional<std::optional<ParameterSet>> FindSimpleParameterSet(
    absl::Span<const Constraint* const> all_true, absl::Span<const Constraint* const> all_false,
    int64_t* steps) {
  std::optional<std::optional<ParameterSet>> found = FindTuple(all_true, all_false, steps);
  if (found.has_value()) return found;
  return FindValue(all_true, all_false, steps);
}

}  // namespace facet::xds::internal
