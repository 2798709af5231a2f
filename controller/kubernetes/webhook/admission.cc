#include "controller/kubernetes/webhook/admission.h"

#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "controller/objects/object_parser.h"
#include "xds_server/json/yaml_reader.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller {
namespace {

using kube::FieldAt;
using kube::StringAt;

// A JSON string literal (UTF-8 passes through; quotes, backslashes and
// control characters are escaped).
std::string Quoted(absl::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      absl::StrAppend(&out, "\\u00", absl::Hex(c, absl::kZeroPad2));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

std::string Response(const std::string& uid, bool allowed, int code, const std::string& reason,
                     const std::string& message, const std::vector<std::string>& warnings) {
  std::string out = absl::StrCat(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)",
                                 R"("response":{"uid":)", Quoted(uid),
                                 R"(,"allowed":)", allowed ? "true" : "false");
  if (!allowed) {
    absl::StrAppend(&out, R"(,"status":{"code":)", code, R"(,"reason":)", Quoted(reason),
                    R"(,"message":)", Quoted(message), "}");
  }
  if (!warnings.empty()) {
    absl::StrAppend(&out, R"(,"warnings":[)",
                    absl::StrJoin(warnings, ",",
                                  [](std::string* o, const std::string& w) {
                                    absl::StrAppend(o, Quoted(w));
                                  }),
                    "]");
  }
  absl::StrAppend(&out, "}}");
  return out;
}

// Bounds on an AdmissionReview: its object and oldObject each within those of
// one object read from the API, the review around them within the
// envelope's. (The server caps the body at 3 MiB before this.) The API server
// encodes the review from Go structs, so it never has duplicate keys; one
// that has them is refused like any other malformed body.
json::YamlLimits AdmissionReviewLimits() {
  json::YamlLimits limits = kube::ObjectLimits("AdmissionReview");
  limits.max_nodes = 2 * json::kMaxYamlNodes + kube::kMaxEnvelopeNodes;
  limits.max_scalar_bytes = 2 * json::kMaxYamlScalarBytes + kube::kMaxEnvelopeScalarBytes;
  limits.max_depth = json::kMaxYamlDepth + 2;  // The review's map and its request.
  limits.object_paths = {{"request", "object"}, {"request", "oldObject"}};
  return limits;
}

// The problems of one object's status as `facet validate` prints them.
void Describe(const xds::ObjectStatus& status, std::vector<std::string>* errors,
              std::vector<std::string>* warnings) {
  for (const xds::Finding& finding : status.findings) {
    // Whether references resolve depends on what else is applied, and when.
    if (finding.reason == "DanglingReference") continue;
    std::string line = absl::StrCat(status.ref.ToString(), ": ",
                                     finding.field.empty() ? "" : finding.field + ": ",
                                     finding.message);
    if (finding.severity == xds::Severity::kError) {
      errors->push_back(std::move(line));
    } else {
      warnings->push_back(std::move(line));
    }
  }
}

}  // namespace

std::string ReviewAdmission(absl::string_view request_body,
                            const std::vector<xds::AuthorityObject>& authorities,
                            const xds::BuildOptions& options) {
  YAML::Node partial;
  absl::StatusOr<YAML::Node> parsed_review = kube::ParseDocumentText(
      request_body, "AdmissionReview", AdmissionReviewLimits(), &partial);
  if (!parsed_review.ok()) {
    // The API server sends request.uid before the objects; echoing it makes
    // the refusal reach the user as this webhook's answer, not as a failed
    // call.
    return Response(StringAt(partial, {"request", "uid"}), false, 400, "BadRequest",
                    std::string(parsed_review.status().message()), {});
  }
  const YAML::Node& review = *parsed_review;
  const std::string uid = StringAt(review, {"request", "uid"});
  if (StringAt(review, {"kind"}) != "AdmissionReview" || uid.empty()) {
    return Response(uid, false, 400, "BadRequest",
                    "not an admission.k8s.io/v1 AdmissionReview with request.uid", {});
  }
  const std::string operation = StringAt(review, {"request", "operation"});
  const YAML::Node object = FieldAt(review, {"request", "object"});
  if (operation == "DELETE" || !object.IsDefined() || !object.IsMap()) {
    return Response(uid, true, 200, "", "", {});
  }
  std::string ns = StringAt(review, {"request", "namespace"});
  ParsedDocument parsed = ParseDocument(object, absl::StrCat("admission:", uid),
                                        ns.empty() ? kDefaultNamespace : ns);
  std::vector<std::string> errors, warnings;
  xds::BuildOptions strict = options;
  strict.authority_policy = xds::BuildOptions::AuthorityPolicy::kEnforce;
  if (auto* resource = std::get_if<xds::ResourceObject>(&parsed)) {
    xds::BuildResult result = xds::BuildSnapshot({*resource}, authorities, nullptr, strict);
    for (const xds::ObjectStatus& status : result.statuses) {
      if (status.ref == resource->ref) Describe(status, &errors, &warnings);
    }
  } else if (auto* authority = std::get_if<xds::AuthorityObject>(&parsed)) {
    // Alone: a duplicate declaration depends on what exists, so is not denied.
    xds::BuildResult result = xds::BuildSnapshot({}, {*authority}, nullptr, strict);
    for (const xds::ObjectStatus& status : result.statuses) Describe(status, &errors, &warnings);
  } else if (auto* unusable = std::get_if<UnusableDocument>(&parsed)) {
    errors.push_back(unusable->message);
  }
  if (!errors.empty()) {
    // 403 Forbidden, as most admission webhooks deny: every kubectl prints
    // the message then. For 422 Invalid without field causes, kubectl before
    // 1.2x prints only "The request is invalid", losing the reason.
    return Response(uid, false, 403, "Forbidden", absl::StrJoin(errors, "; "), warnings);
  }
  return Response(uid, true, 200, "", "", warnings);
}

}  // namespace facet::controller
