#include "controller/kubernetes/status/status_writer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "controller/kubernetes/status/condition_fields.h"
#include "controller/objects/crd.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "spdlog/spdlog.h"
#include "xds_server/json/yaml_json.h"

namespace facet::controller {
namespace {

using status_internal::StringNode;
using status_internal::TransitionTime;
using status_internal::Truncate;

constexpr size_t kMaxNacksPerVariant = 32;
// Bounds on the lists that grow with variants and clients, so a status stays
// far below etcd's object size (1.5 MiB): about 700 KiB at most.
constexpr size_t kMaxListedVariants = 256;
constexpr size_t kMaxNacksPerObject = 32;
// The CRD bounds status.variants[].nacks[].detail and status.warnings[].
constexpr size_t kMaxDetail = 4096;
constexpr size_t kMaxWarnings = 64;
// The conditional elements listed per compiled variant, and the length of
// each path (the CRD bounds status.variants[].includes[]).
constexpr size_t kMaxListedIncludes = 8;
constexpr size_t kMaxPath = 256;

std::string Describe(const std::vector<const xds::Finding*>& findings) {
  return Truncate(absl::StrJoin(findings, "; ", [](std::string* out, const xds::Finding* f) {
    absl::StrAppend(out, f->field.empty() ? "" : f->field + ": ", f->message);
  }));
}

YAML::Node Condition(const std::string& type, const std::string& status, const std::string& reason,
                     const std::string& message, int64_t generation, const YAML::Node& current,
                     absl::Time now) {
  YAML::Node condition;
  condition["type"] = StringNode(type);
  condition["status"] = StringNode(status);
  condition["reason"] = StringNode(reason);
  condition["message"] = StringNode(message);
  condition["observedGeneration"] = generation;
  condition["lastTransitionTime"] =
      StringNode(TransitionTime(kube::Field(current, "conditions"), type, status, now));
  return condition;
}

absl::StatusOr<google::protobuf::Value> ToValue(const YAML::Node& node) {
  absl::StatusOr<std::string> json = json::YamlToJson(node, "status");
  if (!json.ok()) return json.status();
  google::protobuf::Value value;
  auto status = google::protobuf::util::JsonStringToMessage(*json, &value);
  if (!status.ok()) return absl::InternalError(std::string(status.message()));
  return value;
}

// Whether `status.<list>` holds an entry of Facet's controller.
bool HasEntriesOf(const YAML::Node& status, absl::string_view list) {
  const YAML::Node entries = kube::Field(status, list);
  if (!entries.IsDefined() || !entries.IsSequence()) return false;
  for (const YAML::Node& entry : entries) {
    if (kube::StringAt(entry, {"controllerName"}) == gateway::kControllerName) return true;
  }
  return false;
}

}  // namespace

YAML::Node DesiredStatus(const xds::ObjectStatus& status, const YAML::Node& current,
                         const ClientFeedback& feedback, int authority_resources, absl::Time now) {
  std::vector<const xds::Finding*> invalid, dangling, warnings;
  for (const xds::Finding& finding : status.findings) {
    if (finding.severity == xds::Severity::kWarning) {
      warnings.push_back(&finding);
    } else if (finding.reason == "DanglingReference") {
      dangling.push_back(&finding);
    } else {
      invalid.push_back(&finding);
    }
  }
  const int64_t generation = status.generation;
  YAML::Node out;
  out["observedGeneration"] = generation;
  YAML::Node conditions(YAML::NodeType::Sequence);
  if (invalid.empty()) {
    conditions.push_back(Condition("Accepted", "True", "Accepted", "the spec is valid",
                                   generation, current, now));
  } else {
    conditions.push_back(Condition("Accepted", "False", invalid.front()->reason,
                                   Describe(invalid), generation, current, now));
  }
  if (status.ref.kind == xds::kXdsAuthorityKind) {
    out["resources"] = authority_resources;
    out["conditions"] = conditions;
    return out;
  }
  if (!invalid.empty()) {
    conditions.push_back(Condition("ResolvedRefs", "Unknown", "NotValidated",
                                   "references are checked once the spec is valid", generation,
                                   current, now));
  } else if (!dangling.empty()) {
    conditions.push_back(Condition("ResolvedRefs", "False", "DanglingReference",
                                   Describe(dangling), generation, current, now));
  } else {
    conditions.push_back(Condition("ResolvedRefs", "True", "ResolvedRefs",
                                   "every reference resolves for every parameter set", generation,
                                   current, now));
  }
  if (status.accepted) {
    conditions.push_back(Condition(
        "Programmed", "True", "Programmed",
        absl::StrCat("serving ", status.variants.size(), " variant(s) of generation ", generation),
        generation, current, now));
  } else if (status.serving_previous) {
    conditions.push_back(Condition("Programmed", "False", "ServingPreviousRevision",
                                   "this generation is rejected; the last accepted revision keeps "
                                   "serving",
                                   generation, current, now));
  } else {
    conditions.push_back(Condition("Programmed", "False", "NotServing",
                                   "nothing of this object is served", generation, current, now));
  }
  if (!status.served_name.empty()) out["servedName"] = StringNode(status.served_name);
  out["variantCount"] = static_cast<int>(status.variants.size());
  out["conditions"] = conditions;
  YAML::Node variants(YAML::NodeType::Sequence);
  size_t nacks_listed = 0;
  int nacks_omitted = 0;
  for (const auto& variant : status.variants) {
    if (variants.size() >= kMaxListedVariants) {
      // Not listed: neither are its NACKs.
      for (const auto& [key, records] : feedback.nacks) {
        if (std::get<1>(key) == status.served_name && std::get<2>(key) == variant->version) {
          nacks_omitted += static_cast<int>(records.size());
        }
      }
      continue;
    }
    YAML::Node v;
    v["name"] = StringNode(variant->label);
    v["version"] = StringNode(variant->version);
    v["constraints"] = StringNode(variant->constraints.ToString());
    if (variant->origin != nullptr) {
      // The conditional elements ("@when") this compiled variant includes.
      YAML::Node includes(YAML::NodeType::Sequence);
      for (size_t element : variant->included) {
        if (includes.size() >= kMaxListedIncludes) break;
        includes.push_back(StringNode(Truncate(variant->origin->elements[element].path, kMaxPath)));
      }
      v["includes"] = includes;
      if (variant->included.size() > includes.size()) {
        v["includesOmitted"] = static_cast<int>(variant->included.size() - includes.size());
      }
    }
    // The variant's type URL is not in ObjectStatus; match on name + version.
    int clients = 0;
    YAML::Node nacks(YAML::NodeType::Sequence);
    for (const auto& [key, count] : feedback.clients) {
      if (std::get<1>(key) == status.served_name && std::get<2>(key) == variant->version) {
        clients += count;
      }
    }
    for (const auto& [key, records] : feedback.nacks) {
      if (std::get<1>(key) != status.served_name || std::get<2>(key) != variant->version) continue;
      for (const auto& record : records) {
        if (nacks.size() >= kMaxNacksPerVariant || nacks_listed >= kMaxNacksPerObject) {
          ++nacks_omitted;
          continue;
        }
        ++nacks_listed;
        YAML::Node n;
        n["client"] = StringNode(record.node_id);
        n["version"] = StringNode(record.version);
        n["detail"] = StringNode(Truncate(record.error_detail, kMaxDetail));
        nacks.push_back(n);
      }
    }
    v["clients"] = clients;
    if (nacks.size() > 0) v["nacks"] = nacks;
    variants.push_back(v);
  }
  if (variants.size() > 0) out["variants"] = variants;
  // Say what the bounds left out.
  if (status.variants.size() > variants.size()) {
    out["variantsOmitted"] = static_cast<int>(status.variants.size() - variants.size());
  }
  if (nacks_omitted > 0) out["nacksOmitted"] = nacks_omitted;
  if (!warnings.empty()) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const xds::Finding* finding : warnings) {
      if (list.size() >= kMaxWarnings) break;
      list.push_back(StringNode(Truncate(
          absl::StrCat(finding->field.empty() ? "" : finding->field + ": ", finding->message),
          kMaxDetail)));
    }
    out["warnings"] = list;
  }
  return out;
}

