#include "xds_server/constraints/constraints.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "xds_server/common/status_macros.h"
#include "xds_server/names/names.h"

namespace facet::xds {

using Kind = Constraint::Node::Kind;

struct Constraint::Rep {
  DynamicParameterConstraints proto;
  std::vector<Node> nodes;
  std::vector<int32_t> children;
  std::set<std::string> keys;
  std::vector<std::string> key_list;
};

namespace {

using SingleConstraint = DynamicParameterConstraints::SingleConstraint;

std::string Field(absl::string_view path, absl::string_view field) {
  if (path.empty()) return std::string(field);
  return absl::StrCat(path, ".", field);
}

// Names a node in messages; the root has no field path of its own.
absl::string_view Where(absl::string_view path) {
  return path.empty() ? absl::string_view("constraints") : path;
}

// Walks a proto depth-first, validating it and emitting nodes in pre-order.
class Compiler {
 public:
  Compiler(const ConstraintLimits& limits, std::vector<Constraint::Node>& nodes,
           std::vector<int32_t>& children, std::vector<std::string>& leaf_keys)
      : limits_(limits), nodes_(nodes), children_(children), leaf_keys_(leaf_keys) {}

  absl::Status Visit(const DynamicParameterConstraints& msg, const std::string& path, int depth,
                     int32_t parent) {
    if (static_cast<int64_t>(nodes_.size()) >= limits_.max_nodes) {
      return absl::InvalidArgumentError(absl::StrCat(Where(path), ": expression has more than ",
                                                     limits_.max_nodes,
                                                     " nodes (limit max_nodes)"));
    }
    if (depth > limits_.max_depth) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(path), ": expression is nested more than ", limits_.max_depth,
                       " levels deep (limit max_depth)"));
    }
    const int32_t index = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
    leaf_keys_.emplace_back();
    nodes_[index].parent = parent;
    switch (msg.type_case()) {
      case DynamicParameterConstraints::TYPE_NOT_SET:
        if (parent >= 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              path,
              ": must set one of constraint, or_constraints, and_constraints, not_constraints "
              "(only the whole expression may be empty, meaning unconstrained)"));
        }
        nodes_[index].kind = Kind::kTrue;
        return absl::OkStatus();
      case DynamicParameterConstraints::kConstraint:
        return VisitSingle(msg.constraint(), Field(path, "constraint"), index);
      case DynamicParameterConstraints::kOrConstraints:
        nodes_[index].kind = Kind::kOr;
        return VisitList(msg.or_constraints().constraints(), Field(path, "or_constraints"), depth,
                         index);
      case DynamicParameterConstraints::kAndConstraints:
        nodes_[index].kind = Kind::kAnd;
        return VisitList(msg.and_constraints().constraints(), Field(path, "and_constraints"), depth,
                         index);
      case DynamicParameterConstraints::kNotConstraints: {
        nodes_[index].kind = Kind::kNot;
        const int32_t slot = AllocateChildren(index, 1);
        children_[slot] = static_cast<int32_t>(nodes_.size());
        return Visit(msg.not_constraints(), Field(path, "not_constraints"), depth + 1, index);
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat(Where(path), ": unknown constraint type ", static_cast<int>(msg.type_case())));
  }

 private:
  // Checks a key or value: served in every variant's constraints (and so
  // parsed by every client), it is valid UTF-8 without control characters.
  absl::Status CheckText(const std::string& s, const std::string& path) const {
    if (s.size() > limits_.max_string_length) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": length ", s.size(), " exceeds ",
                                                     limits_.max_string_length,
                                                     " (limit max_string_length)"));
    }
    if (std::string problem = NameTextProblem(s); !problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", problem));
    }
    return absl::OkStatus();
  }

  absl::Status VisitSingle(const SingleConstraint& single, const std::string& path, int32_t index) {
    const std::string key_path = Field(path, "key");
    if (single.key().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(key_path, ": must not be empty"));
    }
    RETURN_IF_ERROR(CheckText(single.key(), key_path));
    leaf_keys_[index] = single.key();
    switch (single.constraint_type_case()) {
      case SingleConstraint::kValue:
        RETURN_IF_ERROR(CheckText(single.value(), Field(path, "value")));
        nodes_[index].kind = Kind::kValue;
        nodes_[index].value = single.value();
        return absl::OkStatus();
      case SingleConstraint::kExists:
        nodes_[index].kind = Kind::kExists;
        return absl::OkStatus();
      case SingleConstraint::CONSTRAINT_TYPE_NOT_SET:
        break;
    }
    return absl::InvalidArgumentError(absl::StrCat(path, ": must set value or exists"));
  }

  absl::Status VisitList(
      const google::protobuf::RepeatedPtrField<DynamicParameterConstraints>& list,
      const std::string& path, int depth, int32_t index) {
    if (list.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Field(path, "constraints"), ": must not be empty"));
    }
    const int32_t first = AllocateChildren(index, list.size());
    for (int i = 0; i < list.size(); ++i) {
      children_[first + i] = static_cast<int32_t>(nodes_.size());
      RETURN_IF_ERROR(
          Visit(list[i], absl::StrCat(path, ".constraints[", i, "]"), depth + 1, index));
    }
    return absl::OkStatus();
  }

  int32_t AllocateChildren(int32_t index, int count) {
    const int32_t first = static_cast<int32_t>(children_.size());
    nodes_[index].first_child = first;
    nodes_[index].num_children = count;
    children_.resize(children_.size() + count);
    return first;
  }

  const ConstraintLimits& limits_;
  std::vector<Constraint::Node>& nodes_;
  std::vector<int32_t>& children_;
  std::vector<std::string>& leaf_keys_;
};

