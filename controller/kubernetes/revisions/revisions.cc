#include "controller/kubernetes/revisions/revisions.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "controller/objects/object_parser.h"
#include "xds_server/json/yaml_json.h"
#include "xds_server/common/digest.h"

namespace facet::controller {
namespace {

using kube::FieldAt;
using kube::StringAt;

int64_t RevisionNumber(const YAML::Node& revision) {
  int64_t number = 0;
  (void)absl::SimpleAtoi(StringAt(revision, {"revision"}), &number);
  return number;
}

std::string Quoted(absl::string_view text) {
  // JSON string literal for names and uids (which hold no quotes or
  // backslashes once the API server accepted them); escaped anyway.
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

absl::StatusOr<std::string> RevisionName(const YAML::Node& owner) {
  absl::StatusOr<std::string> spec = json::YamlToJson(FieldAt(owner, {"spec"}), "spec");
  if (!spec.ok()) return spec.status();
  // Names are DNS subdomains of at most 253 characters.
  std::string name = StringAt(owner, {"metadata", "name"}).substr(0, 242);
  return absl::StrCat(name, "-", xds::DigestHex(*spec).substr(0, 10));
}

absl::StatusOr<std::string> RevisionJson(const YAML::Node& owner) {
  absl::StatusOr<std::string> spec = json::YamlToJson(FieldAt(owner, {"spec"}), "spec");
  if (!spec.ok()) return spec.status();
  absl::StatusOr<std::string> name = RevisionName(owner);
  if (!name.ok()) return name.status();
  const std::string owner_name = StringAt(owner, {"metadata", "name"});
  std::string generation = StringAt(owner, {"metadata", "generation"});
  if (generation.empty()) generation = "0";
  return absl::StrCat(
      R"({"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":)", Quoted(*name),
      R"(,"namespace":)", Quoted(StringAt(owner, {"metadata", "namespace"})),
      R"(,"labels":{)", Quoted(kRevisionOfLabel), ":", Quoted(kXdsResourceKind), ",",
      Quoted(kRevisionOwnerLabel), ":", Quoted(owner_name.substr(0, 63)),
      R"(},"ownerReferences":[{"apiVersion":)", Quoted(kApiVersion), R"(,"kind":)",
      Quoted(kXdsResourceKind), R"(,"name":)", Quoted(owner_name),
      R"(,"uid":)", Quoted(StringAt(owner, {"metadata", "uid"})),
      R"(,"controller":true,"blockOwnerDeletion":false}]},"data":{"spec":)", *spec,
      R"(},"revision":)", generation, "}");
}

std::string OwnerKeyOf(const YAML::Node& revision) {
  for (const YAML::Node& reference : FieldAt(revision, {"metadata", "ownerReferences"})) {
    if (StringAt(reference, {"kind"}) == kXdsResourceKind &&
        StringAt(reference, {"apiVersion"}) == kApiVersion) {
      return absl::StrCat(StringAt(revision, {"metadata", "namespace"}), "/",
                          StringAt(reference, {"name"}));
    }
  }
  return "";
}

std::optional<xds::ResourceObject> LastGoodOf(const YAML::Node& revision) {
  const std::string owner = OwnerKeyOf(revision);
  if (owner.empty() || StringAt(revision, {"metadata", "labels", kRevisionOfLabel}) != kXdsResourceKind) {
    return std::nullopt;
  }
  const std::string ns = StringAt(revision, {"metadata", "namespace"});
  YAML::Node document;
  document["apiVersion"] = kApiVersion;
  document["kind"] = kXdsResourceKind;
  document["metadata"]["name"] = owner.substr(ns.size() + 1);
  document["metadata"]["namespace"] = ns;
  document["metadata"]["generation"] = RevisionNumber(revision);
  document["spec"] = FieldAt(revision, {"data", "spec"});
  ParsedDocument parsed = ParseDocument(
      document, absl::StrCat("api:", ns, "/", StringAt(revision, {"metadata", "name"})), ns);
  if (auto* object = std::get_if<xds::ResourceObject>(&parsed)) return std::move(*object);
  return std::nullopt;
}

absl::StatusOr<bool> RevisionWriter::Record(const YAML::Node& owner,
                                            const std::vector<YAML::Node>& existing) {
  absl::StatusOr<std::string> name = RevisionName(owner);
  if (!name.ok()) return name.status();
  const std::string ns = StringAt(owner, {"metadata", "namespace"});
  const std::string collection = absl::StrCat("/apis/apps/v1/namespaces/", ns, "/controllerrevisions");
  // A revision holds the spec when it has its name, or the same spec under
  // another name (one written under an earlier digest scheme).
  absl::StatusOr<std::string> spec = json::YamlToJson(FieldAt(owner, {"spec"}), "spec");
  if (!spec.ok()) return spec.status();
  for (const YAML::Node& revision : existing) {
    if (StringAt(revision, {"metadata", "name"}) == *name) return false;
    absl::StatusOr<std::string> held = json::YamlToJson(FieldAt(revision, {"data", "spec"}), "");
    if (held.ok() && *held == *spec) return false;
  }
  absl::StatusOr<std::string> json = RevisionJson(owner);
  if (!json.ok()) return json.status();
  absl::StatusOr<YAML::Node> created = client_.Create(collection, *json);
  if (!created.ok() && !absl::IsAlreadyExists(created.status())) return created.status();
  // Prune: keep the newest `keep_` (the one just written counts).
  std::vector<YAML::Node> older = existing;
  std::sort(older.begin(), older.end(), [](const YAML::Node& a, const YAML::Node& b) {
    const int64_t ra = RevisionNumber(a), rb = RevisionNumber(b);
    if (ra != rb) return ra > rb;
    return StringAt(a, {"metadata", "name"}) > StringAt(b, {"metadata", "name"});
  });
  for (size_t i = static_cast<size_t>(std::max(keep_ - 1, 0)); i < older.size(); ++i) {
    const std::string path =
        absl::StrCat(collection, "/", StringAt(older[i], {"metadata", "name"}));
    absl::Status deleted = client_.Delete(path);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
  }
  return true;
}

}  // namespace facet::controller
