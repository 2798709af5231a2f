#include "controller/cli/controller_command.h"

#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/server/admin/admin_server.h"
#include "controller/server/metrics/metrics.h"
#include "controller/cli/flags.h"
#include "controller/cli/serving_runner.h"
#include "controller/kubernetes/client/cpprest_kube_client.h"
#include "controller/kubernetes/client/kube_config.h"
#include "controller/kubernetes/source/kube_source.h"
#include "controller/kubernetes/leader_election/leader_elector.h"
#include "controller/kubernetes/webhook/admission.h"
#include "controller/kubernetes/webhook/webhook_server.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/explain/explain.h"

namespace facet::controller {
namespace {

std::string Identity() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "facet");
  absl::BitGen gen;
  return absl::StrCat(host, "_", absl::Uniform<uint32_t>(gen, 0, 1u << 31));
}

// What /metrics reads of the controller at each scrape.
struct ControllerStats {
  KubeSource::Stats source;
  bool leading = false;
};

// Adds the Kubernetes source's and the elector's metrics, read at each
// scrape. `elector` is null without leader election.
void AddKubeSourceMetrics(Metrics& metrics, const KubeSource& source,
                          const LeaderElector* elector) {
  using S = ControllerStats;
  StatsMetrics<S>(metrics)
      .Counter("facet_snapshot_builds_total", "Snapshot builds.",
               [](const S& s) { return s.source.builds; })
      .Gauge("facet_objects_rejected", "Objects whose latest generation is rejected.",
             [](const S& s) { return s.source.rejected_objects; })
      .Counter("facet_status_writes_total", "Status subresource writes.",
               [](const S& s) { return s.source.status_writes; })
      .Counter("facet_status_write_errors_total", "Failed status writes.",
               [](const S& s) { return s.source.status_errors; })
      .Gauge("facet_leader", "1 while this replica leads (writes status).",
             [](const S& s) { return s.leading ? 1 : 0; })
      .Counter("facet_kube_lists_total", "Complete lists of watched collections.",
               [](const S& s) { return s.source.reflectors.lists; })
      .Counter("facet_kube_watches_total", "Watches started (each restart counts).",
               [](const S& s) { return s.source.reflectors.watches; })
      .Counter("facet_kube_watch_errors_total",
               "List+watch rounds that ended in an error and relisted.",
               [](const S& s) { return s.source.reflectors.watch_errors; })
      .Install([&source, elector] {
        return ControllerStats{source.stats(), elector == nullptr || elector->is_leader()};
      });
  // One sample per Gateway API kind whose CRD discovery was asked about.
  prometheus::Family<prometheus::Gauge>& available =
      prometheus::BuildGauge()
          .Name("facet_gateway_kind_available")
          .Help("1 while the API server serves the Gateway API kind (its CRD is installed), "
                "0 while it does not.")
          .Register(metrics.registry());
  metrics.OnScrape([&source, &available] {
    for (const auto& [kind, served] : source.stats().gateway_kinds) {
      available.Add({{"kind", kind}}).Set(served ? 1 : 0);
    }
  });
}

}  // namespace

