#include "xds_server/constraints/variant_set.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "xds_server/constraints/simple_shapes.h"

namespace facet::xds {
namespace {

using Kind = Constraint::Node::Kind;

// Three-valued state of an expression node under a partial assignment.
// kFalse and kTrue double as indices into SearchNode::count.
enum Tri : int8_t { kUnknown = 0, kFalse = 1, kTrue = 2 };

// What a constraint must do in the parameter set being searched for.
enum class Role : uint8_t { kMustMatch, kMustNotMatch, kVariant };

// kFind: all kMustMatch constraints true and all kMustNotMatch false.
// kOverlap: every pair of kVariant constraints that can both be true.
// kGap: all kVariant constraints false.
enum class Mode : uint8_t { kFind, kOverlap, kGap };

// One query's depth-first search over key assignments; see variant_set.h.
// The Constraints passed to Add() must outlive the Search. Not thread-safe;
// owned by the calling thread for the duration of one call.
class Search {
 public:
  explicit Search(const ConstraintLimits& limits) : limits_(limits) {}

  Search(const Search&) = delete;
  Search& operator=(const Search&) = delete;

  void Add(const Constraint& constraint, Role role) { inputs_.push_back({&constraint, role}); }

  // Builds the search structures; call once, after all Add() calls.
  void Build();

  size_t num_keys() const { return keys_.size(); }

  // Searches for a parameter set satisfying kFind or kGap. Returns
  // ResourceExhausted when the work budget runs out.
  absl::StatusOr<std::optional<ParameterSet>> Find(Mode mode);

  // Collects every overlapping pair of variants, up to
  // limits.max_reported_overlaps; sets `truncated` if more exist.
  absl::Status FindOverlaps(std::vector<VariantSetReport::Overlap>& overlaps, bool& truncated);

 private:
  struct Input {
    const Constraint* constraint;
    Role role;
  };
  struct KeyDomain {
    std::string name;
    std::vector<std::string> values;  // sorted; value i has code i
    bool has_exists = false;
    // Code of "absent"; "other" (when has_exists) is absent_code() + 1.
    int32_t absent_code() const { return static_cast<int32_t>(values.size()); }
    int32_t size() const { return absent_code() + (has_exists ? 2 : 1); }
  };
  struct SearchNode {
    Kind kind;
    Tri state = kUnknown;
    int32_t parent;  // -1 for a root
    int32_t num_children;
    int32_t count[3] = {0, 0, 0};  // children by state
    int32_t constraint;
    int32_t code;  // kValue: the value's code
  };
  // The leaves of one constraint on one key.
  struct Mention {
    int32_t key;
    int32_t leaf_begin;
    int32_t leaf_end;
  };
  struct SearchConstraint {
    int32_t root;
    int32_t mention_begin;
    int32_t mention_end;
    Role role;
  };
  enum class TrailType : uint8_t { kAssign, kNode, kRoot };
  struct TrailEntry {
    TrailType type;
    int32_t index;
  };
  enum class Outcome : uint8_t { kContinue, kDead, kSuccess, kStop };

  // Runs the search in `mode_`; returns with the initial state restored.
  // Sets `witness_` on success.
  void Run();
  void Assign(int32_t key, int32_t code);
  void SetState(int32_t node, Tri state);
  void OnRootDecided(int32_t constraint, Tri state);
  void RemoveLive(int32_t mention);
  void RecordPair(int32_t a, int32_t b);
  void Undo(size_t mark);
  void Push(TrailType type, int32_t index) { trail_[trail_size_++] = {type, index}; }
  bool Dead() const;
  Outcome Check() const;
  bool AllPossiblePairsFound() const;
  int32_t ChooseKey();
  ParameterSet CurrentAssignment() const;
  std::string OtherValue(const KeyDomain& domain) const;
  absl::Status BudgetError() const;
  void ChargeBudget() {
    if (limits_.object_budget != nullptr) *limits_.object_budget -= steps_;
  }

  const ConstraintLimits& limits_;
  std::vector<Input> inputs_;

