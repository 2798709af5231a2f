#include "controller/cli/relay_command.h"

#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/server/admin/admin_server.h"
#include "controller/server/metrics/metrics.h"
#include "controller/cli/flags.h"
#include "controller/cli/serving_runner.h"
#include "google/protobuf/struct.pb.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/common/struct_json.h"
#include "xds_server/relay/relay.h"
#include "xds_server/relay_config/relay_config.h"
#include "xds_server/resources/resource_type.h"

namespace facet::controller {
namespace {

// Adds the relay's metrics, read from its stats at each scrape.
void AddRelayMetrics(Metrics& metrics, const xds::Relay& relay) {
  using S = xds::RelayStats;
  StatsMetrics<S>(metrics)
      .Gauge("facet_relay_upstream_streams", "Upstream server lists with a connected ADS stream.",
             [](const S& s) { return s.upstream_streams; })
      .Gauge("facet_relay_upstream_subscriptions",
             "Upstream locator subscriptions (one per resource and projected parameter set), "
             "lingering ones included.",
             [](const S& s) { return s.cache.upstream_subscriptions; })
      .Gauge("facet_relay_cache_variants", "Resource variants held in the cache.",
             [](const S& s) { return s.cache.cached_variants; })
      .Gauge("facet_relay_cache_resources", "Resources (type and name) the cache tracks.",
             [](const S& s) { return s.cache.resources; })
      .Counter("facet_relay_cache_hits_total",
               "Downstream parameter sets answered from the cache when first subscribed.",
               [](const S& s) { return s.cache.hits; })
      .Counter("facet_relay_cache_misses_total",
               "Downstream parameter sets that waited for upstream when first subscribed.",
               [](const S& s) { return s.cache.misses; })
      .Counter("facet_relay_upstream_updates_total", "Upstream responses applied to the cache.",
               [](const S& s) { return s.cache.updates_applied; })
      .Counter("facet_relay_upstream_updates_rejected_total",
               "Upstream responses rejected (NACKed upstream), by the cache or as malformed.",
               [](const S& s) { return s.upstream_nacks_sent; })
      .Counter("facet_relay_upstream_requests_total",
               "Requests written upstream: subscriptions, ACKs and NACKs.",
               [](const S& s) { return s.upstream_requests_sent; })
      .Counter("facet_relay_upstream_reconnects_total", "Upstream streams started after the first.",
               [](const S& s) { return s.upstream_reconnects; })
      .Counter("facet_relay_upstream_failovers_total",
               "Moves to the next server of an upstream list.",
               [](const S& s) { return s.upstream_failovers; })
      .Install([&relay] { return relay.stats(); });
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

std::string RelayUpstreamsJson(const xds::RelayStats& stats,
                               absl::Span<const xds::RelayResourceStats> resources, size_t total) {
  google::protobuf::Struct root;
  auto& fields = *root.mutable_fields();
  fields["resources_total"].set_number_value(static_cast<double>(total));
  fields["resources_shown"].set_number_value(static_cast<double>(resources.size()));
  auto* upstreams = fields["upstreams"].mutable_list_value();
  std::vector<google::protobuf::ListValue*> lists;
  for (const auto& [server_uri, connected] : stats.upstreams) {
    auto& u = *upstreams->add_values()->mutable_struct_value()->mutable_fields();
    u["server_uri"].set_string_value(server_uri);
    u["connected"].set_bool_value(connected);
    lists.push_back(u["resources"].mutable_list_value());
  }
  for (const xds::RelayResourceStats& resource : resources) {
    // Names no upstream serves do not exist downstream: nothing to show.
    if (resource.upstream < 0 || static_cast<size_t>(resource.upstream) >= lists.size()) continue;
    auto& r = *lists[resource.upstream]->add_values()->mutable_struct_value()->mutable_fields();
    const xds::ResourceType* type = xds::FindResourceType(resource.type_url);
    r["type"].set_string_value(type != nullptr ? std::string(type->alias()) : resource.type_url);
    r["name"].set_string_value(resource.name);
    r["hits"].set_number_value(static_cast<double>(resource.hits));
    r["misses"].set_number_value(static_cast<double>(resource.misses));
    r["cached_variants"].set_number_value(static_cast<double>(resource.cached_variants));
  }
  return json::MessageToJson(root, /*pretty=*/false) + "\n";
}

absl::StatusOr<ServingParts> StartRelay(ServingRunner& run, const xds::Relay::Options& options,
                                        std::ostream& out) {
  xds::SnapshotStore& store = run.store();
  // The relay is the service's demand observer, so it is built first and
  // destroyed last; it publishes only between Start() and Stop(): from after
  // the service watches the store until before the service stops watching
  // (and after the service's streams, which tell it their demand, ended).
  xds::Relay::Options relay_options = options;
  relay_options.on_published = [observe = ObserveSnapshotBuilds(run.metrics())](
                                    absl::Duration since_change) {
    observe(PublishTiming{.since_change = since_change, .build = since_change});
  };
  xds::Relay& relay = run.Own(std::make_unique<xds::Relay>(store, std::move(relay_options)));
  xds::AdsService& ads = run.StartAds(&relay);
  relay.Start();
  run.Push([&relay] { relay.Stop(); });

  AddRelayMetrics(run.metrics(), relay);

  ServingParts parts;
  parts.routes = {
      {"/status",
       [&relay, &ads, &store] {
         return AdminResponse{200, "application/json", RelayStatusJson(relay, ads, store)};
       }},
      {"/upstreams", [&relay] {
         size_t total = 0;
         const std::vector<xds::RelayResourceStats> resources =
             relay.ResourceStats(kMaxUpstreamResourcesShown, &total);
         return AdminResponse{200, "application/json",
                              RelayUpstreamsJson(relay.stats(), resources, total)};
       }}};
  std::vector<std::string> upstreams;
  for (const auto& server_entry : options.config.xds_servers) {
    upstreams.push_back(server_entry.server_uri);
  }
  parts.announce = [&out, upstreams = absl::StrJoin(upstreams, ", "),
                    authorities = options.config.authorities.size()](
                       const ServingAddresses& addresses) {
    out << "facet relay: relaying " << upstreams << " (" << authorities
        << " authorities) over xDS on " << addresses.xds << addresses.admin_suffix << "\n";
    out.flush();
  };
  return parts;
}

int RunRelay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ServingRunner runner("relay", out, err);
  Flags& flags = runner.flags();
  flags.Define("config", "",
               "relay configuration: JSON in the shape of a gRPC xDS bootstrap (required)");
  flags.Define("upstream-protocol", "delta", "delta or sotw: the ADS variant used upstream");
  flags.Define("upstream-linger", "10s",
               "how long an upstream subscription no downstream client needs is kept");
  if (std::optional<int> exit_code =
          runner.ParseFlags(args, {}, "usage: facet relay --config FILE [flags]")) {
    return *exit_code;
  }
  if (flags.Get("config").empty() || !flags.positional().empty()) {
    return runner.UsageError("--config FILE is required (and no positional arguments)");
  }
  if (std::optional<int> exit_code = runner.ReadServingFlags()) return *exit_code;
  xds::Relay::Options relay_options;
  const std::string protocol = flags.Get("upstream-protocol");
  if (protocol != "delta" && protocol != "sotw") {
    return runner.Fail(
        2, absl::StrCat("--upstream-protocol: \"", protocol, "\" is not delta or sotw"));
  }
  relay_options.upstream.protocol = protocol == "delta" ? xds::UpstreamClient::Protocol::kDelta
                                                        : xds::UpstreamClient::Protocol::kSotw;
  if (!absl::ParseDuration(flags.Get("upstream-linger"), &relay_options.linger) ||
      relay_options.linger < absl::ZeroDuration()) {
    return runner.Fail(2, absl::StrCat("--upstream-linger: \"", flags.Get("upstream-linger"),
                                       "\" is not a non-negative duration (e.g. 10s)"));
  }
  absl::StatusOr<xds::RelayConfig> config = xds::LoadRelayConfig(flags.Get("config"));
  if (!config.ok()) {
    return runner.Fail(config.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1,
                       config.status().message());
  }
  relay_options.config = *std::move(config);

  return runner.Run([&](ServingRunner& run) -> absl::StatusOr<ServingParts> {
    return StartRelay(run, relay_options, out);
  });
}

}  // namespace facet::controller
