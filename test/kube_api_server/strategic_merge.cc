#include "test/kube_api_server/strategic_merge.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace facet::testing {
namespace {

constexpr char kSetElementOrder[] = "$setElementOrder/";
constexpr char kDeleteFromPrimitiveList[] = "$deleteFromPrimitiveList/";

class Merger {
 public:
  explicit Merger(const std::vector<std::pair<std::string, std::string>>& merge_keys)
      : merge_keys_(merge_keys.begin(), merge_keys.end()) {
    merge_keys_.emplace("metadata.ownerReferences", "uid");
  }

  // Merges map `patch` into map `original`; nullopt when the patch deletes it.
  absl::StatusOr<std::optional<Json>> MergeMap(const Json& original, const Json& patch,
                                               const std::string& path) const {
    Json result = original.is_object() ? original : Json::object();
    if (const Json* directive = Find(patch, "$patch")) {
      const std::string kind = directive->is_string() ? directive->get<std::string>() : "";
      if (kind == "delete") return std::optional<Json>();
      if (kind == "replace") return std::optional<Json>(StripDirectives(patch));
      if (kind != "merge") {
        return absl::InvalidArgumentError(absl::StrCat("Unknown patch type: ", Dump(*directive)));
      }
    }
    if (const Json* retain = Find(patch, "$retainKeys")) {
      if (!retain->is_array()) {
        return absl::InvalidArgumentError("$retainKeys must be a list of strings");
      }
      Json kept = Json::object();
      for (const Json& key : *retain) {
        if (key.is_string() && result.contains(key.get<std::string>())) {
          kept[key.get<std::string>()] = result[key.get<std::string>()];
        }
      }
      result = std::move(kept);
    }
    std::map<std::string, Json> orders;
    for (const auto& [key, value] : patch.items()) {
      absl::string_view field = key;
      if (absl::ConsumePrefix(&field, kSetElementOrder)) {
        orders[std::string(field)] = value;
        continue;
      }
      if (absl::ConsumePrefix(&field, kDeleteFromPrimitiveList)) {
        Json* list = result.contains(std::string(field)) ? &result[std::string(field)] : nullptr;
        // A named reference: clang 14 cannot capture a structured binding.
        const Json& to_delete = value;
        if (list != nullptr && list->is_array() && to_delete.is_array()) {
          list->erase(std::remove_if(list->begin(), list->end(),
                                     [&](const Json& item) {
                                       return std::find(to_delete.begin(), to_delete.end(),
                                                        item) != to_delete.end();
                                     }),
                      list->end());
        }
        continue;
      }
      if (key == "$patch" || key == "$retainKeys") continue;
      const std::string child = path.empty() ? key : absl::StrCat(path, ".", key);
      if (value.is_null()) {
        result.erase(key);
      } else if (value.is_object()) {
        const Json* current = Find(result, key);
        auto merged = MergeMap(current != nullptr ? *current : Json::object(), value, child);
        if (!merged.ok()) return merged.status();
        if (merged->has_value()) {
          result[key] = **merged;
        } else {
          result.erase(key);
        }
      } else if (value.is_array()) {
        const Json* current = Find(result, key);
        auto merged = MergeList(
            current != nullptr && current->is_array() ? *current : Json::array(), value, child);
        if (!merged.ok()) return merged.status();
        result[key] = *std::move(merged);
      } else {
        result[key] = value;
      }
    }
    for (const auto& [field, order] : orders) {
      if (result.contains(field) && result[field].is_array()) {
        result[field] = Reorder(result[field], order,
                                KeyOf(path.empty() ? field : absl::StrCat(path, ".", field)));
      }
    }
    return std::optional<Json>(std::move(result));
  }

 private:
  std::optional<std::string> KeyOf(const std::string& path) const {
    auto it = merge_keys_.find(path);
    if (it == merge_keys_.end()) return std::nullopt;
    return it->second;
  }

  absl::StatusOr<Json> MergeList(const Json& original, const Json& patch,
                                 const std::string& path) const {
    for (const Json& element : patch) {
      if (element.is_object() && element.size() == 1 && Find(element, "$patch") != nullptr &&
          GetString(element, {"$patch"}) == "replace") {
        Json replaced = Json::array();
        for (const Json& item : patch) {
          if (&item != &element) replaced.push_back(StripDirectives(item));
        }
        return replaced;
      }
    }
    if (path == "metadata.finalizers") {
      Json result = original;
      for (const Json& item : patch) {
        if (std::find(result.begin(), result.end(), item) == result.end()) result.push_back(item);
      }
      return result;
    }
    std::optional<std::string> key = KeyOf(path);
    if (!key.has_value()) return StripDirectives(patch);
    Json result = original;
    for (const Json& element : patch) {
      if (!element.is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat("the elements of ", path, " must be maps merged on ", *key));
      }
      const Json* id = Find(element, *key);
      if (id == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("map: ", Dump(element), " does not contain declared merge key: ", *key));
      }
      auto match = std::find_if(result.begin(), result.end(), [&](const Json& item) {
        const Json* item_id = Find(item, *key);
        return item_id != nullptr && *item_id == *id;
      });
      if (GetString(element, {"$patch"}) == "delete") {
        if (match != result.end()) result.erase(match);
        continue;
      }
      auto merged = MergeMap(match != result.end() ? *match : Json::object(), element, path);
      if (!merged.ok()) return merged.status();
      if (!merged->has_value()) continue;
      if (match != result.end()) {
        *match = **merged;
      } else {
        result.push_back(**merged);
      }
    }
    return result;
  }

  // Puts the elements named in `order` first, in that order; the others
  // follow in their current order.
  static Json Reorder(const Json& list, const Json& order, const std::optional<std::string>& key) {
    if (!order.is_array()) return list;
    auto identity = [&](const Json& item) -> Json {
      if (!key.has_value()) return item;
      const Json* id = Find(item, *key);
      return id != nullptr ? *id : Json();
    };
    Json result = Json::array();
    std::vector<bool> used(list.size(), false);
    for (const Json& wanted : order) {
      Json wanted_id = identity(wanted);
      for (size_t i = 0; i < list.size(); ++i) {
        if (!used[i] && identity(list[i]) == wanted_id) {
          result.push_back(list[i]);
          used[i] = true;
          break;
        }
      }
    }
    for (size_t i = 0; i < list.size(); ++i) {
      if (!used[i]) result.push_back(list[i]);
    }
    return result;
  }

  static Json StripDirectives(const Json& value) {
    if (value.is_object()) {
      Json result = Json::object();
      for (const auto& [key, item] : value.items()) {
        if (absl::StartsWith(key, "$")) continue;
        result[key] = StripDirectives(item);
      }
      return result;
    }
    if (value.is_array()) {
      Json result = Json::array();
      for (const Json& item : value) result.push_back(StripDirectives(item));
      return result;
    }
    return value;
  }

  std::map<std::string, std::string> merge_keys_;
};

}  // namespace

absl::StatusOr<Json> ApplyStrategicMergePatch(
    const Json& original, const Json& patch,
    const std::vector<std::pair<std::string, std::string>>& merge_keys) {
  if (!patch.is_object()) return absl::InvalidArgumentError("the patch must be a JSON object");
  auto merged = Merger(merge_keys).MergeMap(original, patch, "");
  if (!merged.ok()) return merged.status();
  if (!merged->has_value()) return absl::InvalidArgumentError("the patch deletes the object");
  return **merged;
}

}  // namespace facet::testing