  std::vector<KeyDomain> keys_;
  std::vector<int32_t> assigned_;  // per key: code, or -1
  std::vector<SearchNode> nodes_;
  std::vector<int32_t> leaves_;
  std::vector<Mention> mentions_;
  std::vector<int32_t> mention_constraint_;
  std::vector<SearchConstraint> constraints_;
  // Per key, the mentions of undecided constraints are live_[key][0, live_size_[key]).
  std::vector<std::vector<int32_t>> live_;
  std::vector<int32_t> live_size_;
  std::vector<int32_t> live_pos_;  // per mention
  // Undo log of the current path; sized for the longest possible path (every
  // node, key and root changes at most once), so pushing never reallocates.
  std::vector<TrailEntry> trail_;
  size_t trail_size_ = 0;

  Mode mode_ = Mode::kFind;
  int64_t steps_ = 0;
  int64_t max_steps_ = 0;  // For the current run: the limit, or what the object budget has left.
  bool stop_ = false;
  std::optional<ParameterSet> witness_;
  // kFind and kGap.
  int32_t num_wanted_ = 0;    // constraints in their wanted state
  int32_t num_unwanted_ = 0;  // constraints in the opposite state
  int32_t num_relevant_ = 0;
  // kOverlap: variants not yet false are possible_[0, possible_size_).
  std::vector<int32_t> possible_;
  std::vector<int32_t> possible_pos_;
  int32_t possible_size_ = 0;
  int32_t num_undecided_ = 0;
  std::vector<int32_t> true_variants_;
  std::vector<VariantSetReport::Overlap>* overlaps_ = nullptr;
  bool truncated_ = false;
};

void Search::Build() {
  // Keys, in name order so that ties are broken deterministically.
  absl::flat_hash_map<absl::string_view, int32_t> key_index;
  std::vector<absl::string_view> names;
  for (const Input& input : inputs_) {
    for (const std::string& key : input.constraint->key_list()) {
      if (key_index.emplace(key, 0).second) names.push_back(key);
    }
  }
  std::sort(names.begin(), names.end());
  keys_.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    keys_[i].name = std::string(names[i]);
    key_index[names[i]] = static_cast<int32_t>(i);
  }

  // Domains.
  std::vector<std::vector<int32_t>> local_to_global(inputs_.size());
  for (size_t c = 0; c < inputs_.size(); ++c) {
    const Constraint& constraint = *inputs_[c].constraint;
    for (const std::string& key : constraint.key_list()) {
      local_to_global[c].push_back(key_index.at(key));
    }
    for (const Constraint::Node& node : constraint.nodes()) {
      if (node.kind == Kind::kValue) {
        keys_[local_to_global[c][node.key]].values.push_back(node.value);
      } else if (node.kind == Kind::kExists) {
        keys_[local_to_global[c][node.key]].has_exists = true;
      }
    }
  }
  for (KeyDomain& domain : keys_) {
    std::sort(domain.values.begin(), domain.values.end());
    domain.values.erase(std::unique(domain.values.begin(), domain.values.end()),
                        domain.values.end());
  }

