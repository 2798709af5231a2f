#include "controller/cli/serving_runner.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/server/console/console_routes.h"
#include "controller/server/metrics/ads_metrics.h"
#include "spdlog/spdlog.h"
#include "xds_server/ads/csds_service.h"
#include "xds_server/explain/explain.h"

namespace facet::controller {

sigset_t ShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

void BlockShutdownSignals() {
  const sigset_t signals = ShutdownSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

namespace {

// The smallest /clients page a caller may ask for: room for one client with
// a few hundred resources.
constexpr size_t kMinClientsPageBytes = 64 << 10;

}  // namespace

std::map<std::string, AdminServer::Handler> InsightRoutes(
    const xds::AdsService& ads, std::function<void(xds::ExplainRequest*)> explain_context) {
  std::map<std::string, AdminServer::Handler> routes;
  routes.emplace("/clients", [&ads](const AdminRequest& request) {
    xds::ClientStatusQuery query;
    query.max_bytes = xds::ClientStatusService::kDefaultMaxResponseBytes;
    if (request.params.count("node") > 0) {
      query.filter_node_id = true;
      query.node_id = request.Param("node");
    }
    if (request.params.count("after") > 0 &&
        !absl::SimpleAtoi(request.Param("after"), &query.after_stream_id)) {
      return AdminResponse{400, "text/plain; charset=utf-8",
                           absl::StrCat("after=\"", request.Param("after"),
                                        "\": expected a stream id\n")};
    }
    // A smaller page for callers that poll (the console asks for 256 KiB);
    // at least kMinClientsPageBytes, at most the default.
    if (request.params.count("max_bytes") > 0) {
      size_t max_bytes = 0;
      if (!absl::SimpleAtoi(request.Param("max_bytes"), &max_bytes)) {
        return AdminResponse{400, "text/plain; charset=utf-8",
                             absl::StrCat("max_bytes=\"", request.Param("max_bytes"),
                                          "\": expected a number of bytes\n")};
      }
      query.max_bytes = std::clamp(max_bytes, kMinClientsPageBytes, query.max_bytes);
    }
    // A page ends at the first client that does not fit; "next_after" says
    // where the next one starts.
    query.prefix_only = true;
    // The query's bound is an estimate; the JSON is cut to the stated bound.
    return AdminResponse{200, "application/json",
                         xds::ReportToJson(ads.ClientStatuses(query), query.max_bytes - 1) + "\n"};
  });
  routes.emplace("/explain", [&ads, explain_context](const AdminRequest& request) {
    auto bad = [](const std::string& message) {
      return AdminResponse{400, "text/plain; charset=utf-8", message + "\n"};
    };
    xds::ExplainRequest explain;
    explain.target = request.Param("target");
    explain.authority = request.Param("authority");
    for (const auto& [name, value] : request.params) {
      if (name == "target" || name == "authority") continue;
      if (name != "param") return bad(absl::StrCat("unknown query parameter \"", name, "\""));
      const size_t equals = value.find('=');
      if (equals == std::string::npos || equals == 0) {
        return bad(absl::StrCat("param=\"", value, "\": expected KEY=VALUE"));
      }
      explain.params[value.substr(0, equals)] = value.substr(equals + 1);
    }
    if (explain_context) explain_context(&explain);
    absl::StatusOr<xds::ExplainResult> result = xds::Explain(*ads.CurrentSnapshot(), explain);
    if (!result.ok()) return bad(std::string(result.status().message()));
    return AdminResponse{200, "application/json", xds::ExplainToJson(*result) + "\n"};
  });
  return routes;
}

bool WriteReadyFile(const std::string& path, const std::string& xds_address,
                    const std::string& admin_address, const std::string& webhook_address) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"xds_address\":\"" << xds_address << "\",\"admin_address\":\"" << admin_address
        << "\"";
    if (!webhook_address.empty()) out << ",\"webhook_address\":\"" << webhook_address << "\"";
    out << "}\n";
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

std::function<void(const PublishTiming&)> ObserveSnapshotBuilds(Metrics& metrics) {
  prometheus::Histogram& histogram = metrics.Histogram(
      "facet_snapshot_build_seconds",
      "Time from a source change (the first of a batch) to the published snapshot.",
      LatencyBuckets());
  return [&histogram](const PublishTiming& timing) {
    histogram.Observe(absl::ToDoubleSeconds(timing.since_change));
  };
}

ServingRunner::ServingRunner(std::string command, std::ostream& out, std::ostream& err)
    : command_(std::move(command)), out_(out), err_(err), signals_(ShutdownSignals()) {
  metrics_ = &parts_.Own(std::make_unique<Metrics>());
}

// Everything started is stopped before the runner's own fields go (the
// admin routes read them).
ServingRunner::~ServingRunner() { parts_.Unwind(); }

std::optional<int> ServingRunner::ParseFlags(const std::vector<std::string>& args,
                                             const ServingFlagDefaults& defaults,
                                             const std::string& usage_line) {
  DefineServingFlags(flags_, defaults);
  flags_.Define("help", "false", "print this help", true);
  usage_ = absl::StrCat(usage_line, "\n", flags_.Help());
  if (absl::Status parsed = flags_.Parse(args); !parsed.ok()) return UsageError(parsed.message());
  if (flags_.GetBool("help")) {
    out_ << usage_;
    return 0;
  }
  return std::nullopt;
}

std::optional<int> ServingRunner::ReadServingFlags() {
  absl::StatusOr<std::shared_ptr<const xds::ParameterMapping>> mapping = ApplyCommonFlags(flags_);
  if (!mapping.ok()) return Fail(2, mapping.status().message());
  mapping_ = *std::move(mapping);
  absl::StatusOr<XdsServerOptions> options = XdsServerOptionsFromFlags(flags_);
  if (!options.ok()) return Fail(ExitCodeFor(options.status()), options.status().message());
  xds_options_ = *std::move(options);
  absl::StatusOr<TlsFiles> admin_tls = TlsFilesFromFlags(flags_, "admin-tls");
  if (!admin_tls.ok()) return Fail(ExitCodeFor(admin_tls.status()), admin_tls.status().message());
  admin_tls_ = *std::move(admin_tls);
  return std::nullopt;
}

int ServingRunner::UsageError(absl::string_view message) {
  err_ << "facet " << command_ << ": " << message << "\n" << usage_;
  return 2;
}

int ServingRunner::Fail(int exit_code, absl::string_view message) {
  err_ << "facet " << command_ << ": " << message << "\n";
  return exit_code;
}

xds::SnapshotStore& ServingRunner::store() {
  if (store_ == nullptr) store_ = &parts_.Own(std::make_unique<xds::SnapshotStore>());
  return *store_;
}

xds::AdsService& ServingRunner::StartAds(xds::DemandObserver* demand_observer) {
  xds::AdsService::Options options = xds_options_.ads;
  options.mapping = mapping_;
  options.demand_observer = demand_observer;
  // Pushed before the service, so they outlive it.
  auto& prometheus = parts_.Own(std::make_unique<PrometheusAdsObserver>(*metrics_));
  events_ = &parts_.Own(std::make_unique<EventLog>());
  options.observer = &parts_.Own(std::make_unique<xds::AdsObserverPair>(prometheus, events_));
  ads_ = &parts_.Own(std::make_unique<xds::AdsService>(store(), std::move(options)));
  return *ads_;
}

int ServingRunner::Run(const std::function<absl::StatusOr<ServingParts>(ServingRunner&)>& build) {
  const int exit_code = StartAndServe(build);
  parts_.Unwind();
  return exit_code;
}

int ServingRunner::StartAndServe(
    const std::function<absl::StatusOr<ServingParts>(ServingRunner&)>& build) {
  // Normally done by main() already; repeated for callers that run the
  // command in-process.
  BlockShutdownSignals();
  absl::StatusOr<ServingParts> parts = build(*this);
  if (!parts.ok()) return Fail(ExitCodeFor(parts.status()), parts.status().message());
  if (ads_ == nullptr) return Fail(1, "internal error: no ADS service was started");
  if (absl::Status admin = StartAdmin(*parts); !admin.ok()) {
    return Fail(1, absl::StrCat("--admin-address: ", admin.message()));
  }
  if (!AwaitReady(*parts)) {
    spdlog::info("received a signal before the first sync; shutting down");
    return 0;
  }
  if (absl::Status xds = OpenXds(); !xds.ok()) {
    return Fail(1, absl::StrCat("--xds-address: ", xds.message()));
  }
  if (parts->stop_first) parts_.Push(parts->stop_first);

  const ServingAddresses addresses{
      xds_address_,
      admin_ == nullptr ? "" : absl::StrCat(", admin on ", admin_->scheme(), "://",
                                            admin_->address())};
  if (parts->announce) parts->announce(addresses);
  if (const std::string& path = flags_.Get("ready-file"); !path.empty()) {
    if (!WriteReadyFile(path, xds_address_, admin_ == nullptr ? "" : admin_->address(),
                        parts->webhook_address)) {
      spdlog::error("cannot write --ready-file {}", path);
    }
  }

  int signal_number = 0;
  sigwait(&signals_, &signal_number);
  spdlog::info("received {}; draining ADS streams",
               signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  parts_.Unwind();
  spdlog::info("stopped");
  return 0;
}

std::function<void(const ReportEvent&)> ServingRunner::RecordReports() {
  return [events = events_](const ReportEvent& report) {
    switch (report.kind) {
      case ReportEvent::Kind::kRejected:
        events->OnRejected(report.subject, report.field, report.reason, report.serving_previous,
                           report.since);
        break;
      case ReportEvent::Kind::kAccepted:
        events->OnAccepted(report.subject);
        break;
      case ReportEvent::Kind::kUnparsed:
      case ReportEvent::Kind::kParsed:
        events->OnFileRead(report.subject, report.reason);
        break;
    }
  };
}

absl::Status ServingRunner::StartAdmin(const ServingParts& parts) {
  if (flags_.Get("admin-address").empty()) return absl::OkStatus();
  std::map<std::string, AdminServer::Handler> routes = parts.routes;
  routes.emplace("/metrics", [metrics = metrics_] {
    return AdminResponse{200, kMetricsContentType, metrics->Text()};
  });
  routes.emplace("/healthz", [] {
    return AdminResponse{200, "text/plain; charset=utf-8", "ok\n"};
  });
  routes.emplace("/readyz", [this, ready = parts.ready, waiting_for = parts.waiting_for] {
    if (ready && !ready()) {
      return AdminResponse{503, "text/plain; charset=utf-8",
                           absl::StrCat("waiting for ", waiting_for, "\n")};
    }
    if (!xds_open_.load(std::memory_order_acquire)) {
      return AdminResponse{503, "text/plain; charset=utf-8", "opening the xDS port\n"};
    }
    return AdminResponse{200, "text/plain; charset=utf-8", "ready\n"};
  });
  routes.emplace("/events", [events = events_](const AdminRequest& request) {
    uint64_t after = 0;
    if (request.params.count("after") > 0 && !absl::SimpleAtoi(request.Param("after"), &after)) {
      return AdminResponse{400, "text/plain; charset=utf-8",
                           absl::StrCat("after=\"", request.Param("after"),
                                        "\": expected a sequence number\n")};
    }
    return AdminResponse{200, "application/json", events->Json(after) + "\n"};
  });
  routes.merge(InsightRoutes(*ads_, parts.explain_context));
  // The console's pages read the routes above; nothing runs while no one looks.
  routes.merge(ConsoleRoutes());
  absl::StatusOr<std::unique_ptr<AdminServer>> admin =
      AdminServer::Start(flags_.Get("admin-address"), std::move(routes), admin_tls_);
  if (!admin.ok()) return admin.status();
  admin_ = &parts_.Own(*std::move(admin));
  return absl::OkStatus();
}

bool ServingRunner::AwaitReady(const ServingParts& parts) {
  if (!parts.ready || parts.ready()) return true;
  spdlog::info("facet {}: waiting for {}", command_, parts.waiting_for);
  while (!parts.ready()) {
    const timespec poll{0, 100'000'000};
    const int received = sigtimedwait(&signals_, nullptr, &poll);
    if (received == SIGTERM || received == SIGINT) return false;
  }
  return true;
}

absl::Status ServingRunner::OpenXds() {
  absl::StatusOr<XdsListener> listener =
      StartXdsListener(flags_.Get("xds-address"), *ads_, xds_options_);
  if (!listener.ok()) return listener.status();
  grpc::Server& server = parts_.Own(std::move(listener->server));
  xds_address_ = listener->address;
  // Clients reconnect elsewhere when their streams end; the rest get 5 s.
  parts_.Push([ads = ads_, &server] {
    ads->Drain();
    server.Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  });
  xds_open_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

}  // namespace facet::controller
