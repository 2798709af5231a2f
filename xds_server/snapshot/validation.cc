#include "xds_server/snapshot/validation.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "re2/re2.h"
#include "xds_server/common/did_you_mean.h"
#include "xds_server/constraints/variant_set.h"
#include "xds_server/names/names.h"
#include "xds_server/resources/wire_check.h"

namespace facet::xds::internal {
namespace {

std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

void AddError(std::vector<Finding>* findings, absl::string_view reason, absl::string_view field,
              absl::string_view message) {
  findings->push_back(
      {Severity::kError, std::string(reason), std::string(field), std::string(message)});
}

void AddWarning(std::vector<Finding>* findings, absl::string_view reason, absl::string_view field,
                absl::string_view message) {
  findings->push_back(
      {Severity::kWarning, std::string(reason), std::string(field), std::string(message)});
}

std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// Renders a parameter set for messages, naming the keys it leaves out.
std::string DescribeParameters(const ParameterSet& params, const std::set<std::string>& keys) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : params) parts.push_back(absl::StrCat(key, "=", value));
  std::string out = absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
  std::vector<std::string> absent;
  for (const std::string& key : keys) {
    if (params.find(key) == params.end()) absent.push_back(key);
  }
  if (!absent.empty()) absl::StrAppend(&out, " (without ", absl::StrJoin(absent, ", "), ")");
  return out;
}

std::set<std::string> KeysOf(absl::Span<const Constraint* const> constraints) {
  std::set<std::string> keys;
  for (const Constraint* c : constraints) keys.insert(c->keys().begin(), c->keys().end());
  return keys;
}

std::string VariantField(size_t index) { return absl::StrCat("spec.variants[", index, "]"); }

// Returns the object path of `inside` (a field path in the resource of variant
// `index`; empty for the resource itself) as written: for a variant compiled
// from conditional elements, the path in the written resource it came from.
std::string WrittenResourceField(const std::shared_ptr<const ConditionalOrigin>& origin,
                                 const std::vector<size_t>& included, size_t index,
                                 absl::string_view inside) {
  if (origin == nullptr) {
    return absl::StrCat(VariantField(index), ".resource", inside.empty() ? "" : ".", inside);
  }
  const std::string written = LocateWritten(*origin, included, inside).path;
  return absl::StrCat(VariantField(origin->written_index), ".resource", written.empty() ? "" : ".",
                      written);
}

// Drops repeated findings: the variants compiled from one written resource
// share most of it, and so most of its problems.
void RemoveRepeatedFindings(std::vector<Finding>* findings) {
  std::vector<Finding> unique;
  for (Finding& finding : *findings) {
    if (std::find(unique.begin(), unique.end(), finding) == unique.end()) {
      unique.push_back(std::move(finding));
    }
  }
  *findings = std::move(unique);
}

const RE2& NamespacePattern() {
  static const RE2* const kPattern = new RE2(R"([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)");
  return *kPattern;
}

class ObjectValidatorImpl {
 public:
  explicit ObjectValidatorImpl(const BuildOptions& options) : options_(options) {}

  // Starts an object's status from what the source found while parsing it.
  template <typename Object>
  static ObjectStatus StatusOf(const Object& object) {
    ObjectStatus status;
    status.ref = object.ref;
    status.generation = object.generation;
    status.location = object.location;
    status.findings = object.findings;
    return status;
  }

  ObjectStatus CheckAuthority(const AuthorityObject& object) {
    ObjectStatus status = StatusOf(object);
    if (status.findings.empty()) {
      absl::StatusOr<std::string> probe =
          BuildXdstpName(object.authority, "envoy.config.listener.v3.Listener", "probe", {});
      if (!probe.ok()) {
        AddError(&status.findings, "InvalidSpec", "spec.authority", probe.status().message());
      }
      for (size_t i = 0; i < object.allowed_namespaces.size(); ++i) {
        const std::string& ns = object.allowed_namespaces[i];
        if (ns != "*" && !RE2::FullMatch(ns, NamespacePattern())) {
          AddError(&status.findings, "InvalidSpec", absl::StrCat("spec.allowedNamespaces[", i, "]"),
                   absl::StrCat(Quote(ns), " is not a namespace name (RFC 1123 label) or \"*\""));
        }
      }
      CheckAllowedClients(object, &status.findings);
      if (!status.has_errors()) {
        // Only a valid declaration claims the authority.
        auto [it, inserted] = authority_owner_.emplace(object.authority, object.ref);
        if (!inserted) {
          AddError(&status.findings, "DuplicateName", "spec.authority",
                   absl::StrCat("authority ", Quote(object.authority), " is already declared by ",
                                it->second.ToString()));
        }
      }
    }
    status.accepted = !status.has_errors();
    if (status.accepted) {
      for (const std::string& ns : object.allowed_namespaces) {
        admitted_[object.authority].insert(ns);
      }
      if (object.allowed_clients.has_value()) {
        restricted_[object.authority] = *object.allowed_clients;
      }
    }
    status.served_name = object.authority;
    return status;
  }