int RunController(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ServingRunner runner("controller", out, err);
  Flags& flags = runner.flags();
  flags.Define("kubeconfig", "", "kubeconfig file (empty: $KUBECONFIG, in-cluster, ~/.kube/config)");
  flags.Define("context", "", "kubeconfig context (empty: current-context)");
  flags.Define("namespaces", "", "comma-separated namespaces to watch (empty: all)");
  flags.Define("allow-old-style-names", "true", "serve resources with non-xdstp names", true);
  flags.Define("leader-election", "true", "elect one replica to write status", true);
  flags.Define("gateway-api", "true",
               "serve Services, EndpointSlices and the GRPCRoutes, ReferenceGrants and "
               "XdsVariantPolicies whose CRDs are installed (false: watch none of them)",
               true);
  flags.Define("cluster-domain", "cluster.local",
               "the cluster's DNS domain, in generated names S.N.svc.<domain>:P");
  flags.Define(kGatewayClientNamespaceParamFlag,
               gateway::TranslateOptions().client_namespace_param,
               kGatewayClientNamespaceParamHelp);
  flags.Define("leader-election-namespace", "", "namespace of the Lease (default: $POD_NAMESPACE, else the kubeconfig's namespace)");
  flags.Define("leader-election-lease", "facet-controller", "name of the Lease");
  flags.Define("webhook-address", "",
               "HOST:PORT for the validating admission webhook (HTTPS POST /validate; empty: off)");
  flags.Define("webhook-tls-cert", "", "PEM certificate of the webhook (with --webhook-address)");
  flags.Define("webhook-tls-key", "", "PEM private key of the webhook (with --webhook-address)");
  if (std::optional<int> exit_code = runner.ParseFlags(
          args, {"0.0.0.0:18080", "/healthz, /readyz, /metrics, /clients, /explain"},
          "usage: facet controller [flags]")) {
    return *exit_code;
  }
  if (!flags.positional().empty()) return runner.UsageError("unexpected argument");
  if (std::optional<int> exit_code = runner.ReadServingFlags()) return *exit_code;
  if (flags.Get("cluster-domain").empty()) return runner.UsageError("--cluster-domain is empty");
  if (!flags.Get("webhook-address").empty() &&
      (flags.Get("webhook-tls-cert").empty() || flags.Get("webhook-tls-key").empty())) {
    return runner.Fail(2, "--webhook-address needs --webhook-tls-cert and --webhook-tls-key");
  }

  kube::ProcessEnvironment environment;
  absl::StatusOr<kube::ClusterConfig> config =
      kube::LoadClusterConfig(environment, flags.Get("kubeconfig"), flags.Get("context"));
  if (!config.ok()) return runner.Fail(1, config.status().message());
  absl::StatusOr<std::unique_ptr<kube::CpprestKubeClient>> client =
      kube::CpprestKubeClient::Create(*config);
  if (!client.ok()) return runner.Fail(1, client.status().message());
  std::string lease_namespace = flags.Get("leader-election-namespace");
  if (lease_namespace.empty()) {
    lease_namespace = environment.GetEnv("POD_NAMESPACE").value_or(config->default_namespace);
  }

  return runner.Run([&](ServingRunner& run) -> absl::StatusOr<ServingParts> {
    xds::SnapshotStore& store = run.store();
    xds::AdsService& ads = run.StartAds();
    kube::CpprestKubeClient& kube_client = run.Own(*std::move(client));
    kube::RealClock& clock = run.Own(std::make_unique<kube::RealClock>());

    // The elector tells the source when this replica starts leading; the
    // source is built after it (it asks the elector whether it leads), so
    // the callback finds it through `source_slot`, set once it exists.
    auto source_slot = std::make_shared<std::atomic<KubeSource*>>(nullptr);
    LeaderElector* elector = nullptr;
    if (flags.GetBool("leader-election")) {
      LeaderElector::Options election;
      election.lease_namespace = lease_namespace;
      election.lease_name = flags.Get("leader-election-lease");
      election.identity = Identity();
      // The Lease has its own client, whose requests give up at the renew
      // deadline: a hung renewal cannot outlive the leadership it renews.
      kube::CpprestKubeClient::Options lease_options;
      lease_options.request_timeout = election.renew_deadline;
      absl::StatusOr<std::unique_ptr<kube::CpprestKubeClient>> lease =
          kube::CpprestKubeClient::Create(*config, lease_options);
      if (!lease.ok()) return absl::UnavailableError(lease.status().message());
      kube::CpprestKubeClient& lease_client = run.Own(*std::move(lease));
      absl::StatusOr<std::unique_ptr<LeaderElector>> created =
          LeaderElector::Create(lease_client, clock, election, [source_slot](bool leading) {
            KubeSource* source = source_slot->load(std::memory_order_acquire);
            if (leading && source != nullptr) source->RequestStatusSync();
          });
      if (!created.ok()) return created.status();
      elector = &run.Own(*std::move(created));
    }
    KubeSource::Options source_options;
    if (!flags.Get("namespaces").empty()) {
      source_options.namespaces = absl::StrSplit(flags.Get("namespaces"), ',', absl::SkipEmpty());
    }
    source_options.build.allow_old_style_names = flags.GetBool("allow-old-style-names");
    source_options.gateway_api = flags.GetBool("gateway-api");
    source_options.gateway.cluster_domain = absl::AsciiStrToLower(flags.Get("cluster-domain"));
    source_options.gateway.client_namespace_param = flags.Get(kGatewayClientNamespaceParamFlag);
    source_options.on_published = ObserveSnapshotBuilds(run.metrics());
    source_options.on_report = run.RecordReports();
    KubeSource& source = run.Own(std::make_unique<KubeSource>(
        kube_client, store, &ads,
        elector == nullptr ? std::function<bool()>()
                           : [elector] { return elector->is_leader(); },
        source_options));
    source_slot->store(&source, std::memory_order_release);
    source.Start();
    run.Push([&source] { source.Stop(); });
    AddKubeSourceMetrics(run.metrics(), source, elector);
    if (elector != nullptr) {
      // Its thread, which calls into the source, runs until this stop,
      // pushed after the source and so run before the source goes.
      elector->Start();
      run.Push([elector] { elector->Stop(); });
    }

    ServingParts parts;
    // Every replica, leader or not, answers admission reviews.
    if (!flags.Get("webhook-address").empty()) {
      const xds::BuildOptions build = source_options.build;
      absl::StatusOr<std::unique_ptr<WebhookServer>> webhook = WebhookServer::Start(
          flags.Get("webhook-address"), flags.Get("webhook-tls-cert"), flags.Get("webhook-tls-key"),
          [&source, build](const std::string& body) {
            return ReviewAdmission(body, source.AuthorityObjects(), build);
          });
      // Like the other ports: one that cannot be opened ends the command with 1.
      if (!webhook.ok()) {
        return absl::UnavailableError(
            absl::StrCat("--webhook-address: ", webhook.status().message()));
      }
      parts.webhook_address = run.Own(*std::move(webhook)).address();
    }
    // /explain names the objects whose previous revision serves, with the
    // rejection's reason, as facet serve's does.
    parts.explain_context = [&source](xds::ExplainRequest* request) {
      xds::AddSourceStatuses(source.shared_statuses(), request);
    };
    parts.ready = [&source] { return source.ready(); };
    parts.waiting_for = "the initial list of every watched collection";
    parts.announce = [namespaces = flags.Get("namespaces")](const ServingAddresses& addresses) {
      spdlog::info("facet controller: xDS on {}{}; watching {}", addresses.xds,
                   addresses.admin_suffix, namespaces.empty() ? "all namespaces" : namespaces);
    };
    // Releases the Lease first at shutdown, so another replica leads at once.
    if (elector != nullptr) parts.stop_first = [elector] { elector->Stop(); };
    return parts;
  });
}

}  // namespace facet::controller