  // Nodes, mentions and live lists.
  live_.resize(keys_.size());
  std::vector<std::vector<int32_t>> leaves_by_key;
  for (size_t c = 0; c < inputs_.size(); ++c) {
    const Constraint& constraint = *inputs_[c].constraint;
    const int32_t offset = static_cast<int32_t>(nodes_.size());
    leaves_by_key.assign(constraint.key_list().size(), {});
    const auto& nodes = constraint.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Constraint::Node& node = nodes[i];
      SearchNode search_node{.kind = node.kind,
                             .parent = node.parent < 0 ? -1 : node.parent + offset,
                             .num_children = node.num_children,
                             .constraint = static_cast<int32_t>(c),
                             .code = -1};
      if (node.kind == Kind::kValue || node.kind == Kind::kExists) {
        leaves_by_key[node.key].push_back(offset + static_cast<int32_t>(i));
        if (node.kind == Kind::kValue) {
          const auto& values = keys_[local_to_global[c][node.key]].values;
          search_node.code = static_cast<int32_t>(
              std::lower_bound(values.begin(), values.end(), node.value) - values.begin());
        }
      }
      nodes_.push_back(search_node);
    }
    SearchConstraint search_constraint{.root = offset,
                                       .mention_begin = static_cast<int32_t>(mentions_.size()),
                                       .mention_end = 0,
                                       .role = inputs_[c].role};
    for (size_t j = 0; j < leaves_by_key.size(); ++j) {
      const int32_t key = local_to_global[c][j];
      const int32_t mention = static_cast<int32_t>(mentions_.size());
      mentions_.push_back(
          {.key = key,
           .leaf_begin = static_cast<int32_t>(leaves_.size()),
           .leaf_end = static_cast<int32_t>(leaves_.size() + leaves_by_key[j].size())});
      mention_constraint_.push_back(static_cast<int32_t>(c));
      leaves_.insert(leaves_.end(), leaves_by_key[j].begin(), leaves_by_key[j].end());
      live_pos_.push_back(static_cast<int32_t>(live_[key].size()));
      live_[key].push_back(mention);
    }
    search_constraint.mention_end = static_cast<int32_t>(mentions_.size());
    constraints_.push_back(search_constraint);
  }
  live_size_.resize(keys_.size());
  for (size_t k = 0; k < keys_.size(); ++k) {
    live_size_[k] = static_cast<int32_t>(live_[k].size());
  }
  assigned_.assign(keys_.size(), -1);
  trail_.resize(nodes_.size() + keys_.size() + constraints_.size());
}

absl::StatusOr<std::optional<ParameterSet>> Search::Find(Mode mode) {
  mode_ = mode;
  num_wanted_ = 0;
  num_unwanted_ = 0;
  num_relevant_ = static_cast<int32_t>(constraints_.size());
  witness_.reset();
  Run();
  ChargeBudget();
  if (steps_ > max_steps_) return BudgetError();
  return std::move(witness_);
}

absl::Status Search::FindOverlaps(std::vector<VariantSetReport::Overlap>& overlaps,
                                  bool& truncated) {
  mode_ = Mode::kOverlap;
  const int32_t n = static_cast<int32_t>(constraints_.size());
  possible_.resize(n);
  possible_pos_.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    possible_[i] = i;
    possible_pos_[i] = i;
  }
  possible_size_ = n;
  num_undecided_ = n;
  true_variants_.clear();
  overlaps_ = &overlaps;
  truncated_ = false;
  Run();
  ChargeBudget();
  overlaps_ = nullptr;
  if (steps_ > max_steps_) return BudgetError();
  truncated = truncated_;
  return absl::OkStatus();
}

absl::Status Search::BudgetError() const {
  if (max_steps_ < limits_.max_search_steps) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the checks of this object need more than its budget of ", limits_.object_search_steps,
        " search steps (limit object_search_steps); simplify its constraints or use fewer "
        "variants or keys"));
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("the constraints are too complex to decide within ", limits_.max_search_steps,
                   " search steps (limit max_search_steps); simplify them or use fewer keys"));
}

void Search::Run() {
  steps_ = 0;
  max_steps_ = limits_.max_search_steps;
  if (limits_.object_budget != nullptr) {
    max_steps_ = std::min(max_steps_, std::max<int64_t>(*limits_.object_budget, 0));
  }
  stop_ = false;
  trail_size_ = 0;
  for (size_t c = 0; c < constraints_.size(); ++c) {
    const int32_t root = constraints_[c].root;
    if (nodes_[root].kind == Kind::kTrue) SetState(root, kTrue);
  }
  struct Frame {
    int32_t key;
    int32_t next_code;
    size_t mark;
  };
  std::vector<Frame> stack;
  auto expand = [&](Outcome outcome) {
    switch (outcome) {
      case Outcome::kSuccess:
        witness_ = CurrentAssignment();
        stop_ = true;
        return;
      case Outcome::kStop:
      case Outcome::kDead:
        return;
      case Outcome::kContinue:
        break;
    }
    const int32_t key = ChooseKey();
    if (key >= 0) stack.push_back({key, 0, trail_size_});
  };
  expand(Check());
  while (!stack.empty() && !stop_) {
    Frame& frame = stack.back();
    Undo(frame.mark);
    if (frame.next_code == keys_[frame.key].size()) {
      stack.pop_back();
      continue;
    }
    const int32_t key = frame.key;
    const int32_t code = frame.next_code++;
    Assign(key, code);
    expand(Check());
  }
  Undo(0);
}