  static void CheckAllowedClients(const AuthorityObject& object, std::vector<Finding>* findings) {
    if (!object.allowed_clients.has_value()) return;
    const std::vector<AllowedClient>& clients = *object.allowed_clients;
    if (clients.empty()) {
      AddError(findings, "InvalidSpec", "spec.allowedClients",
               "is empty: list at least one client, or leave the field out to let every client "
               "read the authority's resources");
    } else if (clients.size() > kMaxAllowedClients) {
      AddError(findings, "InvalidSpec", "spec.allowedClients",
               absl::StrCat("has ", clients.size(), " entries; at most ", kMaxAllowedClients,
                            " are allowed (use a \"spiffe://<trust domain>/<path>/*\" prefix)"));
      return;
    }
    for (size_t i = 0; i < clients.size(); ++i) {
      const AllowedClient& client = clients[i];
      absl::Status valid = CheckAllowedClient(client);
      if (valid.ok()) continue;
      const bool spiffe = client.kind == AllowedClient::Kind::kSpiffeId;
      AddError(findings, "InvalidSpec",
               absl::StrCat("spec.allowedClients[", i, "].", spiffe ? "spiffeId" : "dnsName"),
               absl::StrCat(client.value.size() <= kMaxSpiffeIdBytes
                                ? absl::StrCat(Quote(absl::CHexEscape(client.value)), " ")
                                : "",
                            valid.message()));
    }
  }

  absl::StatusOr<std::string> ServedName(const ResourceSpec& spec, const ResourceType& type,
                                         std::vector<Finding>* findings) {
    if (spec.name.empty()) {
      AddError(findings, "InvalidSpec", "spec.name", "is required");
      return absl::InvalidArgumentError("");
    }
    if (!spec.authority.empty()) {
      if (IsXdstpName(spec.name)) {
        AddError(findings, "InvalidSpec", "spec.name",
                 "is a full xdstp:// name, so spec.authority must not be set as well");
        return absl::InvalidArgumentError("");
      }
      if (spec.name.find('#') != std::string::npos) {
        AddError(findings, "InvalidSpec", "spec.name",
                 "contains '#': processing directives (#entry, #alt) are not supported in "
                 "resource names");
        return absl::InvalidArgumentError("");
      }
      absl::StatusOr<std::string> name =
          BuildXdstpName(spec.authority, type.type_name(), spec.name, spec.context_params);
      if (!name.ok()) {
        AddError(findings, "InvalidSpec", "spec", name.status().message());
      }
      return name;
    }
    if (!spec.context_params.empty()) {
      AddError(findings, "InvalidSpec", "spec.contextParams",
               "context parameters need spec.authority (they are part of xdstp:// names only)");
      return absl::InvalidArgumentError("");
    }
    if (IsXdstpName(spec.name)) {
      absl::StatusOr<XdstpName> parsed = ParseXdstpName(spec.name);
      if (!parsed.ok()) {
        AddError(findings, "InvalidSpec", "spec.name", parsed.status().message());
        return parsed.status();
      }
      if (parsed->type != type.type_name()) {
        AddError(findings, "InvalidSpec", "spec.name",
                 absl::StrCat("the type in the name is ", Quote(parsed->type), " but spec.type is ",
                              type.type_name()));
        return absl::InvalidArgumentError("");
      }
      return parsed->ToString();
    }
    absl::StatusOr<std::string> name = NormalizeResourceName(spec.name);
    if (!name.ok()) AddError(findings, "InvalidSpec", "spec.name", name.status().message());
    return name;
  }

