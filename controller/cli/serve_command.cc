#include "controller/cli/serve_command.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "controller/gateway/model/gateway_status.h"
#include "controller/kubernetes/status/gateway_status.h"
#include "controller/server/admin/admin_server.h"
#include "controller/server/console/console_routes.h"
#include "controller/server/metrics/metrics.h"
#include "controller/cli/flags.h"
#include "controller/cli/serving_runner.h"
#include "controller/sources/manifest/manifest_dir_source.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/common/log_text.h"
#include "xds_server/common/struct_json.h"
#include "xds_server/explain/explain.h"
#include "xds_server/json/yaml_json.h"

namespace facet::controller {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;
using json::BoolValue;
using json::NumberValue;
using json::StringValue;

// The client bootstrap printed at start-up and written by --bootstrap-out.
std::string ClientBootstrap(const std::string& xds_address,
                            const std::vector<std::string>& authorities) {
  Struct bootstrap;
  Value server;
  auto& server_fields = *server.mutable_struct_value()->mutable_fields();
  server_fields["server_uri"] = StringValue(xds_address);
  Value creds;
  (*creds.mutable_struct_value()->mutable_fields())["type"] = StringValue("insecure");
  *server_fields["channel_creds"].mutable_list_value()->add_values() = creds;
  *server_fields["server_features"].mutable_list_value()->add_values() = StringValue("xds_v3");
  *(*bootstrap.mutable_fields())["xds_servers"].mutable_list_value()->add_values() = server;
  Value node;
  auto& node_fields = *node.mutable_struct_value()->mutable_fields();
  node_fields["id"] = StringValue("greeter-client-1");
  node_fields["locality"].mutable_struct_value();
  (*node_fields["metadata"].mutable_struct_value()->mutable_fields())["env"] = StringValue("prod");
  (*bootstrap.mutable_fields())["node"] = node;
  if (!authorities.empty()) {
    auto& map =
        *(*bootstrap.mutable_fields())["authorities"].mutable_struct_value()->mutable_fields();
    for (const std::string& authority : authorities) map[authority].mutable_struct_value();
  }
  return json::MessageToJson(bootstrap, /*pretty=*/true);
}

// Renders GRPCRoute and XdsVariantPolicy statuses as `facet controller`
// writes them (DesiredRouteStatus, DesiredPolicyStatus), each merged into the one rendered before, so that a
// condition keeps its lastTransitionTime (the time the source saw the
// status change) while it stays. Thread-safe.
class RouteStatusRenderer {
 public:
  // Returns the status of every report that has one, as JSON, by reference.
  std::map<xds::ObjectRef, google::protobuf::Value> Render(
      const std::vector<ManifestDirSource::GatewayObjectReport>& reports) {
    absl::MutexLock lock(&mu_);
    std::map<xds::ObjectRef, google::protobuf::Value> out;
    std::set<xds::ObjectRef> present;
    for (const ManifestDirSource::GatewayObjectReport& report : reports) {
      if (report.status == nullptr) continue;
      present.insert(report.ref);
      Entry& entry = entries_[report.ref];
      if (entry.status != report.status) {
        entry.status = report.status;
        entry.yaml =
            report.ref.kind == gateway::kXdsVariantPolicyKind
                ? DesiredPolicyStatus(entry.yaml, *report.status, gateway::kControllerName,
                                      report.status_since)
                : DesiredRouteStatus(entry.yaml, *report.status, gateway::kControllerName,
                                     report.status_since);
        absl::StatusOr<std::string> json = json::YamlToJson(entry.yaml, "status");
        entry.value.Clear();
        if (json.ok()) (void)google::protobuf::util::JsonStringToMessage(*json, &entry.value);
      }
      out.emplace(report.ref, entry.value);
    }
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = present.count(it->first) > 0 ? std::next(it) : entries_.erase(it);
    }
    return out;
  }