void Search::Assign(int32_t key, int32_t code) {
  ++steps_;
  assigned_[key] = code;
  Push(TrailType::kAssign, key);
  const bool present = code != keys_[key].absent_code();
  const std::vector<int32_t>& live = live_[key];
  // Backwards, so that a mention removed when its constraint is decided is
  // swapped with one already processed.
  for (int32_t i = live_size_[key] - 1; i >= 0; --i) {
    const int32_t mention = live[i];
    const int32_t root = constraints_[mention_constraint_[mention]].root;
    for (int32_t l = mentions_[mention].leaf_begin; l < mentions_[mention].leaf_end; ++l) {
      const int32_t leaf = leaves_[l];
      const SearchNode& node = nodes_[leaf];
      const bool value = node.kind == Kind::kValue ? node.code == code : present;
      ++steps_;
      SetState(leaf, value ? kTrue : kFalse);
      if (nodes_[root].state != kUnknown) break;
    }
    if (Dead()) break;
  }
}

void Search::SetState(int32_t node, Tri state) {
  while (true) {
    SearchNode& current = nodes_[node];
    current.state = state;
    Push(TrailType::kNode, node);
    if (current.parent < 0) {
      OnRootDecided(current.constraint, state);
      return;
    }
    SearchNode& parent = nodes_[current.parent];
    ++parent.count[state];
    if (parent.state != kUnknown) return;
    Tri parent_state = kUnknown;
    switch (parent.kind) {
      case Kind::kAnd:
        if (parent.count[kFalse] > 0) {
          parent_state = kFalse;
        } else if (parent.count[kTrue] == parent.num_children) {
          parent_state = kTrue;
        }
        break;
      case Kind::kOr:
        if (parent.count[kTrue] > 0) {
          parent_state = kTrue;
        } else if (parent.count[kFalse] == parent.num_children) {
          parent_state = kFalse;
        }
        break;
      case Kind::kNot:
        parent_state = state == kTrue ? kFalse : kTrue;
        break;
      case Kind::kTrue:
      case Kind::kValue:
      case Kind::kExists:
        break;  // leaves have no children
    }
    if (parent_state == kUnknown) return;
    node = current.parent;
    state = parent_state;
  }
}

void Search::OnRootDecided(int32_t constraint, Tri state) {
  ++steps_;
  const SearchConstraint& decided = constraints_[constraint];
  for (int32_t m = decided.mention_begin; m < decided.mention_end; ++m) RemoveLive(m);
  switch (mode_) {
    case Mode::kFind:
    case Mode::kGap: {
      const bool wanted = (decided.role == Role::kMustMatch) == (state == kTrue);
      ++(wanted ? num_wanted_ : num_unwanted_);
      break;
    }
    case Mode::kOverlap:
      --num_undecided_;
      if (state == kFalse) {
        const int32_t pos = possible_pos_[constraint];
        const int32_t last = possible_size_ - 1;
        const int32_t moved = possible_[last];
        possible_[pos] = moved;
        possible_pos_[moved] = pos;
        possible_[last] = constraint;
        possible_pos_[constraint] = last;
        --possible_size_;
      } else {
        for (int32_t other : true_variants_) RecordPair(other, constraint);
        true_variants_.push_back(constraint);
      }
      break;
  }
  Push(TrailType::kRoot, constraint);
}

