#include "test/kube_api_server/selectors.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace facet::testing {
namespace {

// Splits on commas outside parentheses.
std::vector<std::string> SplitTerms(absl::string_view text) {
  std::vector<std::string> terms;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      terms.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  terms.push_back(current);
  return terms;
}

std::string FieldValue(const Json& object, const std::string& field) {
  std::vector<std::string> parts = absl::StrSplit(field, '.');
  const Json* node = &object;
  for (const std::string& part : parts) {
    node = Find(*node, part);
    if (node == nullptr) return "";
  }
  return node->is_string() ? node->get<std::string>() : Dump(*node);
}

}  // namespace

absl::StatusOr<LabelSelector> LabelSelector::Parse(absl::string_view text) {
  LabelSelector selector;
  if (absl::StripAsciiWhitespace(text).empty()) return selector;
  for (const std::string& raw : SplitTerms(text)) {
    absl::string_view term = absl::StripAsciiWhitespace(raw);
    if (term.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("empty term in label selector \"", text, "\""));
    }
    Requirement requirement;
    size_t pos;
    if (absl::ConsumePrefix(&term, "!")) {
      requirement.key = std::string(absl::StripAsciiWhitespace(term));
      requirement.op = Op::kNotExists;
    } else if ((pos = term.find("!=")) != absl::string_view::npos) {
      requirement.key = std::string(absl::StripAsciiWhitespace(term.substr(0, pos)));
      requirement.op = Op::kNotIn;
      requirement.values.emplace_back(absl::StripAsciiWhitespace(term.substr(pos + 2)));
    } else if ((pos = term.find('=')) != absl::string_view::npos) {
      requirement.key = std::string(absl::StripAsciiWhitespace(term.substr(0, pos)));
      requirement.op = Op::kIn;
      absl::string_view value = term.substr(pos + 1);
      absl::ConsumePrefix(&value, "=");
      requirement.values.emplace_back(absl::StripAsciiWhitespace(value));
    } else if (size_t paren = term.find('('); paren != absl::string_view::npos) {
      std::vector<std::string> head =
          absl::StrSplit(term.substr(0, paren), ' ', absl::SkipWhitespace());
      if (head.size() != 2 || (head[1] != "in" && head[1] != "notin") || term.back() != ')') {
        return absl::InvalidArgumentError(
            absl::StrCat("unable to parse requirement \"", term, "\""));
      }
      requirement.key = head[0];
      requirement.op = head[1] == "in" ? Op::kIn : Op::kNotIn;
      for (absl::string_view value :
           absl::StrSplit(term.substr(paren + 1, term.size() - paren - 2), ',')) {
        requirement.values.emplace_back(absl::StripAsciiWhitespace(value));
      }
    } else {
      requirement.key = std::string(term);
      requirement.op = Op::kExists;
    }
    if (requirement.key.empty() || requirement.key.find_first_of(" ()!=") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("invalid label key in \"", term, "\""));
    }
    selector.requirements_.push_back(std::move(requirement));
  }
  return selector;
}

absl::StatusOr<LabelSelector> LabelSelector::FromJson(const Json& selector) {
  LabelSelector result;
  if (selector.is_null()) return result;
  if (!selector.is_object())
    return absl::InvalidArgumentError("a label selector must be an object");
  if (const Json* labels = Find(selector, "matchLabels");
      labels != nullptr && labels->is_object()) {
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(absl::StrCat("matchLabels[", key, "] is not a string"));
      }
      result.requirements_.push_back({key, Op::kIn, {value.get<std::string>()}});
    }
  }
  const Json* expressions = Find(selector, "matchExpressions");
  if (expressions == nullptr || !expressions->is_array()) return result;
  for (const Json& expression : *expressions) {
    static const auto* kOps =
        new std::vector<std::pair<std::string, Op>>{{"In", Op::kIn},
                                                    {"NotIn", Op::kNotIn},
                                                    {"Exists", Op::kExists},
                                                    {"DoesNotExist", Op::kNotExists}};
    const std::string op = GetString(expression, {"operator"});
    auto found = std::find_if(kOps->begin(), kOps->end(),
                              [&](const auto& known) { return known.first == op; });
    Requirement requirement;
    requirement.key = GetString(expression, {"key"});
    if (found == kOps->end() || requirement.key.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", op, "\" is not a valid label selector operator"));
    }
    requirement.op = found->second;
    if (const Json* values = Find(expression, "values"); values != nullptr && values->is_array()) {
      for (const Json& value : *values) {
        if (value.is_string()) requirement.values.push_back(value.get<std::string>());
      }
    }
    const bool set_based = requirement.op == Op::kIn || requirement.op == Op::kNotIn;
    if (set_based == requirement.values.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("values: ", set_based ? "must be specified" : "must not be specified",
                       " when `operator` is '", op, "'"));
    }
    result.requirements_.push_back(std::move(requirement));
  }
  return result;
}

bool LabelSelector::Matches(const Json& object) const {
  const Json* labels = FindPath(object, {"metadata", "labels"});
  for (const Requirement& requirement : requirements_) {
    const Json* value = labels != nullptr ? Find(*labels, requirement.key) : nullptr;
    bool has = value != nullptr && value->is_string();
    bool in = has && std::find(requirement.values.begin(), requirement.values.end(),
                               value->get<std::string>()) != requirement.values.end();
    switch (requirement.op) {
      case Op::kExists:
        if (!has) return false;
        break;
      case Op::kNotExists:
        if (has) return false;
        break;
      case Op::kIn:
        if (!in) return false;
        break;
      case Op::kNotIn:
        if (in) return false;
        break;
    }
  }
  return true;
}

absl::StatusOr<FieldSelector> FieldSelector::Parse(absl::string_view text,
                                                   const std::vector<std::string>& extra_fields) {
  FieldSelector selector;
  if (absl::StripAsciiWhitespace(text).empty()) return selector;
  for (absl::string_view raw : absl::StrSplit(text, ',')) {
    absl::string_view term = absl::StripAsciiWhitespace(raw);
    Term parsed;
    size_t pos;
    if ((pos = term.find("!=")) != absl::string_view::npos) {
      parsed = {std::string(term.substr(0, pos)), false, std::string(term.substr(pos + 2))};
    } else if ((pos = term.find("==")) != absl::string_view::npos) {
      parsed = {std::string(term.substr(0, pos)), true, std::string(term.substr(pos + 2))};
    } else if ((pos = term.find('=')) != absl::string_view::npos) {
      parsed = {std::string(term.substr(0, pos)), true, std::string(term.substr(pos + 1))};
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid selector: '", text, "'; can't understand '", term, "'"));
    }
    if (parsed.field != "metadata.name" && parsed.field != "metadata.namespace" &&
        std::find(extra_fields.begin(), extra_fields.end(), parsed.field) == extra_fields.end()) {
      return absl::InvalidArgumentError(absl::StrCat("field label not supported: ", parsed.field));
    }
    selector.terms_.push_back(std::move(parsed));
  }
  return selector;
}

bool FieldSelector::Matches(const Json& object) const {
  for (const Term& term : terms_) {
    if ((FieldValue(object, term.field) == term.value) != term.equal) return false;
  }
  return true;
}

}  // namespace facet::testing
