#include "test/kube_api_server/table.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace facet::testing {
namespace {

constexpr char kNameDescription[] =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

Json Cell(const PrinterColumn& column, const Json* value, absl::Time now) {
  if (value == nullptr || value->is_null()) return Json();
  if (column.type == "string") return value->is_string() ? *value : Json(Dump(*value));
  if (column.type == "integer") {
    if (value->is_number_integer()) return *value;
    // A list counts its items (as the built-in WEBHOOKS column does).
    if (value->is_array()) return Json(static_cast<int64_t>(value->size()));
    if (value->is_number()) return Json(static_cast<int64_t>(value->get<double>()));
    return Json();
  }
  if (column.type == "number") return value->is_number() ? *value : Json();
  if (column.type == "boolean") return value->is_boolean() ? *value : Json();
  if (column.type == "date") {
    if (!value->is_string()) return Json();
    absl::Time time;
    std::string error;
    if (!absl::ParseTime(absl::RFC3339_full, value->get<std::string>(), &time, &error)) {
      return Json("<invalid>");
    }
    return Json(HumanDuration(now - time));
  }
  return Json();
}

}  // namespace

namespace {

// Evaluates `path` from `node`; returns the first match in document order.
const Json* FirstMatch(const Json& node, absl::string_view path) {
  if (path.empty()) return &node;
  if (path[0] == '.') {
    size_t end = path.find_first_of(".[", 1);
    if (end == absl::string_view::npos) end = path.size();
    const Json* child = Find(node, path.substr(1, end - 1));
    return child == nullptr ? nullptr : FirstMatch(*child, path.substr(end));
  }
  if (path[0] != '[') return nullptr;
  size_t end = path.find(']');
  if (end == absl::string_view::npos || !node.is_array()) return nullptr;
  const absl::string_view selector = path.substr(1, end - 1);
  const absl::string_view rest = path.substr(end + 1);
  if (selector == "*") {
    for (const Json& item : node) {
      if (const Json* found = FirstMatch(item, rest)) return found;
    }
    return nullptr;
  }
  size_t index = 0;
  if (absl::SimpleAtoi(selector, &index)) {
    return index < node.size() ? FirstMatch(node[index], rest) : nullptr;
  }
  // ?(@.key=="value")
  size_t eq = selector.find("==");
  if (selector.substr(0, 4) != "?(@." || eq == absl::string_view::npos) return nullptr;
  absl::string_view key = selector.substr(4, eq - 4);
  absl::string_view literal = selector.substr(eq + 2);
  if (literal.size() < 3) return nullptr;
  literal = literal.substr(1, literal.size() - 3);  // Strip the quotes and ')'.
  for (const Json& item : node) {
    const Json* field = Find(item, key);
    if (field != nullptr && field->is_string() && field->get<std::string>() == literal) {
      if (const Json* found = FirstMatch(item, rest)) return found;
    }
  }
  return nullptr;
}

}  // namespace

const Json* EvaluateJsonPath(const Json& object, absl::string_view path) {
  return FirstMatch(object, path);
}

std::string HumanDuration(absl::Duration d) {
  int64_t seconds = absl::ToInt64Seconds(d);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return absl::StrCat(seconds, "s");
  int64_t minutes = seconds / 60;
  if (minutes < 10) {
    int64_t s = seconds % 60;
    return s == 0 ? absl::StrCat(minutes, "m") : absl::StrCat(minutes, "m", s, "s");
  }
  if (minutes < 60 * 3) return absl::StrCat(minutes, "m");
  int64_t hours = minutes / 60;
  if (hours < 8) {
    int64_t m = minutes % 60;
    return m == 0 ? absl::StrCat(hours, "h") : absl::StrCat(hours, "h", m, "m");
  }
  if (hours < 48) return absl::StrCat(hours, "h");
  if (hours < 24 * 8) {
    int64_t h = hours % 24;
    return h == 0 ? absl::StrCat(hours / 24, "d") : absl::StrCat(hours / 24, "d", h, "h");
  }
  if (hours < 24 * 365 * 2) return absl::StrCat(hours / 24, "d");
  if (hours < 24 * 365 * 8) {
    int64_t dy = (hours / 24) % 365;
    return dy == 0 ? absl::StrCat(hours / 24 / 365, "y")
                   : absl::StrCat(hours / 24 / 365, "y", dy, "d");
  }
  return absl::StrCat(hours / 24 / 365, "y");
}

Json MakeTable(const ResourceType& type, const std::vector<const Json*>& objects,
               const std::string& resource_version, const std::string& continue_token,
               absl::string_view include_object, absl::Time now) {
  Json table = Json::object();
  table["kind"] = "Table";
  table["apiVersion"] = "meta.k8s.io/v1";
  Json& metadata = table["metadata"];
  metadata = Json::object();
  if (!resource_version.empty()) metadata["resourceVersion"] = resource_version;
  if (!continue_token.empty()) metadata["continue"] = continue_token;
  Json columns = Json::array();
  Json name_column = Json::object();
  name_column["name"] = "Name";
  name_column["type"] = "string";
  name_column["format"] = "name";
  name_column["description"] = kNameDescription;
  name_column["priority"] = 0;
  columns.push_back(name_column);
  for (const PrinterColumn& column : type.columns) {
    Json definition = Json::object();
    definition["name"] = column.name;
    definition["type"] = column.type;
    definition["format"] = "";
    definition["description"] =
        column.description.empty()
            ? absl::StrCat("Custom resource definition column (in JSONPath format): ",
                           column.json_path)
            : column.description;
    definition["priority"] = column.priority;
    columns.push_back(definition);
  }
  table["columnDefinitions"] = std::move(columns);
  Json rows = Json::array();
  for (const Json* object : objects) {
    Json row = Json::object();
    Json cells = Json::array();
    cells.push_back(Json(GetString(*object, {"metadata", "name"})));
    for (const PrinterColumn& column : type.columns) {
      if (column.compute != nullptr) {
        cells.push_back(column.compute(*object));
      } else {
        cells.push_back(Cell(column, EvaluateJsonPath(*object, column.json_path), now));
      }
    }
    row["cells"] = std::move(cells);
    if (include_object == "Object") {
      row["object"] = *object;
    } else if (include_object != "None") {
      Json partial = Json::object();
      partial["kind"] = "PartialObjectMetadata";
      partial["apiVersion"] = "meta.k8s.io/v1";
      const Json* object_metadata = Find(*object, "metadata");
      partial["metadata"] = object_metadata != nullptr ? *object_metadata : Json::object();
      row["object"] = std::move(partial);
    }
    rows.push_back(std::move(row));
  }
  table["rows"] = std::move(rows);
  return table;
}

}  // namespace facet::testing