void Search::RemoveLive(int32_t mention) {
  const int32_t key = mentions_[mention].key;
  const int32_t pos = live_pos_[mention];
  const int32_t last = live_size_[key] - 1;
  const int32_t moved = live_[key][last];
  live_[key][pos] = moved;
  live_pos_[moved] = pos;
  live_[key][last] = mention;
  live_pos_[mention] = last;
  --live_size_[key];
}

void Search::RecordPair(int32_t a, int32_t b) {
  if (a > b) std::swap(a, b);
  for (const auto& overlap : *overlaps_) {
    if (overlap.a == static_cast<size_t>(a) && overlap.b == static_cast<size_t>(b)) return;
  }
  if (static_cast<int64_t>(overlaps_->size()) >= limits_.max_reported_overlaps) {
    truncated_ = true;
    stop_ = true;
    return;
  }
  overlaps_->push_back({static_cast<size_t>(a), static_cast<size_t>(b), CurrentAssignment()});
}

void Search::Undo(size_t mark) {
  while (trail_size_ > mark) {
    const TrailEntry entry = trail_[--trail_size_];
    switch (entry.type) {
      case TrailType::kAssign:
        assigned_[entry.index] = -1;
        break;
      case TrailType::kNode: {
        SearchNode& node = nodes_[entry.index];
        if (node.parent >= 0) --nodes_[node.parent].count[node.state];
        node.state = kUnknown;
        break;
      }
      case TrailType::kRoot: {
        const SearchConstraint& decided = constraints_[entry.index];
        const Tri state = nodes_[decided.root].state;
        switch (mode_) {
          case Mode::kFind:
          case Mode::kGap: {
            const bool wanted = (decided.role == Role::kMustMatch) == (state == kTrue);
            --(wanted ? num_wanted_ : num_unwanted_);
            break;
          }
          case Mode::kOverlap:
            ++num_undecided_;
            if (state == kTrue) {
              true_variants_.pop_back();
            } else {
              ++possible_size_;
            }
            break;
        }
        // Reverses OnRootDecided's RemoveLive calls, last first.
        for (int32_t m = decided.mention_end - 1; m >= decided.mention_begin; --m) {
          ++live_size_[mentions_[m].key];
        }
        break;
      }
    }
  }
}

bool Search::Dead() const {
  if (stop_ || steps_ > max_steps_) return true;
  switch (mode_) {
    case Mode::kFind:
    case Mode::kGap:
      return num_unwanted_ > 0;
    case Mode::kOverlap:
      return possible_size_ < 2;
  }
  return false;
}

Search::Outcome Search::Check() const {
  if (stop_ || steps_ > max_steps_) return Outcome::kStop;
  switch (mode_) {
    case Mode::kFind:
    case Mode::kGap:
      if (num_unwanted_ > 0) return Outcome::kDead;
      if (num_wanted_ == num_relevant_) return Outcome::kSuccess;
      return Outcome::kContinue;
    case Mode::kOverlap:
      if (possible_size_ < 2 || num_undecided_ == 0 || AllPossiblePairsFound()) {
        return Outcome::kDead;
      }
      return Outcome::kContinue;
  }
  return Outcome::kDead;
}

bool Search::AllPossiblePairsFound() const {
  const int64_t possible = possible_size_;
  if (possible * (possible - 1) / 2 > static_cast<int64_t>(overlaps_->size())) return false;
  for (int32_t i = 0; i < possible_size_; ++i) {
    for (int32_t j = i + 1; j < possible_size_; ++j) {
      // Plain variables: clang 14 cannot capture structured bindings.
      const size_t a = static_cast<size_t>(std::min(possible_[i], possible_[j]));
      const size_t b = static_cast<size_t>(std::max(possible_[i], possible_[j]));
      const bool found = std::any_of(overlaps_->begin(), overlaps_->end(),
                                     [&](const auto& o) { return o.a == a && o.b == b; });
      if (!found) return false;
    }
  }
  return true;
}