bool SameStatus(const YAML::Node& a, const YAML::Node& b) {
  if (!a.IsDefined() || !b.IsDefined()) return a.IsDefined() == b.IsDefined();
  absl::StatusOr<google::protobuf::Value> va = ToValue(a);
  absl::StatusOr<google::protobuf::Value> vb = ToValue(b);
  return va.ok() && vb.ok() && google::protobuf::util::MessageDifferencer::Equals(*va, *vb);
}

absl::StatusOr<bool> StatusWriter::ReadModifyWrite(
    const xds::ObjectRef& ref, const YAML::Node* cached,
    const std::function<YAML::Node(const YAML::Node& object)>& desired_status) {
  const std::string path = ObjectPath(ref);
  for (int attempt = 0; attempt < 5; ++attempt) {
    // The watch cache first; the API server only after a conflict.
    absl::StatusOr<YAML::Node> object = attempt == 0 && cached != nullptr && cached->IsDefined()
                                            ? absl::StatusOr<YAML::Node>(*cached)
                                            : client_.Get(path);
    if (!object.ok()) {
      if (object.status().code() == absl::StatusCode::kNotFound) return false;
      return object.status();
    }
    YAML::Node copy = YAML::Clone(*object);
    YAML::Node current = kube::Field(copy, "status");
    YAML::Node desired = desired_status(copy);
    if (SameStatus(current, desired)) return false;
    copy["status"] = desired;
    absl::StatusOr<std::string> json = json::YamlToJson(copy, path);
    if (!json.ok()) return json.status();
    absl::StatusOr<YAML::Node> updated = client_.Update(path + "/status", *json);
    if (updated.ok()) return true;
    if (updated.status().code() == absl::StatusCode::kNotFound) return false;
    if (updated.status().code() != absl::StatusCode::kAborted) return updated.status();
    // Conflict: someone changed the object; read it again and recompute.
  }
  return absl::AbortedError(absl::StrCat("status of ", ref.ToString(),
                                         ": still conflicting after 5 attempts"));
}

