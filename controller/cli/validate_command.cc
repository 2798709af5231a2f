#include "controller/cli/validate_command.h"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/gateway/model/gateway_status.h"
#include "controller/cli/flags.h"
#include "controller/sources/manifest/manifest_build.h"
#include "controller/sources/manifest/manifest_loader.h"
#include "xds_server/common/log_text.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/incremental_builder.h"

namespace facet::controller {
namespace {

using xds::EscapeText;

constexpr char kUsage[] =
    "usage: facet validate [--no-warnings] [--gateway-client-namespace-param KEY] PATH...\n"
    "  Checks Facet manifests (files or directories of *.yaml, *.yml, *.json) with every\n"
    "  rule the server applies. Prints one line per problem:\n"
    "    namespace/name: field: reason            (rejected)\n"
    "    namespace/name: field: warning: reason   (served, but worth fixing)\n"
    "  GRPCRoutes attached to a Service print their status, one line per cause:\n"
    "    namespace/name: field: Accepted=False Reason: message            (rejected)\n"
    "    namespace/name: field: warning: ResolvedRefs=False Reason: message\n"
    "  XdsVariantPolicies print their status the same way, one line per target not applied:\n"
    "    namespace/name: spec.targetRefs[0]: Accepted=False Reason: message   (rejected)\n"
    "  A problem with a Service, EndpointSlice or ReferenceGrant is a warning (Facet\n"
    "  ignores the object).\n"
    "  A resource with conditional elements (@when) is followed by the variants it compiles to:\n"
    "    namespace/name: spec.variants[0].resource: compiles to N variants\n"
    "      label: constraints; includes: paths of the @when elements it includes\n"
    "  --gateway-client-namespace-param KEY: the client parameter holding a client's\n"
    "  namespace, for GRPCRoutes in another namespace than their parent Service (default:\n"
    "  namespace; empty: they are Accepted=False ConsumerRoutesDisabled).\n"
    "  Exit status: 0 valid (warnings allowed), 1 something is rejected, 2 unreadable input.\n";

// Prints the variants an accepted resource compiled from conditional
// elements, so that what will be served can be reviewed. Everything taken
// from the input is printed through EscapeText: one line per problem, whatever
// names and messages hold.
void PrintCompiledVariants(const xds::ObjectStatus& status, std::ostream& out) {
  if (status.variants.empty() || status.variants.front()->origin == nullptr) return;
  const xds::ConditionalOrigin& origin = *status.variants.front()->origin;
  out << EscapeText(status.ref.ToString()) << ": spec.variants[" << origin.written_index
      << "].resource: compiles to " << status.variants.size() << " variant"
      << (status.variants.size() == 1 ? "" : "s") << " from " << origin.conditions.size()
      << " distinct condition" << (origin.conditions.size() == 1 ? "" : "s") << "\n";
  for (const auto& variant : status.variants) {
    std::vector<std::string> includes;
    for (size_t element : variant->included) {
      includes.push_back(EscapeText(origin.elements[element].path));
    }
    out << "  " << EscapeText(variant->label) << ": "
        << (variant->constraints.unconstrained() ? "(every client)"
                                                 : variant->constraints.ToString())
        << "; includes: "
        << (includes.empty() ? "no conditional element" : absl::StrJoin(includes, ", ")) << "\n";
  }
}

// Keeps what a run read and built (the objects, the builder's state) until
// the process exits instead of freeing it: `facet validate` exits right
// after, and freeing the documents of a large input took about a third of
// its time, the builder's state another 3% (12,000 objects; LLVM's
// -disable-free does the same for the compiler). Reachable from a static, so
// leak checkers do not report it. Thread-compatible.
void KeepUntilExit(ManifestSet manifests, ManifestBuild build) {
  struct Kept {
    ManifestSet manifests;
    ManifestBuild build;
  };
  static auto* const kept = new std::vector<std::unique_ptr<Kept>>();
  kept->push_back(std::make_unique<Kept>(Kept{std::move(manifests), std::move(build)}));
}

}  // namespace

int RunValidate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> paths;
  bool warnings = true;
  gateway::TranslateOptions gateway;
  const std::string namespace_flag = absl::StrCat("--", kGatewayClientNamespaceParamFlag);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      out << kUsage;
      return kValidateOk;
    } else if (arg == "--no-warnings") {
      warnings = false;
    } else if (absl::StartsWith(arg, namespace_flag + "=")) {
      gateway.client_namespace_param = arg.substr(namespace_flag.size() + 1);
    } else if (arg == namespace_flag) {
      if (i + 1 >= args.size()) {
        err << "facet validate: " << namespace_flag << " needs a value\n" << kUsage;
        return kValidateUnreadable;
      }
      gateway.client_namespace_param = args[++i];
    } else if (absl::StartsWith(arg, "-") && arg != "-") {
      err << "facet validate: unknown flag " << arg << "\n" << kUsage;
      return kValidateUnreadable;
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.empty()) {
    err << "facet validate: no PATH given\n" << kUsage;
    return kValidateUnreadable;
  }

  BulkLoadAllocation allocation;
  ManifestSet manifests = LoadManifests(paths);
  bool unreadable = false;
  bool rejected = false;
  int warning_count = 0;
  for (const ManifestProblem& problem : manifests.problems) {
    switch (problem.kind) {
      case ManifestProblem::Kind::kUnreadable:
        unreadable = true;
        out << EscapeText(problem.location) << ": " << EscapeText(problem.message) << "\n";
        break;
      case ManifestProblem::Kind::kError:
        rejected = true;
        out << EscapeText(problem.location) << ": " << EscapeText(problem.message) << "\n";
        break;
      case ManifestProblem::Kind::kWarning:
        ++warning_count;
        if (warnings) {
          out << EscapeText(problem.location) << ": warning: " << EscapeText(problem.message)
              << "\n";
        }
        break;
    }
  }

  xds::BuildOptions options;
  // Offline, authorities are enforced only when the input declares some.
  options.authority_policy = xds::BuildOptions::AuthorityPolicy::kEnforceWhenDeclared;
  ManifestBuild build = BuildManifests(manifests, options, gateway);
  // The objects read; those generated from Gateway API objects apart (what
  // they say reaches the GRPCRoutes' statuses below).
  std::vector<std::shared_ptr<const xds::ObjectStatus>> statuses;
  std::vector<std::shared_ptr<const xds::ObjectStatus>> generated;
  for (std::shared_ptr<const xds::ObjectStatus>& status : build.builder->Statuses()) {
    (status->ref.kind == xds::kGeneratedKind ? generated : statuses).push_back(std::move(status));
  }
  size_t objects = statuses.size();
  size_t accepted = 0;
  int object_errors = 0;
  // Prints one finding: "namespace/name: field: [warning: ]<prefix>message".
  auto print = [&](const xds::ObjectRef& ref, const xds::Finding& finding, bool is_warning,
                   absl::string_view prefix) {
    if (is_warning) {
      ++warning_count;
      if (!warnings) return;
    } else {
      ++object_errors;
    }
    out << EscapeText(ref.ToString()) << ": "
        << (finding.field.empty() ? "-" : EscapeText(finding.field)) << ": "
        << (is_warning ? "warning: " : "") << prefix << EscapeText(finding.message) << "\n";
  };
  // An object rejected for referring to a rejected object prints after it.
  for (const xds::ObjectStatus* object : xds::CausesFirst(statuses)) {
    const xds::ObjectStatus& status = *object;
    if (status.accepted) ++accepted;
    for (const xds::Finding& finding : status.findings) {
      print(status.ref, finding, finding.severity == xds::Severity::kWarning, "");
    }
    if (!status.accepted) rejected = true;
    if (status.accepted) PrintCompiledVariants(status, out);
  }
  // The objects generated from the Gateway API objects: what they say
  // reaches the GRPCRoutes' statuses below (a name an XdsResource holds is
  // Conflicted there), but for an error of the translation's own making.
  for (const auto& status : generated) {
    for (const xds::Finding& finding : status->findings) {
      if (finding.severity != xds::Severity::kError || finding.reason == "DuplicateName") continue;
      print(status->ref, finding, /*is_warning=*/false, "");
      rejected = true;
    }
  }
  // A GRPCRoute attached to a Service prints its status: a line per cause of
  // a condition that is not True (Accepted=False rejects the input,
  // ResolvedRefs=False is a warning), and the notes of True ones as
  // warnings; a cause several parents share once, with the reason of the
  // first parent the route attached to (a parent that rejects the route
  // lists the route's own causes under its reason too).
  auto print_route = [&](const gateway::GatewayStatus& status) {
    bool route_accepted = true;
    std::set<std::pair<std::string, std::string>> printed;  // Field, message.
    std::vector<const gateway::ParentStatus*> parents;
    for (bool attached : {true, false}) {
      for (const gateway::ParentStatus& parent : status.parents) {
        const bool rejected = std::any_of(
            parent.conditions.begin(), parent.conditions.end(), [](const auto& condition) {
              return condition.type == gateway::kConditionAccepted &&
                     (condition.reason == gateway::kReasonNoMatchingParent ||
                      condition.reason == gateway::kReasonConsumerRoutesDisabled);
            });
        if (rejected != attached) parents.push_back(&parent);
      }
    }
    for (const gateway::ParentStatus* parent : parents) {
      for (const gateway::Condition& condition : parent->conditions) {
        const bool is_true = condition.status == gateway::kStatusTrue;
        const bool is_error = !is_true && condition.type == gateway::kConditionAccepted;
        route_accepted = route_accepted && !is_error;
        const std::string prefix = is_true ? ""
                                           : absl::StrCat(condition.type, "=", condition.status,
                                                          " ", condition.reason, ": ");
        for (const gateway::ConditionCause& cause : condition.causes) {
          if (!printed.emplace(cause.field, cause.message).second) continue;
          print(status.object,
                {is_error ? xds::Severity::kError : xds::Severity::kWarning, condition.reason,
                 cause.field, cause.message},
                !is_error, EscapeText(prefix));
        }
      }
    }
    return route_accepted;
  };
  // An XdsVariantPolicy prints its status: a line per cause of an ancestor
  // that is not Accepted (Conflicted, TargetNotFound, Invalid), each cause
  // once; any of them rejects the input.
  auto print_policy = [&](const gateway::GatewayStatus& status) {
    bool policy_accepted = true;
    std::set<std::pair<std::string, std::string>> printed;  // Field, message.
    for (const gateway::AncestorStatus& ancestor : status.ancestors) {
      for (const gateway::Condition& condition : ancestor.conditions) {
        if (condition.status == gateway::kStatusTrue) continue;
        policy_accepted = false;
        const std::string prefix =
            absl::StrCat(condition.type, "=", condition.status, " ", condition.reason, ": ");
        for (const gateway::ConditionCause& cause : condition.causes) {
          if (!printed.emplace(cause.field, cause.message).second) continue;
          print(status.object,
                {xds::Severity::kError, condition.reason, cause.field, cause.message},
                /*is_warning=*/false, EscapeText(prefix));
        }
      }
    }
    return policy_accepted;
  };
  // The Gateway API objects and XdsVariantPolicies as read. A GRPCRoute
  // with no Service parent, or a policy, with errors is not Accepted: the
  // input is rejected. Services, EndpointSlices and ReferenceGrants are not
  // Facet's: one with errors is ignored, a warning.
  for (const gateway::GatewayObject& object : manifests.gateway_objects) {
    if (object.ref.kind == gateway::kGrpcRouteKind) {
      const auto status = build.front_end->StatusOf(object.ref);
      if (status != nullptr && !status->parents.empty()) {
        ++objects;
        if (print_route(*status)) {
          ++accepted;
        } else {
          rejected = true;
        }
        continue;
      }
    }
    // A policy that parsed prints its status; one with errors its findings.
    if (object.ref.kind == gateway::kXdsVariantPolicyKind && !object.has_errors()) {
      const auto status = build.front_end->StatusOf(object.ref);
      if (status != nullptr && !status->ancestors.empty()) {
        ++objects;
        for (const xds::Finding& finding : object.findings) {
          print(object.ref, finding, /*is_warning=*/true, "");
        }
        if (print_policy(*status)) {
          ++accepted;
        } else {
          rejected = true;
        }
        continue;
      }
    }
    const bool read_only = gateway::IsReadOnlyKind(object.ref.kind);
    const std::string ignored = absl::StrCat("ignored: invalid ", object.ref.kind, ": ");
    for (const xds::Finding& finding : object.findings) {
      const bool is_error = finding.severity == xds::Severity::kError;
      print(object.ref, finding, !is_error || read_only, is_error && read_only ? ignored : "");
    }
    if (read_only) continue;
    ++objects;
    if (object.has_errors()) {
      rejected = true;
    } else {
      ++accepted;
    }
  }
  err << "facet validate: " << manifests.files.size() << " files, " << objects
      << " objects: " << accepted << " valid, " << objects - accepted << " rejected; "
      << object_errors << " errors, " << warning_count << " warnings\n";
  KeepUntilExit(std::move(manifests), std::move(build));
  if (unreadable) return kValidateUnreadable;
  return rejected ? kValidateRejected : kValidateOk;
}

}  // namespace facet::controller