bool IsPlainWord(absl::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '/' || c == ':';
  });
}

void AppendWord(absl::string_view s, std::string& out) {
  if (IsPlainWord(s)) {
    out.append(s.data(), s.size());
  } else {
    absl::StrAppend(&out, "\"", absl::CEscape(s), "\"");
  }
}

}  // namespace

Constraint::Constraint() : Constraint(Unconstrained()) {}

Constraint::Constraint(std::shared_ptr<const Rep> rep) : rep_(std::move(rep)) {}

Constraint Constraint::Unconstrained() {
  static const auto* const kRep = new std::shared_ptr<const Rep>([] {
    auto rep = std::make_shared<Rep>();
    rep->nodes.emplace_back();  // kTrue
    return rep;
  }());
  return Constraint(*kRep);
}

absl::StatusOr<Constraint> Constraint::Compile(const DynamicParameterConstraints& proto,
                                               const ConstraintLimits& limits) {
  auto rep = std::make_shared<Rep>();
  std::vector<std::string> leaf_keys;
  Compiler compiler(limits, rep->nodes, rep->children, leaf_keys);
  RETURN_IF_ERROR(compiler.Visit(proto, /*path=*/"", /*depth=*/1, /*parent=*/-1));
  for (const std::string& key : leaf_keys) {
    if (!key.empty()) rep->keys.insert(key);
  }
  rep->key_list.assign(rep->keys.begin(), rep->keys.end());
  for (size_t i = 0; i < rep->nodes.size(); ++i) {
    if (leaf_keys[i].empty()) continue;
    rep->nodes[i].key = static_cast<int32_t>(
        std::lower_bound(rep->key_list.begin(), rep->key_list.end(), leaf_keys[i]) -
        rep->key_list.begin());
  }
  rep->proto = proto;
  return Constraint(std::move(rep));
}

