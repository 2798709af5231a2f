#include "controller/cli/relay_command.h"

#include <signal.h>

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/server/admin/admin_server.h"
#include "controller/server/admin/metrics_text.h"
#include "controller/cli/flags.h"
#include "controller/cli/serving_common.h"
#include "google/protobuf/struct.pb.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/common/struct_json.h"
#include "xds_server/relay/relay.h"
#include "xds_server/relay_config/relay_config.h"

namespace facet::controller {
namespace {

std::string RelayMetricsText(const xds::Relay& relay, const xds::AdsService& ads) {
  const xds::RelayStats stats = relay.stats();
  std::string out;
  AppendAdsMetrics(ads, &out);
  AppendMetric("facet_relay_upstream_streams", "gauge",
               "Upstream server lists with a connected ADS stream.",
               static_cast<double>(stats.upstream_streams), &out);
  AppendMetric("facet_relay_upstream_subscriptions", "gauge",
               "Upstream locator subscriptions (one per resource and projected parameter set), "
               "lingering ones included.",
               static_cast<double>(stats.cache.upstream_subscriptions), &out);
  AppendMetric("facet_relay_cache_variants", "gauge", "Resource variants held in the cache.",
               static_cast<double>(stats.cache.cached_variants), &out);
  AppendMetric("facet_relay_cache_resources", "gauge",
               "Resources (type and name) the cache tracks.",
               static_cast<double>(stats.cache.resources), &out);
  AppendMetric("facet_relay_cache_hits_total", "counter",
               "Downstream parameter sets answered from the cache when first subscribed.",
               static_cast<double>(stats.cache.hits), &out);
  AppendMetric("facet_relay_cache_misses_total", "counter",
               "Downstream parameter sets that waited for upstream when first subscribed.",
               static_cast<double>(stats.cache.misses), &out);
  AppendMetric("facet_relay_upstream_updates_total", "counter",
               "Upstream responses applied to the cache.",
               static_cast<double>(stats.cache.updates_applied), &out);
  AppendMetric("facet_relay_upstream_updates_rejected_total", "counter",
               "Upstream responses rejected (NACKed upstream), by the cache or as malformed.",
               static_cast<double>(stats.upstream_nacks_sent), &out);
  AppendMetric("facet_relay_upstream_reconnects_total", "counter",
               "Upstream streams started after the first.",
               static_cast<double>(stats.upstream_reconnects), &out);
  AppendMetric("facet_relay_upstream_failovers_total", "counter",
               "Moves to the next server of an upstream list.",
               static_cast<double>(stats.upstream_failovers), &out);
  return out;
}

// The relay's /status: upstream lists and what the cache holds.
std::string RelayStatusJson(const xds::Relay& relay, const xds::AdsService& ads,
                            const xds::SnapshotStore& store) {
  const xds::RelayStats stats = relay.stats();
  google::protobuf::Struct root;
  auto& fields = *root.mutable_fields();
  auto* upstreams = fields["upstreams"].mutable_list_value();
  for (const auto& [server_uri, connected] : stats.upstreams) {
    google::protobuf::Value upstream;
    auto& u = *upstream.mutable_struct_value()->mutable_fields();
    u["server_uri"].set_string_value(server_uri);
    u["connected"].set_bool_value(connected);
    *upstreams->add_values() = upstream;
  }
  fields["snapshot_version"].set_string_value(store.Current()->version());
  fields["streams_open"].set_number_value(static_cast<double>(ads.stats().streams_open));
  fields["upstream_subscriptions"].set_number_value(
      static_cast<double>(stats.cache.upstream_subscriptions));
  fields["cached_variants"].set_number_value(static_cast<double>(stats.cache.cached_variants));
  fields["cached_resources"].set_number_value(static_cast<double>(stats.cache.resources));
  auto* nacks = fields["nacks"].mutable_list_value();
  for (const xds::NackRecord& record : ads.nacks()) {
    google::protobuf::Value nack;
    auto& n = *nack.mutable_struct_value()->mutable_fields();
    n["type_url"].set_string_value(record.type_url);
    n["name"].set_string_value(record.name);
    n["version"].set_string_value(record.version);
    n["client"].set_string_value(record.node_id);
    n["detail"].set_string_value(record.error_detail);
    n["count"].set_number_value(static_cast<double>(record.count));
    *nacks->add_values() = nack;
  }
  return json::MessageToJson(root, /*pretty=*/true) + "\n";
}

}  // namespace

int RunRelay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Flags flags;
  flags.Define("config", "",
               "relay configuration: JSON in the shape of a gRPC xDS bootstrap (required)");
  flags.Define("upstream-protocol", "delta", "delta or sotw: the ADS variant used upstream");
  flags.Define("upstream-linger", "10s",
               "how long an upstream subscription no downstream client needs is kept");
  DefineServingFlags(flags);
  flags.Define("help", "false", "print this help", true);
  const std::string usage =
      absl::StrCat("usage: facet relay --config FILE [flags]\n", flags.Help());
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    err << "facet relay: " << s.message() << "\n" << usage;
    return 2;
  }
  if (flags.GetBool("help")) {
    out << usage;
    return 0;
  }
  if (flags.Get("config").empty() || !flags.positional().empty()) {
    err << "facet relay: --config FILE is required (and no positional arguments)\n" << usage;
    return 2;
  }
  absl::StatusOr<std::shared_ptr<const xds::ParameterMapping>> mapping = ApplyCommonFlags(flags);
  if (!mapping.ok()) {
    err << "facet relay: " << mapping.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<XdsServerOptions> server_options = XdsServerOptionsFromFlags(flags);
  if (!server_options.ok()) {
    err << "facet relay: " << server_options.status().message() << "\n";
    return ExitCodeFor(server_options.status());
  }
  absl::StatusOr<TlsFiles> admin_tls = TlsFilesFromFlags(flags, "admin-tls");
  if (!admin_tls.ok()) {
    err << "facet relay: " << admin_tls.status().message() << "\n";
    return ExitCodeFor(admin_tls.status());
  }
  xds::Relay::Options relay_options;
  const std::string protocol = flags.Get("upstream-protocol");
  if (protocol != "delta" && protocol != "sotw") {
    err << "facet relay: --upstream-protocol: \"" << protocol << "\" is not delta or sotw\n";
    return 2;
  }
  relay_options.upstream.protocol = protocol == "delta" ? xds::UpstreamClient::Protocol::kDelta
                                                        : xds::UpstreamClient::Protocol::kSotw;
  if (!absl::ParseDuration(flags.Get("upstream-linger"), &relay_options.linger) ||
      relay_options.linger < absl::ZeroDuration()) {
    err << "facet relay: --upstream-linger: \"" << flags.Get("upstream-linger")
        << "\" is not a non-negative duration (e.g. 10s)\n";
    return 2;
  }
  absl::StatusOr<xds::RelayConfig> config = xds::LoadRelayConfig(flags.Get("config"));
  if (!config.ok()) {
    err << "facet relay: " << config.status().message() << "\n";
    return config.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  relay_options.config = *std::move(config);

  BlockShutdownSignals();
  const sigset_t signals = ShutdownSignals();

  xds::SnapshotStore store;
  xds::Relay relay(store, relay_options);
  xds::AdsService::Options ads_options = server_options->ads;
  ads_options.mapping = *std::move(mapping);
  ads_options.demand_observer = &relay;
  xds::AdsService ads(store, ads_options);

  absl::StatusOr<Serving> serving = StartServing(
      flags, ads, *server_options,
      {{"/metrics",
        [&] {
          return AdminResponse{200, "text/plain; version=0.0.4", RelayMetricsText(relay, ads)};
        }},
       {"/status",
        [&] {
          return AdminResponse{200, "application/json", RelayStatusJson(relay, ads, store)};
        }}},
      *admin_tls);
  if (!serving.ok()) {
    err << "facet relay: " << serving.status().message() << "\n";
    return 1;
  }

  std::vector<std::string> upstreams;
  for (const auto& server_entry : relay_options.config.xds_servers) {
    upstreams.push_back(server_entry.server_uri);
  }
  out << "facet relay: relaying " << absl::StrJoin(upstreams, ", ") << " ("
      << relay_options.config.authorities.size() << " authorities) over xDS on "
      << serving->xds_address << serving->AdminSuffix() << "\n";
  out.flush();
  WriteReadyFileFromFlags(flags, *serving);

  ServeUntilSignalled(signals, ads, *serving);
  return 0;
}

}  // namespace facet::controller