absl::StatusOr<bool> StatusWriter::Sync(const xds::ObjectStatus& status,
                                        const ClientFeedback& feedback, int authority_resources,
                                        const YAML::Node* cached) {
  return ReadModifyWrite(status.ref, cached, [&](const YAML::Node& object) {
    return DesiredStatus(status, kube::Field(object, "status"), feedback, authority_resources,
                         wall_now_());
  });
}

absl::StatusOr<bool> StatusWriter::SyncRouteStatus(const gateway::GatewayStatus& route,
                                                   const YAML::Node* cached) {
  return ReadModifyWrite(route.object, cached, [&](const YAML::Node& object) {
    const YAML::Node current = kube::Field(object, "status");
    // Another controller's route: left as it is.
    if (route.parents.empty() && !HasEntriesOf(current, "parents")) return current;
    return DesiredRouteStatus(current, route, gateway::kControllerName, wall_now_());
  });
}

absl::StatusOr<bool> StatusWriter::SyncPolicyStatus(const gateway::GatewayStatus& policy,
                                                    const YAML::Node* cached) {
  return ReadModifyWrite(policy.object, cached, [&](const YAML::Node& object) {
    const YAML::Node current = kube::Field(object, "status");
    if (policy.ancestors.empty() && !HasEntriesOf(current, "ancestors")) return current;
    return DesiredPolicyStatus(current, policy, gateway::kControllerName, wall_now_());
  });
}

}  // namespace facet::controller
