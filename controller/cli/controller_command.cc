#include "controller/cli/controller_command.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/server/admin/admin_server.h"
#include "controller/server/admin/metrics_text.h"
#include "controller/cli/flags.h"
#include "controller/cli/serving_common.h"
#include "controller/kubernetes/client/cpprest_kube_client.h"
#include "controller/kubernetes/client/kube_config.h"
#include "controller/kubernetes/source/kube_source.h"
#include "controller/kubernetes/leader_election/leader_elector.h"
#include "controller/kubernetes/webhook/admission.h"
#include "controller/kubernetes/webhook/webhook_server.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"
#include "xds_server/ads/ads_service.h"

namespace facet::controller {
namespace {

std::string Identity() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "facet");
  absl::BitGen gen;
  return absl::StrCat(host, "_", absl::Uniform<uint32_t>(gen, 0, 1u << 31));
}

std::string Metrics(const KubeSource& source, const xds::AdsService& ads, bool leading) {
  const KubeSource::Stats s = source.stats();
  std::string out;
  AppendAdsMetrics(ads, &out);
  AppendMetric("facet_snapshot_builds_total", "counter", "Snapshot builds.", s.builds, &out);
  AppendMetric("facet_snapshot_build_seconds", "gauge", "Duration of the last snapshot build.",
               absl::ToDoubleSeconds(s.last_build_duration), &out);
  AppendMetric("facet_objects_rejected", "gauge", "Objects whose latest generation is rejected.",
               s.rejected_objects, &out);
  AppendMetric("facet_status_writes_total", "counter", "Status subresource writes.",
               s.status_writes, &out);
  AppendMetric("facet_status_write_errors_total", "counter", "Failed status writes.",
               s.status_errors, &out);
  AppendMetric("facet_leader", "gauge", "1 while this replica leads (writes status).",
               leading ? 1 : 0, &out);
  AppendMetric("facet_kube_lists_total", "counter", "Complete lists of watched collections.",
               s.reflectors.lists, &out);
  AppendMetric("facet_kube_watches_total", "counter", "Watches started (each restart counts).",
               s.reflectors.watches, &out);
  AppendMetric("facet_kube_watch_errors_total", "counter",
               "List+watch rounds that ended in an error and relisted.", s.reflectors.watch_errors,
               &out);
  return out;
}

}  // namespace