  // Validates one object's new revision on its own (authority admission
  // aside); sets `*served` when it is valid.
  ObjectStatus ValidateObject(const ResourceObject& object,
                              std::shared_ptr<ServedResource>* served, size_t* admission_at) {
    ObjectStatus status = StatusOf(object);
    if (!object.spec.has_value()) {
      if (!status.has_errors()) AddError(&status.findings, "InvalidSpec", "spec", "is missing");
      return status;
    }
    const ResourceSpec& spec = *object.spec;
    const ResourceType* type = FindResourceType(spec.type);
    if (type == nullptr) {
      std::vector<std::string> names;
      for (const ResourceType* known : AllResourceTypes()) {
        names.emplace_back(known->alias());
        names.emplace_back(known->type_name());
      }
      AddError(&status.findings, "InvalidSpec", "spec.type",
               absl::StrCat("unknown type ", Quote(spec.type), DidYouMean(spec.type, names),
                            "; expected one of ", DescribeResourceTypes()));
      return status;
    }
    absl::StatusOr<std::string> served_name = ServedName(spec, *type, &status.findings);
    if (!served_name.ok()) return status;
    status.served_name = *served_name;
    *admission_at = status.findings.size();

    if (spec.variants.empty()) {
      AddError(&status.findings, "InvalidSpec", "spec.variants", "needs at least one variant");
      return status;
    }
    if (static_cast<int>(spec.variants.size()) > options_.limits.max_variants_per_resource) {
      AddError(&status.findings, "TooComplex", "spec.variants",
               absl::StrCat("has ", spec.variants.size(), " variants; the limit is ",
                            options_.limits.max_variants_per_resource, " per resource"));
      return status;
    }

    auto resource = std::make_shared<ServedResource>();
    resource->type = type;
    resource->name = *served_name;
    resource->owner = object.ref;
    resource->generation = object.generation;
    std::vector<Constraint> constraints;
    std::map<std::string, size_t> labels;
    bool variants_ok = true;
    for (size_t i = 0; i < spec.variants.size(); ++i) {
      const VariantSpec& spec_variant = spec.variants[i];
      auto [it, inserted] = labels.emplace(spec_variant.label, i);
      if (!inserted) {
        AddError(&status.findings, "InvalidSpec", absl::StrCat(VariantField(i), ".name"),
                 absl::StrCat("duplicate variant name ", Quote(spec_variant.label),
                              " (also variants[", it->second, "])"));
        variants_ok = false;
      }
      std::shared_ptr<Variant> variant = ValidateVariant(*type, *served_name, spec_variant, i,
                                                         &status.findings);
      if (variant == nullptr) {
        variants_ok = false;
        continue;
      }
      constraints.push_back(variant->constraints);
      resource->variants.push_back(std::move(variant));
    }
    if (!spec.variants.empty() && spec.variants.front().origin != nullptr) {
      RemoveRepeatedFindings(&status.findings);
    }
    if (!variants_ok) return status;

    CheckVariantSetRules(spec, constraints, &status.findings);
    if (status.has_errors()) return status;
    *served = std::move(resource);
    return status;
  }