namespace {

bool Evaluate(const std::vector<Constraint::Node>& nodes, const std::vector<int32_t>& children,
              const std::vector<std::string>& key_list, int32_t index, const ParameterSet& params) {
  const Constraint::Node& node = nodes[index];
  switch (node.kind) {
    case Kind::kTrue:
      return true;
    case Kind::kValue: {
      auto it = params.find(key_list[node.key]);
      return it != params.end() && it->second == node.value;
    }
    case Kind::kExists:
      return params.find(key_list[node.key]) != params.end();
    case Kind::kAnd:
      for (int32_t i = 0; i < node.num_children; ++i) {
        if (!Evaluate(nodes, children, key_list, children[node.first_child + i], params)) {
          return false;
        }
      }
      return true;
    case Kind::kOr:
      for (int32_t i = 0; i < node.num_children; ++i) {
        if (Evaluate(nodes, children, key_list, children[node.first_child + i], params)) {
          return true;
        }
      }
      return false;
    case Kind::kNot:
      return !Evaluate(nodes, children, key_list, children[node.first_child], params);
  }
  return false;
}

void AppendNode(const std::vector<Constraint::Node>& nodes, const std::vector<int32_t>& children,
                const std::vector<std::string>& key_list, int32_t index, std::string& out) {
  const Constraint::Node& node = nodes[index];
  auto append_operand = [&](int32_t child) {
    const Kind kind = nodes[child].kind;
    const bool compound = kind == Kind::kAnd || kind == Kind::kOr;
    if (compound) out.push_back('(');
    AppendNode(nodes, children, key_list, child, out);
    if (compound) out.push_back(')');
  };
  switch (node.kind) {
    case Kind::kTrue:
      out.append("unconstrained");
      return;
    case Kind::kValue:
      AppendWord(key_list[node.key], out);
      out.push_back('=');
      AppendWord(node.value, out);
      return;
    case Kind::kExists:
      out.append("exists(");
      AppendWord(key_list[node.key], out);
      out.push_back(')');
      return;
    case Kind::kAnd:
    case Kind::kOr:
      for (int32_t i = 0; i < node.num_children; ++i) {
        if (i > 0) out.append(node.kind == Kind::kAnd ? " AND " : " OR ");
        append_operand(children[node.first_child + i]);
      }
      return;
    case Kind::kNot:
      out.append("NOT ");
      append_operand(children[node.first_child]);
      return;
  }
}

}  // namespace

std::string ParameterSetToString(const ParameterSet& params) {
  std::string out = "{";
  for (const auto& [key, value] : params) {
    if (out.size() > 1) out.append(", ");
    AppendWord(key, out);
    out.push_back('=');
    AppendWord(value, out);
  }
  out.push_back('}');
  return out;
}

DynamicParameterConstraints ExactConstraints(const ParameterSet& params) {
  DynamicParameterConstraints out;
  if (params.empty()) return out;
  auto set = [](DynamicParameterConstraints* c, const std::string& key, const std::string& value) {
    c->mutable_constraint()->set_key(key);
    c->mutable_constraint()->set_value(value);
  };
  if (params.size() == 1) {
    set(&out, params.begin()->first, params.begin()->second);
    return out;
  }
  auto* list = out.mutable_and_constraints();
  for (const auto& [key, value] : params) set(list->add_constraints(), key, value);
  return out;
}

std::string CanonicalParameters(const ParameterSet& params) {
  std::string out;
  for (const auto& [key, value] : params) {
    absl::StrAppend(&out, key.size(), ":", key, value.size(), ":", value);
  }
  return out;
}

ParameterSet ProjectParameters(const ParameterSet& params, const std::set<std::string>& keys) {
  ParameterSet out;
  for (const auto& [key, value] : params) {
    if (keys.count(key) > 0) out.emplace(key, value);
  }
  return out;
}

bool Constraint::Matches(const ParameterSet& params) const {
  return Evaluate(rep_->nodes, rep_->children, rep_->key_list, 0, params);
}

bool Constraint::unconstrained() const { return rep_->nodes[0].kind == Kind::kTrue; }

const std::set<std::string>& Constraint::keys() const { return rep_->keys; }

const std::vector<std::string>& Constraint::key_list() const { return rep_->key_list; }

const DynamicParameterConstraints& Constraint::proto() const { return rep_->proto; }

const std::vector<Constraint::Node>& Constraint::nodes() const { return rep_->nodes; }

const std::vector<int32_t>& Constraint::children() const { return rep_->children; }

std::string Constraint::ToString() const {
  std::string out;
  AppendNode(rep_->nodes, rep_->children, rep_->key_list, 0, out);
  return out;
}

}  // namespace facet::xds