 private:
  struct Entry {
    std::shared_ptr<const gateway::GatewayStatus> status;
    YAML::Node yaml;
    google::protobuf::Value value;
  };
  absl::Mutex mu_;
  std::map<xds::ObjectRef, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

std::string StatusJson(const ManifestDirSource& source, const xds::AdsService& ads,
                       const xds::SnapshotStore& store, RouteStatusRenderer& routes) {
  const auto clients = ads.ClientsPerVariant();
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<xds::NackRecord>> nacks;
  for (const auto& record : ads.nacks()) {
    nacks[{record.type_url, record.name, record.version}].push_back(record);
  }
  Struct root;
  auto& fields = *root.mutable_fields();
  fields["snapshot_version"] = StringValue(store.Current()->version());
  fields["streams_open"] = NumberValue(static_cast<double>(ads.stats().streams_open));
  // The xdstp:// authorities the directory defines (as in the client bootstrap).
  auto* authority_list = fields["authorities"].mutable_list_value();
  for (const std::string& authority : source.authorities()) {
    *authority_list->add_values() = StringValue(xds::EscapeText(authority));
  }
  const std::map<xds::ObjectRef, absl::Time> rejected_since = source.rejected_since();
  auto* objects = fields["objects"].mutable_list_value();
  for (const auto& status_ptr : source.statuses()) {
    const xds::ObjectStatus& status = *status_ptr;
    Value object;
    auto& o = *object.mutable_struct_value()->mutable_fields();
    o["object"] = StringValue(status.ref.ToString());
    o["kind"] = StringValue(status.ref.kind);
    o["location"] = StringValue(status.location);
    o["served_name"] = StringValue(status.served_name);
    o["accepted"] = BoolValue(status.accepted);
    o["serving_previous"] = BoolValue(status.serving_previous);
    // When the rejection of the latest revision began.
    if (auto since = rejected_since.find(status.ref); since != rejected_since.end()) {
      o["rejected_since"] =
          StringValue(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", since->second, absl::UTCTimeZone()));
    }
    auto* findings = o["findings"].mutable_list_value();
    for (const xds::Finding& finding : status.findings) {
      Value f;
      auto& ff = *f.mutable_struct_value()->mutable_fields();
      ff["severity"] = StringValue(finding.severity == xds::Severity::kError ? "error" : "warning");
      ff["reason"] = StringValue(finding.reason);
      ff["field"] = StringValue(finding.field);
      ff["message"] = StringValue(finding.message);
      *findings->add_values() = f;
    }
    const xds::ServedResource* served = nullptr;
    if (auto snapshot = store.Current(); snapshot != nullptr) {
      auto resource = snapshot->FindByOwner(status.ref);
      served = resource.get();
      auto* variants = o["variants"].mutable_list_value();
      if (served != nullptr) {
        for (const auto& variant : served->variants) {
          Value v;
          auto& vf = *v.mutable_struct_value()->mutable_fields();
          vf["name"] = StringValue(variant->label);
          vf["version"] = StringValue(variant->version);
          vf["constraints"] = StringValue(variant->constraints.ToString());
          if (variant->origin != nullptr) {
            // The conditional elements ("@when") this compiled variant includes.
            auto* includes = vf["includes"].mutable_list_value();
            for (size_t element : variant->included) {
              *includes->add_values() = StringValue(variant->origin->elements[element].path);
            }
          }
          const auto key =
              std::make_tuple(served->type->type_url(), served->name, variant->version);
          auto count = clients.find(key);
          vf["clients"] = NumberValue(count == clients.end() ? 0 : count->second);
          auto* nack_list = vf["nacks"].mutable_list_value();
          for (const auto& record : nacks[key]) {
            Value n;
            auto& nf = *n.mutable_struct_value()->mutable_fields();
            nf["client"] = StringValue(record.node_id);
            nf["detail"] = StringValue(record.error_detail);
            nf["count"] = NumberValue(static_cast<double>(record.count));
            *nack_list->add_values() = n;
          }
          *variants->add_values() = v;
        }
      }
    }
    *objects->add_values() = object;
  }
  // The Gateway API objects the directory defines, GRPCRoutes and
  // XdsVariantPolicies with the status the controller would write.
  const std::vector<ManifestDirSource::GatewayObjectReport> reports = source.gateway_objects();
  std::map<xds::ObjectRef, Value> route_statuses = routes.Render(reports);
  auto* gateway_objects = fields["gateway_objects"].mutable_list_value();
  for (const ManifestDirSource::GatewayObjectReport& report : reports) {
    Value object;
    auto& o = *object.mutable_struct_value()->mutable_fields();
    o["object"] = StringValue(report.ref.ToString());
    o["kind"] = StringValue(report.ref.kind);
    o["location"] = StringValue(report.location);
    o["generation"] = NumberValue(static_cast<double>(report.generation));
    if (auto it = route_statuses.find(report.ref); it != route_statuses.end()) {
      o["status"] = std::move(it->second);
    }
    *gateway_objects->add_values() = object;
  }
  // Files that do not parse: their last good read keeps serving.
  auto* unparsed = fields["unparsed_files"].mutable_list_value();
  for (const auto& [path, file] : source.unparsed_files()) {
    Value entry;
    auto& u = *entry.mutable_struct_value()->mutable_fields();
    u["file"] = StringValue(xds::EscapeText(path));
    u["line"] = NumberValue(file.line);
    u["column"] = NumberValue(file.column);
    u["message"] = StringValue(xds::EscapeText(file.message));
    *unparsed->add_values() = entry;
  }
  return json::MessageToJson(root, /*pretty=*/true) + "\n";
}

// Returns a tag that changes whenever StatusJson's answer may: the snapshot
// version, the source's builds (statuses) and other reports (files that do
// not parse, Gateway API statuses), and the ADS server's streams, pushes,
// ACKs and NACKs (which clients hold which variant, and their NACKs). Each
// counter is bumped after the state it counts changes, and read here
// before StatusJson reads that state, so an answer is never older than its
// tag.
std::string StatusTag(const ManifestDirSource& source, const xds::AdsService& ads,
                      const xds::SnapshotStore& store) {
  const ManifestDirSource::Stats stats = source.stats();
  const xds::AdsStats ads_stats = ads.stats();
  return absl::StrCat(store.Current()->version().substr(0, 16), ".", stats.builds, ".",
                      stats.report_changes, ".", stats.upserts, ".", stats.removals, ".",
                      ads_stats.streams_total, ".", ads_stats.streams_open, ".", ads_stats.pushes,
                      ".", ads_stats.acks, ".", ads_stats.nacks, ".",
                      ads_stats.nack_records_dropped);
}

// Adds the manifest source's metrics, read from its stats at each scrape.
void AddManifestSourceMetrics(Metrics& metrics, const ManifestDirSource& source) {
  using S = ManifestDirSource::Stats;
  StatsMetrics<S>(metrics)
      .Counter("facet_snapshot_builds_total", "Snapshot builds.",
               [](const S& s) { return s.builds; })
      .Gauge("facet_objects_rejected", "Objects whose latest revision is rejected.",
             [](const S& s) { return s.rejected_objects; })
      .Gauge("facet_manifest_inotify",
             "1 while inotify watches the manifest directory, 0 while it is polled.",
             [](const S& s) { return s.inotify ? 1 : 0; })
      .Counter("facet_manifest_held_removals_total",
               "File re-reads whose removals were held back until the file was quiet.",
               [](const S& s) { return s.held_removals; })
      .Install([&source] { return source.stats(); });
}

}  // namespace

int RunServe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ServingRunner runner("serve", out, err);
  Flags& flags = runner.flags();
  flags.Define("manifests", "", "directory of Facet manifests to serve (required)");
  flags.Define("allow-old-style-names", "true", "serve resources without spec.authority", true);
  flags.Define(kGatewayClientNamespaceParamFlag,
               gateway::TranslateOptions().client_namespace_param,
               kGatewayClientNamespaceParamHelp);
  if (std::optional<int> exit_code =
          runner.ParseFlags(args, {}, "usage: facet serve --manifests DIR [flags]")) {
    return *exit_code;
  }
  if (flags.Get("manifests").empty() || !flags.positional().empty()) {
    return runner.UsageError("--manifests DIR is required (and no positional arguments)");
  }
  if (!std::filesystem::is_directory(flags.Get("manifests"))) {
    return runner.Fail(1, absl::StrCat("--manifests ", flags.Get("manifests"), ": not a directory"));
  }
  if (std::optional<int> exit_code = runner.ReadServingFlags()) return *exit_code;

