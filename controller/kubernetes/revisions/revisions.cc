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

// The kinds whose revisions Facet keeps, with the apiVersion their
// revisions' ownerReferences name.
struct KeptKind {
  absl::string_view kind;
  absl::string_view api_version;
};
constexpr KeptKind kKeptKinds[] = {
    {kXdsResourceKind, kApiVersion},
    {gateway::kGrpcRouteKind, "gateway.networking.k8s.io/v1"},
    {gateway::kXdsVariantPolicyKind, kApiVersion},
};

const KeptKind* FindKind(absl::string_view kind) {
  for (const KeptKind& kept : kKeptKinds) {
    if (kept.kind == kind) return &kept;
  }
  return nullptr;
}

absl::string_view GroupOf(absl::string_view api_version) {
  const size_t slash = api_version.find('/');
  return slash == absl::string_view::npos ? "" : api_version.substr(0, slash);
}

// The kind of an object to record: its `kind`, XdsResource when it has none.
std::string OwnerKind(const YAML::Node& owner) {
  std::string kind = StringAt(owner, {"kind"});
  return kind.empty() ? std::string(kXdsResourceKind) : kind;
}

// The owner of one of Facet's revisions: the kind its label names and the
// ownerReference of that kind (in that kind's API group: the version may
// differ).
struct Owner {
  const KeptKind* kind;
  std::string name;
};
std::optional<Owner> OwnerOf(const YAML::Node& revision) {
  const KeptKind* kind = FindKind(StringAt(revision, {"metadata", "labels", kRevisionOfLabel}));
  if (kind == nullptr) return std::nullopt;
  for (const YAML::Node& reference : FieldAt(revision, {"metadata", "ownerReferences"})) {
    if (StringAt(reference, {"kind"}) == kind->kind &&
        GroupOf(StringAt(reference, {"apiVersion"})) == GroupOf(kind->api_version)) {
      return Owner{kind, StringAt(reference, {"name"})};
    }
  }
  return std::nullopt;
}

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

bool KeepsRevisionsOf(absl::string_view kind) { return FindKind(kind) != nullptr; }

std::string RevisionOwnerKey(const xds::ObjectRef& owner) {
  return absl::StrCat(owner.kind, "/", owner.namespace_, "/", owner.name);
}

absl::StatusOr<std::string> RevisionName(const YAML::Node& owner) {
  absl::StatusOr<std::string> spec = json::YamlToJson(FieldAt(owner, {"spec"}), "spec");
  if (!spec.ok()) return spec.status();
  const std::string kind = OwnerKind(owner);
  const std::string digest = kind == kXdsResourceKind
                                 ? xds::DigestHex(*spec)
                                 : xds::DigestHex(absl::StrCat(kind, "\n", *spec));
  // Names are DNS subdomains of at most 253 characters.
  std::string name = StringAt(owner, {"metadata", "name"}).substr(0, 242);
  return absl::StrCat(name, "-", digest.substr(0, 10));
}

absl::StatusOr<std::string> RevisionJson(const YAML::Node& owner) {
  const std::string kind_name = OwnerKind(owner);
  const KeptKind* kind = FindKind(kind_name);
  if (kind == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no revisions are kept of ", kind_name, " objects"));
  }
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
      R"(,"labels":{)", Quoted(kRevisionOfLabel), ":", Quoted(kind->kind), ",",
      Quoted(kRevisionOwnerLabel), ":", Quoted(owner_name.substr(0, 63)),
      R"(},"ownerReferences":[{"apiVersion":)", Quoted(kind->api_version), R"(,"kind":)",
      Quoted(kind->kind), R"(,"name":)", Quoted(owner_name),
      R"(,"uid":)", Quoted(StringAt(owner, {"metadata", "uid"})),
      R"(,"controller":true,"blockOwnerDeletion":false}]},"data":{"spec":)", *spec,
      R"(},"revision":)", generation, "}");
}

std::string OwnerKeyOf(const YAML::Node& revision) {
  std::optional<Owner> owner = OwnerOf(revision);
  if (!owner.has_value()) return "";
  return RevisionOwnerKey(
      {std::string(owner->kind->kind), StringAt(revision, {"metadata", "namespace"}), owner->name});
}

std::optional<YAML::Node> RecordedObject(const YAML::Node& revision) {
  std::optional<Owner> owner = OwnerOf(revision);
  if (!owner.has_value()) return std::nullopt;
  YAML::Node document;
  document["apiVersion"] = std::string(owner->kind->api_version);
  document["kind"] = std::string(owner->kind->kind);
  document["metadata"]["name"] = owner->name;
  document["metadata"]["namespace"] = StringAt(revision, {"metadata", "namespace"});
  document["metadata"]["generation"] = RevisionNumber(revision);
  document["spec"] = FieldAt(revision, {"data", "spec"});
  return document;
}

namespace {

// Parses the object a revision holds.
std::optional<ParsedDocument> ParseRecorded(const YAML::Node& revision) {
  std::optional<YAML::Node> document = RecordedObject(revision);
  if (!document.has_value()) return std::nullopt;
  const std::string ns = StringAt(revision, {"metadata", "namespace"});
  return ParseDocument(*document,
                       absl::StrCat("api:", ns, "/", StringAt(revision, {"metadata", "name"})), ns);
}

}  // namespace

std::optional<xds::ResourceObject> LastGoodOf(const YAML::Node& revision) {
  std::optional<ParsedDocument> parsed = ParseRecorded(revision);
  if (!parsed.has_value()) return std::nullopt;
  if (auto* object = std::get_if<xds::ResourceObject>(&*parsed)) return std::move(*object);
  return std::nullopt;
}

std::optional<gateway::GatewayObject> LastGoodGatewayObjectOf(const YAML::Node& revision) {
  std::optional<ParsedDocument> parsed = ParseRecorded(revision);
  if (!parsed.has_value()) return std::nullopt;
  auto* object = std::get_if<gateway::GatewayObject>(&*parsed);
  if (object == nullptr || !KeepsRevisionsOf(object->ref.kind)) return std::nullopt;
  return std::move(*object);
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