  std::shared_ptr<Variant> ValidateVariant(const ResourceType& type, const std::string& served_name,
                                           const VariantSpec& spec, size_t index,
                                           std::vector<Finding>* findings) {
    auto variant = std::make_shared<Variant>();
    variant->type = &type;
    variant->name = served_name;
    variant->label = spec.label;
    variant->origin = spec.origin;
    variant->included = spec.included;
    absl::StatusOr<Constraint> constraint = Constraint::Compile(spec.constraints, options_.limits);
    bool ok = true;
    if (!constraint.ok()) {
      AddError(findings,
               constraint.status().code() == absl::StatusCode::kResourceExhausted ? "TooComplex"
                                                                                  : "InvalidConstraints",
               spec.constraints_field.empty() ? VariantField(index) : spec.constraints_field,
               constraint.status().message());
      ok = false;
    } else {
      variant->constraints = *std::move(constraint);
    }
    const std::string resource_path = absl::StrCat(VariantField(index), ".resource");
    auto written = [&](absl::string_view inside) {
      return WrittenResourceField(spec.origin, spec.included, index, inside);
    };
    YAML::Node document = spec.resource;
    if (spec.endpoints_from.has_value()) {
      const std::string from_path = absl::StrCat(VariantField(index), ".endpointsFrom");
      if (&type != &ClusterLoadAssignmentType()) {
        AddError(findings, "InvalidSpec", from_path,
                 absl::StrCat("endpointsFrom builds a ClusterLoadAssignment; spec.type is ",
                              type.alias(), " (use type: endpoint)"));
        return nullptr;
      }
      if (!document.IsDefined() || document.IsNull()) {
        // Only facet controller, which watches EndpointSlices, resolves it.
        AddWarning(findings, "EndpointsFromService", from_path,
                   absl::StrCat("the endpoints come from the EndpointSlices of Service ",
                                Quote(spec.endpoints_from->service),
                                " in a cluster (facet controller); here the variant is checked "
                                "and served with no endpoints"));
        // Rebinds: assignment would write into the object's document, which
        // other threads may be reading.
        document.reset(YAML::Load("{}"));
      }
    }
    absl::StatusOr<std::unique_ptr<google::protobuf::Message>> message =
        DecodeResource(type, document, resource_path, served_name);
    if (!message.ok()) {
      // The message starts with the field path; split it off for the finding.
      std::string text(message.status().message());
      std::string field = resource_path;
      if (size_t colon = text.find(": "); colon != std::string::npos &&
                                          absl::StartsWith(text, resource_path)) {
        field = text.substr(0, colon);
        text = text.substr(colon + 2);
      }
      if (spec.origin != nullptr) {
        absl::string_view inside = absl::string_view(field).substr(resource_path.size());
        absl::ConsumePrefix(&inside, ".");
        field = written(inside);
      }
      AddError(findings, "InvalidResource", field, text);
      return nullptr;
    }
    absl::StatusOr<std::vector<ResourceReference>> references =
        type.References(**message, served_name);
    if (!references.ok()) {
      std::string text(references.status().message());
      std::string field = resource_path;
      if (size_t colon = text.find(": "); colon != std::string::npos) {
        field = written(text.substr(0, colon));
        text = text.substr(colon + 2);
      }
      AddError(findings, "InvalidResource", field, text);
      return nullptr;
    }
    std::vector<LintFinding> lint;
    type.Lint(**message, &lint);
    for (const LintFinding& finding : lint) {
      AddWarning(findings, "ClientCompatibility", written(finding.field), finding.message);
    }
    if (!ok) return nullptr;
    variant->references = *std::move(references);
    variant->serialized = DeterministicBytes(**message);
    // What every client parses: the bounds hold for the encoded form too,
    // and strings are UTF-8 (a relay or client refuses the response otherwise).
    if (std::optional<EncodedProblem> problem = CheckEncodedResource(type, variant->serialized)) {
      AddError(findings, "InvalidResource", written(problem->field), problem->reason);
      return nullptr;
    }
    variant->version = VariantVersion(type, served_name,
                                      DeterministicBytes(variant->constraints.proto()),
                                      variant->serialized);
    return variant;
  }

  // Returns the variant-set outcome for `constraints`, from `cache_` when
  // it holds one.
  std::shared_ptr<const VariantSetOutcome> DecideVariantSet(
      const std::vector<Constraint>& constraints) {
    std::string key;
    if (cache_ != nullptr) {
      for (const Constraint& c : constraints) {
        const std::string bytes = DeterministicBytes(c.proto());
        absl::StrAppend(&key, bytes.size(), ":", bytes);
      }
      if (std::shared_ptr<const VariantSetOutcome> held = cache_->Find(key)) return held;
    }
    variant_set_searched_ = true;
    auto outcome = std::make_shared<const VariantSetOutcome>(
        CheckVariantSet(constraints, options_.limits));
    if (budget_cut_ && outcome->status().code() == absl::StatusCode::kResourceExhausted) {
      deferred_ = true;  // Not this object's fault: not an outcome to keep.
      return outcome;
    }
    if (cache_ != nullptr) cache_->Insert(key, outcome);
    return outcome;
  }