int RunController(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Flags flags;
  flags.Define("kubeconfig", "", "kubeconfig file (empty: $KUBECONFIG, in-cluster, ~/.kube/config)");
  flags.Define("context", "", "kubeconfig context (empty: current-context)");
  flags.Define("namespaces", "", "comma-separated namespaces to watch (empty: all)");
  flags.Define("xds-address", "0.0.0.0:18000", "HOST:PORT for the ADS server");
  flags.Define("admin-address", "0.0.0.0:18080",
               "HOST:PORT for /healthz, /readyz, /metrics, /clients, /explain (empty: disabled)");
  flags.Define("node-metadata-params", "", "PARAM[=METADATA_KEY],... from node.metadata");
  flags.Define("allow-old-style-names", "true", "serve resources with non-xdstp names", true);
  flags.Define("leader-election", "true", "elect one replica to write status", true);
  flags.Define("leader-election-namespace", "", "namespace of the Lease (default: $POD_NAMESPACE, else the kubeconfig's namespace)");
  flags.Define("leader-election-lease", "facet-controller", "name of the Lease");
  flags.Define("ready-file", "", "write {\"xds_address\",\"admin_address\"} JSON here once ready");
  flags.Define("webhook-address", "",
               "HOST:PORT for the validating admission webhook (HTTPS POST /validate; empty: off)");
  flags.Define("webhook-tls-cert", "", "PEM certificate of the webhook (with --webhook-address)");
  flags.Define("webhook-tls-key", "", "PEM private key of the webhook (with --webhook-address)");
  flags.Define("log-level", "info", "trace, debug, info, warn or error");
  DefineXdsServerFlags(flags);
  DefineTlsFlags(flags, "admin-tls", "the admin port");
  flags.Define("help", "false", "print this help", true);
  const std::string usage = absl::StrCat("usage: facet controller [flags]\n", flags.Help());
  if (absl::Status s = flags.Parse(args); !s.ok() || !flags.positional().empty()) {
    err << "facet controller: " << (s.ok() ? "unexpected argument" : s.message()) << "\n" << usage;
    return 2;
  }
  if (flags.GetBool("help")) {
    out << usage;
    return 0;
  }
  absl::StatusOr<std::shared_ptr<const xds::ParameterMapping>> mapping = ApplyCommonFlags(flags);
  if (!mapping.ok()) {
    err << "facet controller: " << mapping.status().message() << "\n";
    return 2;
  }
  if (!flags.Get("webhook-address").empty() &&
      (flags.Get("webhook-tls-cert").empty() || flags.Get("webhook-tls-key").empty())) {
    err << "facet controller: --webhook-address needs --webhook-tls-cert and --webhook-tls-key\n";
    return 2;
  }
  absl::StatusOr<XdsServerOptions> server_options = XdsServerOptionsFromFlags(flags);
  if (!server_options.ok()) {
    err << "facet controller: " << server_options.status().message() << "\n";
    return ExitCodeFor(server_options.status());
  }
  absl::StatusOr<TlsFiles> admin_tls = TlsFilesFromFlags(flags, "admin-tls");
  if (!admin_tls.ok()) {
    err << "facet controller: " << admin_tls.status().message() << "\n";
    return ExitCodeFor(admin_tls.status());
  }

  kube::ProcessEnvironment environment;
  auto config = kube::LoadClusterConfig(environment, flags.Get("kubeconfig"), flags.Get("context"));
  if (!config.ok()) {
    err << "facet controller: " << config.status().message() << "\n";
    return 1;
  }
  auto client = kube::CpprestKubeClient::Create(*config);
  if (!client.ok()) {
    err << "facet controller: " << client.status().message() << "\n";
    return 1;
  }
  std::string lease_namespace = flags.Get("leader-election-namespace");
  if (lease_namespace.empty()) {
    lease_namespace = environment.GetEnv("POD_NAMESPACE").value_or(config->default_namespace);
  }

  // Normally done by main() already; repeated for callers that run the
  // command in-process.
  BlockShutdownSignals();
  const sigset_t signals = ShutdownSignals();

  xds::SnapshotStore store;
  xds::AdsService::Options ads_options = server_options->ads;
  ads_options.mapping = *std::move(mapping);
  xds::AdsService ads(store, ads_options);

  kube::RealClock clock;
  // Declared before the elector, which releases the Lease through it.
  std::unique_ptr<kube::CpprestKubeClient> lease_client;
  std::unique_ptr<LeaderElector> elector;
  KubeSource* source_ptr = nullptr;
  if (flags.GetBool("leader-election")) {
    LeaderElector::Options election;
    election.lease_namespace = lease_namespace;
    election.lease_name = flags.Get("leader-election-lease");
    election.identity = Identity();
    // The Lease has its own client, whose requests give up at the renew
    // deadline: a hung renewal cannot outlive the leadership it renews.
    kube::CpprestKubeClient::Options lease_options;
    lease_options.request_timeout = election.renew_deadline;
    auto lease = kube::CpprestKubeClient::Create(*config, lease_options);
    if (!lease.ok()) {
      err << "facet controller: " << lease.status().message() << "\n";
      return 1;
    }
    lease_client = *std::move(lease);
    auto created = LeaderElector::Create(*lease_client, clock, election, [&source_ptr](bool leading) {
      if (leading && source_ptr != nullptr) source_ptr->RequestStatusSync();
    });
    if (!created.ok()) {
      err << "facet controller: " << created.status().message() << "\n";
      return 2;
    }
    elector = *std::move(created);
  }
  KubeSource::Options source_options;
  if (!flags.Get("namespaces").empty()) {
    source_options.namespaces = absl::StrSplit(flags.Get("namespaces"), ',', absl::SkipEmpty());
  }
  source_options.build.allow_old_style_names = flags.GetBool("allow-old-style-names");
  LeaderElector* elector_ptr = elector.get();
  KubeSource source(**client, store, &ads,
                    elector_ptr == nullptr ? std::function<bool()>()
                                           : [elector_ptr] { return elector_ptr->is_leader(); },
                    source_options);
  source_ptr = &source;
  source.Start();
  if (elector) elector->Start();

  // Every replica, leader or not, answers admission reviews.
  std::unique_ptr<WebhookServer> webhook;
  if (!flags.Get("webhook-address").empty()) {
    const xds::BuildOptions build = source_options.build;
    auto started = WebhookServer::Start(
        flags.Get("webhook-address"), flags.Get("webhook-tls-cert"), flags.Get("webhook-tls-key"),
        [&source, build](const std::string& body) {
          return ReviewAdmission(body, source.AuthorityObjects(), build);
        });
    if (!started.ok()) {
      err << "facet controller: --webhook-address: " << started.status().message() << "\n";
      if (elector) elector->Stop();
      source.Stop();
      return 1;
    }
    webhook = *std::move(started);
  }

  std::unique_ptr<AdminServer> admin;
  if (!flags.Get("admin-address").empty()) {
    std::map<std::string, AdminServer::Handler> routes = {
        {"/healthz", [] { return AdminResponse{200, "text/plain; charset=utf-8", "ok\n"}; }},
         {"/readyz",
          [&] {
            return source.ready()
                       ? AdminResponse{200, "text/plain; charset=utf-8", "ready\n"}
                       : AdminResponse{503, "text/plain; charset=utf-8",
                                       "waiting for the initial list of every watched collection\n"};
          }},
         {"/metrics", [&] {
            return AdminResponse{200, "text/plain; version=0.0.4",
                                 Metrics(source, ads, elector_ptr == nullptr || elector_ptr->is_leader())};
          }}};
    routes.merge(InsightRoutes(ads));  // /clients and /explain.
    auto started = AdminServer::Start(flags.Get("admin-address"), std::move(routes), *admin_tls);
    if (!started.ok()) {
      err << "facet controller: --admin-address: " << started.status().message() << "\n";
      return 1;
    }
    admin = *std::move(started);
  }
  // Open the xDS port only once the cluster's state is known: a client that
  // connected earlier would be told its resources do not exist.
  spdlog::info("facet controller: waiting for the initial list of every watched collection");
  while (!source.ready()) {
    const timespec poll{0, 100'000'000};
    const int received = sigtimedwait(&signals, nullptr, &poll);
    if (received == SIGTERM || received == SIGINT) {
      spdlog::info("received a signal before the first sync; shutting down");
      if (elector) elector->Stop();
      source.Stop();
      return 0;
    }
  }

  absl::StatusOr<XdsListener> listener =
      StartXdsListener(flags.Get("xds-address"), ads, *server_options);
  if (!listener.ok()) {
    err << "facet controller: --xds-address: " << listener.status().message() << "\n";
    if (elector) elector->Stop();
    source.Stop();
    return 1;
  }
  std::unique_ptr<grpc::Server> server = std::move(listener->server);
  const std::string xds_address = listener->address;

  spdlog::info("facet controller: xDS on {}{}; watching {}", xds_address,
               admin ? absl::StrCat(", admin on ", admin->scheme(), "://", admin->address()) : "",
               flags.Get("namespaces").empty() ? "all namespaces" : flags.Get("namespaces"));
  if (!flags.Get("ready-file").empty() &&
      !WriteReadyFile(flags.Get("ready-file"), xds_address, admin ? admin->address() : "",
                      webhook ? webhook->address() : "")) {
    spdlog::error("cannot write --ready-file {}", flags.Get("ready-file"));
  }

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("received {}; shutting down", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  if (elector) elector->Stop();  // Releases the lease so another replica leads at once.
  ads.Drain();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  webhook.reset();
  source.Stop();
  admin.reset();
  return 0;
}

}  // namespace facet::controller