  return runner.Run([&](ServingRunner& run) -> absl::StatusOr<ServingParts> {
    xds::SnapshotStore& store = run.store();
    xds::AdsService& ads = run.StartAds();
    ManifestDirSource::Options source_options;
    source_options.directory = flags.Get("manifests");
    source_options.build.allow_old_style_names = flags.GetBool("allow-old-style-names");
    source_options.gateway.client_namespace_param = flags.Get(kGatewayClientNamespaceParamFlag);
    source_options.on_published = ObserveSnapshotBuilds(run.metrics());
    source_options.on_report = run.RecordReports();
    ManifestDirSource& source =
        run.Own(std::make_unique<ManifestDirSource>(source_options, store));
    source.Start();  // The first snapshot is published before any client can connect.
    AddManifestSourceMetrics(run.metrics(), source);

    ServingParts parts;
    auto& route_statuses = run.Own(std::make_unique<RouteStatusRenderer>());
    // A page polls /status every second: an unchanged state answers 304
    // before any JSON is built.
    parts.routes = {
        {"/status",
         ChangeTaggedRoute([&source, &ads, &store] { return StatusTag(source, ads, store); },
                           [&source, &ads, &store, &route_statuses] {
                             return AdminResponse{200, "application/json",
                                                  StatusJson(source, ads, store, route_statuses)};
                           })}};
    parts.explain_context = [&source](xds::ExplainRequest* request) {
      xds::AddSourceStatuses(source.statuses(), request);
    };
    parts.announce = [&out, &flags, &source](const ServingAddresses& addresses) {
      out << "facet serve: serving " << flags.Get("manifests") << " over xDS on " << addresses.xds
          << addresses.admin_suffix << "\n"
          << "Client bootstrap (save it as bootstrap.json and set "
             "GRPC_XDS_BOOTSTRAP=bootstrap.json):\n"
          << ClientBootstrap(addresses.xds, source.authorities()) << "\n";
      out.flush();
    };
    return parts;
  });
}

}  // namespace facet::controller