  void CheckVariantSetRules(const ResourceSpec& spec, const std::vector<Constraint>& constraints,
                            std::vector<Finding>* findings) {
    std::vector<const Constraint*> pointers;
    for (const Constraint& c : constraints) pointers.push_back(&c);
    const std::set<std::string> keys = KeysOf(pointers);
    if (static_cast<int>(keys.size()) > options_.limits.max_keys_per_resource) {
      AddError(findings, "TooComplex", "spec.variants",
               absl::StrCat("the variants constrain ", keys.size(), " distinct keys; the limit is ",
                            options_.limits.max_keys_per_resource, " per resource"));
      return;
    }
    variant_set_ = DecideVariantSet(constraints);
    const VariantSetOutcome& report = *variant_set_;
    if (!report.ok()) {
      AddError(findings, "TooComplex", "spec.variants", report.status().message());
      return;
    }
    auto label = [&](size_t i) { return Quote(spec.variants[i].label); };
    for (const auto& mismatch : report->key_set_mismatches) {
      AddError(findings, "KeySetMismatch", VariantField(mismatch.b),
               absl::StrCat("variant ", label(mismatch.b), " constrains keys {",
                            absl::StrJoin(mismatch.keys_b, ", "), "} but variant ",
                            label(mismatch.a), " constrains {",
                            absl::StrJoin(mismatch.keys_a, ", "),
                            "}; every variant of a resource must constrain the same key set "
                            "(use exists: false for clients that do not send a key)"));
    }
    for (const auto& overlap : report->overlaps) {
      AddError(findings, "OverlappingVariants", VariantField(overlap.b),
               absl::StrCat("variants ", label(overlap.a), " and ", label(overlap.b),
                            " overlap: both match ", DescribeParameters(overlap.witness, keys),
                            "; the constraints of a resource's variants must be mutually "
                            "exclusive"));
    }
    if (report->overlaps_truncated) {
      AddError(findings, "OverlappingVariants", "spec.variants",
               "more overlapping pairs exist than are listed");
    }
    if (report->gap.has_value() && findings_have_no_errors(*findings)) {
      AddWarning(findings, "VariantGap", "spec.variants",
                 absl::StrCat("gap: no variant matches ", DescribeParameters(*report->gap, keys),
                              "; clients sending such parameters will see \"does not exist\""));
    }
  }

  static bool findings_have_no_errors(const std::vector<Finding>& findings) {
    return std::none_of(findings.begin(), findings.end(),
                        [](const Finding& f) { return f.severity == Severity::kError; });
  }

  std::vector<Finding> CheckReferences(const ServedResource& resource, ReferenceLookup lookup,
                                       const RejectedLookup* rejected) {
    std::vector<Finding> problems;
    for (size_t v = 0; v < resource.variants.size(); ++v) {
      const Variant& variant = *resource.variants[v];
      for (const ResourceReference& ref : variant.references) {
        // A reference in a conditional element is reported at the element's
        // condition, which is what made the variant include it.
        std::string field = absl::StrCat(VariantField(v), ".resource.", ref.field);
        std::string in_element;
        if (variant.origin != nullptr) {
          const WrittenLocation at = LocateWritten(*variant.origin, variant.included, ref.field);
          field = WrittenResourceField(variant.origin, variant.included, v, ref.field);
          if (at.element >= 0) {
            const ConditionalElement& element = variant.origin->elements[at.element];
            field = absl::StrCat(VariantField(variant.origin->written_index), ".resource.",
                                 element.path, ".", element.condition_field);
            if (!at.below_element.empty()) in_element = absl::StrCat(at.below_element, ": ");
          }
        }
        absl::StatusOr<std::string> target_name = NormalizeResourceName(ref.name);
        if (!target_name.ok()) {
          AddError(&problems, "DanglingReference", field,
                   absl::StrCat(in_element, target_name.status().message()));
          continue;
        }
        const ServedResource* found = lookup(ref.target, *target_name);
        const ObjectRef* rejected_owner =
            found == nullptr && rejected != nullptr ? (*rejected)(ref.target, *target_name)
                                                    : nullptr;
        if (rejected_owner != nullptr) {
          // The cause is the other object's: point there, not at a typo here.
          problems.push_back({Severity::kError, "DanglingReference", field,
                              absl::StrCat(in_element, "references ", ref.target->alias(), " ",
                                           Quote(*target_name), ", which is rejected (see ",
                                           rejected_owner->ToString(), ")"),
                              *rejected_owner});
          continue;
        }
        if (found == nullptr) {
          AddError(&problems, "DanglingReference", field,
                   absl::StrCat(in_element, "dangling reference: ", ref.target->alias(), " ",
                                Quote(*target_name), " is not served"));
          continue;
        }
        const ServedResource& target = *found;
        std::vector<const Constraint*> targets;
        for (const auto& tv : target.variants) targets.push_back(&tv->constraints);
        const Constraint* self = &variant.constraints;
        absl::StatusOr<std::optional<ParameterSet>> uncovered =
            FindParameterSet(absl::MakeConstSpan(&self, 1), targets, options_.limits);
        if (!uncovered.ok()) {
          AddError(&problems, "TooComplex", field, uncovered.status().message());
        } else if (uncovered->has_value()) {
          std::set<std::string> keys = KeysOf(targets);
          keys.insert(self->keys().begin(), self->keys().end());
          AddError(&problems, "DanglingReference", field,
                   absl::StrCat(in_element, "dangling reference: clients with parameters ",
                                DescribeParameters(**uncovered, keys), " select variant ",
                                Quote(variant.label), ", but no variant of ", ref.target->alias(),
                                " ", Quote(*target_name), " (", target.owner.ToString(),
                                ") matches them"));
        }
      }
    }
    if (!resource.variants.empty() && resource.variants.front()->origin != nullptr) {
      RemoveRepeatedFindings(&problems);
    }
    return problems;
  }