int32_t Search::ChooseKey() {
  int32_t best = -1;
  for (size_t k = 0; k < keys_.size(); ++k) {
    if (assigned_[k] >= 0 || live_size_[k] == 0) continue;
    if (best < 0 || live_size_[k] > live_size_[best]) best = static_cast<int32_t>(k);
  }
  steps_ += 1 + static_cast<int64_t>(keys_.size() / 64);
  return best;
}

std::string Search::OtherValue(const KeyDomain& domain) const {
  std::string candidate = "other";
  for (int n = 2; std::binary_search(domain.values.begin(), domain.values.end(), candidate); ++n) {
    candidate = absl::StrCat("other-", n);
  }
  return candidate;
}

ParameterSet Search::CurrentAssignment() const {
  ParameterSet params;
  for (size_t k = 0; k < keys_.size(); ++k) {
    const int32_t code = assigned_[k];
    const KeyDomain& domain = keys_[k];
    if (code < 0 || code == domain.absent_code()) continue;
    params[domain.name] = code < domain.absent_code() ? domain.values[code] : OtherValue(domain);
  }
  return params;
}

}  // namespace

absl::StatusOr<std::optional<ParameterSet>> FindParameterSet(
    absl::Span<const Constraint* const> all_true, absl::Span<const Constraint* const> all_false,
    const ConstraintLimits& limits) {
  int64_t steps = 0;
  std::optional<std::optional<ParameterSet>> simple =
      internal::FindSimpleParameterSet(all_true, all_false, &steps);
  if (limits.object_budget != nullptr) *limits.object_budget -= steps;
  if (simple.has_value()) return *std::move(simple);
  Search search(limits);
  for (const Constraint* constraint : all_true) search.Add(*constraint, Role::kMustMatch);
  for (const Constraint* constraint : all_false) search.Add(*constraint, Role::kMustNotMatch);
  search.Build();
  return search.Find(Mode::kFind);
}

absl::StatusOr<VariantSetReport> CheckVariantSet(absl::Span<const Constraint> variants,
                                                 const ConstraintLimits& limits) {
  if (variants.size() > static_cast<size_t>(std::max(limits.max_variants_per_resource, 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("resource has ", variants.size(), " variants, more than ",
                     limits.max_variants_per_resource, " (limit max_variants_per_resource)"));
  }
  VariantSetReport report;
  for (size_t i = 1; i < variants.size(); ++i) {
    if (variants[i].keys() != variants[0].keys()) {
      report.key_set_mismatches.push_back({0, i, variants[0].keys(), variants[i].keys()});
    }
  }
  if (report.key_set_mismatches.empty() && !variants.empty() &&
      variants[0].keys().size() <= static_cast<size_t>(std::max(limits.max_keys_per_resource, 0))) {
    int64_t steps = 0;
    const bool simple = internal::CheckSimpleVariantSet(variants, limits, report, &steps);
    if (limits.object_budget != nullptr) *limits.object_budget -= steps;
    if (simple) return report;
  }
  Search search(limits);
  for (const Constraint& variant : variants) search.Add(variant, Role::kVariant);
  search.Build();
  if (search.num_keys() > static_cast<size_t>(std::max(limits.max_keys_per_resource, 0))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resource's variants constrain ", search.num_keys(), " distinct keys, more than ",
        limits.max_keys_per_resource, " (limit max_keys_per_resource)"));
  }
  absl::Status overlaps = search.FindOverlaps(report.overlaps, report.overlaps_truncated);
  if (!overlaps.ok()) {
    return absl::Status(overlaps.code(),
                        absl::StrCat("checking variants for overlaps: ", overlaps.message()));
  }
  std::sort(report.overlaps.begin(), report.overlaps.end(),
            [](const auto& x, const auto& y) { return std::tie(x.a, x.b) < std::tie(y.a, y.b); });
  absl::StatusOr<std::optional<ParameterSet>> gap = search.Find(Mode::kGap);
  if (!gap.ok()) {
    return absl::Status(gap.status().code(),
                        absl::StrCat("checking variants for gaps: ", gap.status().message()));
  }
  report.gap = *std::move(gap);
  return report;
}

}  // namespace facet::xds