  const BuildOptions& options_;
  VariantSetCache* cache_ = nullptr;
  // Whether the build's budget left this object less than its own.
  bool budget_cut_ = false;
  bool deferred_ = false;
  std::shared_ptr<const VariantSetOutcome> variant_set_;
  bool variant_set_searched_ = false;
  absl::flat_hash_map<std::string, ObjectRef> authority_owner_;
  std::map<std::string, std::set<std::string>> admitted_;  // Filled by CheckAuthority.
  ClientAccess::Restrictions restricted_;                  // Filled by CheckAuthority.

 public:
  // Returns what CheckAuthority() found each authority admits.
  std::map<std::string, std::set<std::string>> TakeAdmitted() { return std::move(admitted_); }
  // Returns what CheckAuthority() found each restricted authority allows.
  ClientAccess::Restrictions TakeRestricted() { return std::move(restricted_); }
};

}  // namespace

std::vector<ObjectStatus> CheckAuthorities(absl::Span<const AuthorityObject* const> objects,
                                           const BuildOptions& options, AuthorityTable* table) {
  ObjectValidatorImpl validator(options);
  std::vector<ObjectStatus> statuses;
  statuses.reserve(objects.size());
  for (const AuthorityObject* object : objects) statuses.push_back(validator.CheckAuthority(*object));
  table->admitted = validator.TakeAdmitted();
  ClientAccess::Restrictions restricted = validator.TakeRestricted();
  table->access =
      restricted.empty() ? nullptr : std::make_shared<const ClientAccess>(std::move(restricted));
  table->enforce =
      options.authority_policy == BuildOptions::AuthorityPolicy::kEnforce ||
      (options.authority_policy == BuildOptions::AuthorityPolicy::kEnforceWhenDeclared &&
       !objects.empty());
  return statuses;
}

namespace {

// `options` with a fresh per-object search budget drawn from `*budget`.
BuildOptions WithObjectBudget(const BuildOptions& options, int64_t* budget) {
  BuildOptions out = options;
  *budget = options.limits.object_search_steps;
  out.limits.object_budget = budget;
  return out;
}

}  // namespace

std::shared_ptr<const VariantSetOutcome> VariantSetCache::Find(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = outcomes_.find(key);
  return it == outcomes_.end() ? nullptr : it->second.lock();
}

void VariantSetCache::Insert(const std::string& key,
                             const std::shared_ptr<const VariantSetOutcome>& outcome) {
  absl::MutexLock lock(&mu_);
  outcomes_[key] = outcome;
  if (outcomes_.size() < sweep_at_) return;
  for (auto it = outcomes_.begin(); it != outcomes_.end();) {
    if (it->second.expired()) {
      outcomes_.erase(it++);
    } else {
      ++it;
    }
  }
  sweep_at_ = std::max<size_t>(64, 2 * outcomes_.size());
}

size_t VariantSetCache::size() const {
  absl::MutexLock lock(&mu_);
  return outcomes_.size();
}

OwnValidation ValidateResourceObject(const ResourceObject& object, const BuildOptions& options,
                                     VariantSetCache* cache, std::atomic<int64_t>* build_budget) {
  int64_t budget = 0;
  const BuildOptions budgeted = WithObjectBudget(options, &budget);
  if (build_budget != nullptr) {
    // Once the build's budget is spent, an object still gets enough for
    // small variant sets, so that only expensive ones wait for a later build.
    constexpr int64_t kLeastObjectSteps = 4096;
    budget = std::min(budget, std::max<int64_t>(build_budget->load(), kLeastObjectSteps));
  }
  const int64_t granted = budget;
  ObjectValidatorImpl validator(budgeted);
  validator.cache_ = cache;
  validator.budget_cut_ = granted < options.limits.object_search_steps;
  OwnValidation out;
  std::shared_ptr<ServedResource> resource;
  size_t admission_at = 0;
  ObjectStatus status = validator.ValidateObject(object, &resource, &admission_at);
  out.findings = std::move(status.findings);
  out.served_name = std::move(status.served_name);
  out.admission_at = std::min(admission_at, out.findings.size());
  if (resource != nullptr) out.resource = std::move(resource);
  out.variant_set = std::move(validator.variant_set_);
  out.variant_set_searched = validator.variant_set_searched_;
  if (object.spec.has_value()) out.type = FindResourceType(object.spec->type);
  out.search_steps = std::max<int64_t>(granted - budget, 0);
  if (build_budget != nullptr) *build_budget -= out.search_steps;
  if (validator.deferred_) {
    OwnValidation deferred;
    deferred.deferred = true;
    deferred.search_steps = out.search_steps;
    return deferred;
  }
  return out;
}

void CheckAdmission(const ObjectRef& ref, absl::string_view served_name,
                    const AuthorityTable& table, const BuildOptions& options,
                    std::vector<Finding>* findings) {
  if (!IsXdstpName(served_name)) {
    if (!options.allow_old_style_names) {
      AddError(findings, "AuthorityNotAllowed", "spec.name",
               "old-style (non-xdstp) names are not allowed by this Facet's configuration; set "
               "spec.authority");
    }
    return;
  }
  absl::StatusOr<XdstpName> parsed = ParseXdstpName(served_name);
  if (!parsed.ok()) return;
  auto it = table.admitted.find(parsed->authority);
  const bool declared = it != table.admitted.end();
  const bool admitted =
      declared && (it->second.count("*") > 0 || it->second.count(ref.namespace_) > 0);
  if (admitted) return;
  if (table.enforce) {
    AddError(findings, "AuthorityNotAllowed", "spec.authority",
             declared ? absl::StrCat("authority ", Quote(parsed->authority),
                                     " does not admit namespace ", Quote(ref.namespace_),
                                     " (see its XdsAuthority spec.allowedNamespaces)")
                      : absl::StrCat("no XdsAuthority declares authority ",
                                     Quote(parsed->authority)));
  } else {
    AddWarning(findings, "AuthorityNotAllowed", "spec.authority",
               declared ? absl::StrCat("authority ", Quote(parsed->authority),
                                       " does not admit namespace ", Quote(ref.namespace_),
                                       "; Facet refuses this object wherever XdsAuthority objects are declared")
                        : absl::StrCat("no XdsAuthority in the input declares authority ",
                                       Quote(parsed->authority),
                                       "; Facet refuses it wherever XdsAuthority objects are declared"));
  }
}

std::vector<Finding> CheckReferences(const ServedResource& resource, ReferenceLookup lookup,
                                     const BuildOptions& options, const RejectedLookup* rejected) {
  int64_t budget = 0;
  const BuildOptions budgeted = WithObjectBudget(options, &budget);
  ObjectValidatorImpl validator(budgeted);
  return validator.CheckReferences(resource, lookup, rejected);
}

bool HasErrors(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.severity == Severity::kError; });
}

}  // namespace facet::xds::internal
