#include "test/controller_e2e/controller_harness.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "test/kube_api_server/test_http_client.h"

namespace facet::e2e {
namespace {

namespace fs = std::filesystem;
using ::facet::testing::HttpConnection;
using ::facet::testing::HttpHead;

constexpr absl::Duration kStartTimeout = absl::Seconds(30);
constexpr absl::Duration kHttpTimeout = absl::Seconds(20);
constexpr char kToken[] = "controller-e2e-token";
constexpr char kFieldManager[] = "facet-e2e";

std::string Tail(absl::string_view text, size_t max_chars = 6000) {
  if (text.size() <= max_chars) return std::string(text);
  return absl::StrCat("...", text.substr(text.size() - max_chars));
}

std::string KubectlPath() {
  const char* path = getenv("PATH");
  if (path == nullptr) return "";
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/kubectl");
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Returns the port of "host:port".
absl::StatusOr<int> PortOf(absl::string_view address) {
  int port = 0;
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("no port in address \"", address, "\""));
  }
  return port;
}

// Sends one request on a fresh connection and reads the whole answer.
absl::StatusOr<std::pair<int, std::string>> HttpRequest(
    int port, const std::string& ca_pem, const std::string& method, const std::string& target,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body) {
  absl::StatusOr<std::unique_ptr<HttpConnection>> connection =
      HttpConnection::Connect(port, ca_pem);
  if (!connection.ok()) return connection.status();
  if (absl::Status sent = (*connection)->Send(method, target, headers, body); !sent.ok()) {
    return sent;
  }
  absl::StatusOr<HttpHead> head = (*connection)->ReadHead(kHttpTimeout);
  if (!head.ok()) return head.status();
  absl::StatusOr<std::string> answer = (*connection)->ReadBody(*head, kHttpTimeout);
  if (!answer.ok()) return answer.status();
  return std::make_pair(head->code, *std::move(answer));
}

// Splits a multi-document YAML stream at its "---" lines.
std::vector<std::string> SplitDocuments(absl::string_view manifest) {
  std::vector<std::string> documents(1);
  for (absl::string_view line : absl::StrSplit(manifest, '\n')) {
    if (absl::StartsWith(line, "---") && absl::StripAsciiWhitespace(line.substr(3)).empty()) {
      documents.emplace_back();
    } else {
      absl::StrAppend(&documents.back(), line, "\n");
    }
  }
  return documents;
}

}  // namespace

std::string ResourcePath(absl::string_view name) { return absl::StrCat(kDemoResources, "/", name); }

std::string AuthorityPath(absl::string_view name) {
  return absl::StrCat("/apis/facet.dev/v1alpha1/xdsauthorities/", name);
}

absl::Status PollUntil(absl::FunctionRef<bool()> done, absl::Duration timeout,
                       absl::string_view what, absl::Duration interval) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("timed out after ", absl::FormatDuration(timeout), " waiting for ", what));
    }
    absl::SleepFor(interval);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> ListeningPorts(int pid) {
  // The process's sockets, by inode ("socket:[INODE]" links under fd/).
  std::set<std::string> inodes;
  std::error_code error;
  for (const fs::directory_entry& fd :
       fs::directory_iterator(absl::StrCat("/proc/", pid, "/fd"), error)) {
    const std::string link = fs::read_symlink(fd.path(), error).string();
    absl::string_view target = link;
    if (!error && absl::ConsumePrefix(&target, "socket:[") && absl::ConsumeSuffix(&target, "]")) {
      inodes.insert(std::string(target));
    }
  }
  if (error) return absl::NotFoundError(absl::StrCat("/proc/", pid, "/fd: ", error.message()));
  std::vector<int> ports;
  for (const char* table : {"tcp", "tcp6"}) {
    absl::StatusOr<std::string> text = ReadFile(absl::StrCat("/proc/", pid, "/net/", table));
    if (!text.ok()) continue;
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
    for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
      std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() < 10 || fields[3] != "0A" || inodes.count(std::string(fields[9])) == 0) {
        continue;  // Header, not listening, or another process's socket.
      }
      const size_t colon = fields[1].rfind(':');
      int port = 0;
      if (colon != absl::string_view::npos &&
          absl::SimpleHexAtoi(fields[1].substr(colon + 1), &port)) {
        ports.push_back(port);
      }
    }
  }
  return ports;
}

const Json* FindCondition(const Json& object, absl::string_view type) {
  const Json* conditions = FindPath(object, {"status", "conditions"});
  if (conditions == nullptr || !conditions->is_array()) return nullptr;
  for (const Json& condition : *conditions) {
    if (GetString(condition, {"type"}) == type) return &condition;
  }
  return nullptr;
}

int64_t Generation(const Json& object) {
  const Json* generation = FindPath(object, {"metadata", "generation"});
  return generation != nullptr && generation->is_number_integer() ? generation->get<int64_t>() : 0;
}

int64_t ObservedGeneration(const Json& object) {
  const Json* observed = FindPath(object, {"status", "observedGeneration"});
  return observed != nullptr && observed->is_number_integer() ? observed->get<int64_t>() : 0;
}

bool HasCondition(const Json& object, absl::string_view type, absl::string_view status,
                  absl::string_view reason) {
  const int64_t generation = Generation(object);
  if (generation == 0 || ObservedGeneration(object) != generation) return false;
  const Json* condition = FindCondition(object, type);
  if (condition == nullptr || GetString(*condition, {"status"}) != status) return false;
  if (!reason.empty() && GetString(*condition, {"reason"}) != reason) return false;
  const Json* observed = Find(*condition, "observedGeneration");
  return observed != nullptr && observed->is_number_integer() &&
         observed->get<int64_t>() == generation;
}

// --- ControllerHarness -----------------------------------------------------------

absl::StatusOr<std::unique_ptr<ControllerHarness>> ControllerHarness::Create(
    const std::vector<std::string>& omitted_resources) {
  absl::StatusOr<std::unique_ptr<E2eHarness>> e2e = E2eHarness::Create();
  if (!e2e.ok()) return e2e.status();
  KubeTestServer::Options options;
  options.tls = true;  // kubectl sends bearer tokens only over TLS.
  options.bearer_token = kToken;
  options.omitted_resources = omitted_resources;
  absl::StatusOr<std::unique_ptr<KubeTestServer>> server = KubeTestServer::Start(options);
  if (!server.ok()) return server.status();
  if (absl::Status created = (*server)->CreateNamespace(kDemoNamespace); !created.ok()) {
    return created;
  }
  const std::string kubeconfig_path = (*e2e)->dir() + "/kubeconfig";
  if (absl::Status written =
          WriteFileAtomically(kubeconfig_path, KubeconfigFor(**server, kDemoNamespace));
      !written.ok()) {
    return written;
  }
  std::error_code error;
  fs::create_directories((*e2e)->dir() + "/home", error);  // kubectl's cache.
  if (error) return absl::InternalError(absl::StrCat("cannot create home: ", error.message()));
  return std::unique_ptr<ControllerHarness>(
      new ControllerHarness(*std::move(e2e), *std::move(server), kubeconfig_path));
}

ControllerHarness::ControllerHarness(std::unique_ptr<E2eHarness> e2e,
                                     std::unique_ptr<KubeTestServer> server,
                                     std::string kubeconfig_path)
    : e2e_(std::move(e2e)),
      server_(std::move(server)),
      kubeconfig_path_(std::move(kubeconfig_path)) {}

ControllerHarness::~ControllerHarness() {
  controllers_.clear();  // Killed before the API server they talk to goes away.
  server_.reset();
  e2e_.reset();
}

std::string ControllerHarness::KubectlUnavailableReason() {
  if (KubectlPath().empty()) return "no `kubectl` on PATH (kubectl 1.32 is /usr/bin/kubectl)";
  return "";
}

absl::StatusOr<std::string> ControllerHarness::RenderE2eTemplate(
    absl::string_view template_name) const {
  absl::StatusOr<std::string> text = e2e_->RenderManifest(template_name);
  if (!text.ok()) return text.status();
  return absl::StrReplaceAll(*text, {{"\n  namespace: e2e\n", "\n  namespace: demo\n"}});
}

absl::StatusOr<std::string> ControllerHarness::ReadTestdata(absl::string_view file_name) {
  return ReadFile(absl::StrCat(FACET_CONTROLLER_E2E_TESTDATA_DIR, "/", file_name));
}

absl::StatusOr<std::string> ControllerHarness::ReadExample(absl::string_view file_name) {
  return ReadFile(absl::StrCat(FACET_EXAMPLES_DIR, "/", file_name));
}

absl::StatusOr<std::string> ControllerHarness::KubeRequest(const std::string& method,
                                                           const std::string& target,
                                                           const std::string& content_type,
                                                           const std::string& body) {
  std::vector<std::pair<std::string, std::string>> headers = {
      {"Authorization", absl::StrCat("Bearer ", server_->token())}, {"Accept", "application/json"}};
  if (!content_type.empty()) headers.emplace_back("Content-Type", content_type);
  absl::StatusOr<std::pair<int, std::string>> answer =
      HttpRequest(server_->port(), server_->ca_pem(), method, target, headers, body);
  if (!answer.ok()) return answer.status();
  const auto& [code, text] = *answer;
  if (code / 100 == 2) return text;
  const std::string message = absl::StrCat(method, " ", target, ": HTTP ", code, ": ", text);
  return code == 404 ? absl::NotFoundError(message) : absl::FailedPreconditionError(message);
}

absl::Status ControllerHarness::ApplyOverHttp(absl::string_view manifest) {
  for (const std::string& document : SplitDocuments(manifest)) {
    absl::StatusOr<Json> object = ParseYaml(document);
    if (!object.ok()) return object.status();
    if (!object->is_object()) continue;  // Comments only.
    const std::string kind = GetString(*object, {"kind"});
    const std::string name = GetString(*object, {"metadata", "name"});
    std::string path;
    if (kind == "XdsAuthority") {
      path = AuthorityPath(name);
    } else if (kind == "XdsResource") {
      std::string ns = GetString(*object, {"metadata", "namespace"});
      path = absl::StrCat("/apis/facet.dev/v1alpha1/namespaces/", ns.empty() ? kDemoNamespace : ns,
                          "/xdsresources/", name);
    } else if (kind == "EndpointSlice") {
      std::string ns = GetString(*object, {"metadata", "namespace"});
      path = absl::StrCat("/apis/discovery.k8s.io/v1/namespaces/", ns.empty() ? kDemoNamespace : ns,
                          "/endpointslices/", name);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("cannot apply a ", kind, " over HTTP"));
    }
    absl::StatusOr<std::string> applied =
        KubeRequest("PATCH", absl::StrCat(path, "?fieldManager=", kFieldManager, "&force=true"),
                    "application/apply-patch+yaml", Dump(*object));
    if (!applied.ok()) return applied.status();
  }
  return absl::OkStatus();
}

absl::Status ControllerHarness::Apply(absl::string_view manifest, bool use_kubectl) {
  if (!use_kubectl || !KubectlUnavailableReason().empty()) return ApplyOverHttp(manifest);
  const std::string path = absl::StrCat(e2e_->dir(), "/applied-", ++next_file_, ".yaml");
  if (absl::Status written = WriteFileAtomically(path, manifest); !written.ok()) return written;
  absl::StatusOr<std::string> output = Kubectl({"apply", "-f", path});
  return output.ok() ? absl::OkStatus() : output.status();
}

absl::Status ControllerHarness::Delete(absl::string_view api_path) {
  return KubeRequest("DELETE", std::string(api_path)).status();
}

absl::StatusOr<std::string> ControllerHarness::Kubectl(const std::vector<std::string>& args) {
  const std::string kubectl = KubectlPath();
  if (kubectl.empty()) return absl::FailedPreconditionError(KubectlUnavailableReason());
  ProcessOptions options;
  options.argv = {kubectl, "--kubeconfig", kubeconfig_path_, "--request-timeout=20s"};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.env["HOME"] = e2e_->dir() + "/home";  // Discovery cache stays in the temp dir.
  options.env["KUBECONFIG"] = std::nullopt;
  const std::string log = absl::StrCat(e2e_->dir(), "/logs/kubectl-", ++next_file_);
  options.stdout_path = log + ".stdout";
  options.stderr_path = log + ".stderr";
  absl::StatusOr<std::unique_ptr<Process>> process = Process::Start(options);
  if (!process.ok()) return process.status();
  absl::StatusOr<ExitStatus> exit = (*process)->WaitExit(absl::Seconds(40));
  if (!exit.ok()) return exit.status();
  if (!exit->Succeeded()) {
    return absl::FailedPreconditionError(absl::StrCat((*process)->description(), ": ",
                                                      exit->ToString(), "\n", (*process)->Stdout(),
                                                      (*process)->Stderr()));
  }
  return (*process)->Stdout();
}

absl::StatusOr<Json> ControllerHarness::GetObject(const std::string& api_path) const {
  std::optional<std::string> text = server_->GetObject(api_path);
  if (!text.has_value()) return absl::NotFoundError(absl::StrCat(api_path, " does not exist"));
  return ParseJson(*text);
}

absl::StatusOr<Json> ControllerHarness::WaitForObject(const std::string& api_path,
                                                      absl::FunctionRef<bool(const Json&)> done,
                                                      absl::string_view what,
                                                      absl::Duration timeout) const {
  absl::StatusOr<Json> last = absl::NotFoundError(absl::StrCat(api_path, " does not exist"));
  absl::Status waited = PollUntil(
      [&] {
        last = GetObject(api_path);
        return last.ok() && done(*last);
      },
      timeout, absl::StrCat(api_path, ": ", what));
  if (waited.ok()) return last;
  return absl::DeadlineExceededError(absl::StrCat(
      waited.message(), "\nlast state: ", last.ok() ? Dump(*last) : last.status().ToString()));
}

absl::StatusOr<Controller*> ControllerHarness::StartController(
    absl::string_view name, const std::vector<std::string>& extra_args, bool wait_for_ready_file) {
  auto controller = std::make_unique<Controller>();
  controller->name = std::string(name);
  controller->ready_file = absl::StrCat(e2e_->dir(), "/", name, ".ready");
  ProcessOptions options;
  options.argv = {FACET_BINARY,    "controller",          "--kubeconfig",    kubeconfig_path_,
                  "--xds-address", "127.0.0.1:0",         "--admin-address", "127.0.0.1:0",
                  "--ready-file",  controller->ready_file};
  options.argv.insert(options.argv.end(), extra_args.begin(), extra_args.end());
  options.env["KUBECONFIG"] = std::nullopt;
  options.env["POD_NAMESPACE"] = std::nullopt;
  options.stdout_path = absl::StrCat(e2e_->dir(), "/logs/", name, ".stdout");
  options.stderr_path = absl::StrCat(e2e_->dir(), "/logs/", name, ".stderr");
  absl::StatusOr<std::unique_ptr<Process>> process = Process::Start(options);
  if (!process.ok()) return process.status();
  controller->process = *std::move(process);
  controllers_.push_back(std::move(controller));
  Controller* started = controllers_.back().get();
  if (wait_for_ready_file) {
    if (absl::Status ready = WaitForReadyFile(*started); !ready.ok()) return ready;
  }
  return started;
}

absl::Status ControllerHarness::WaitForReadyFile(Controller& controller) {
  absl::StatusOr<std::string> ready =
      WaitForFile(controller.ready_file, kStartTimeout, controller.process.get());
  if (!ready.ok()) {
    return absl::Status(ready.status().code(),
                        absl::StrCat("facet controller ", controller.name,
                                     " wrote no ready file: ", ready.status().message(),
                                     "\nstderr:\n", Tail(controller.process->Stderr())));
  }
  absl::StatusOr<Json> addresses = ParseJson(*ready);
  if (!addresses.ok()) return addresses.status();
  controller.xds_address = GetString(*addresses, {"xds_address"});
  controller.admin_address = GetString(*addresses, {"admin_address"});
  controller.webhook_address = GetString(*addresses, {"webhook_address"});
  if (!PortOf(controller.xds_address).ok() || !PortOf(controller.admin_address).ok()) {
    return absl::InternalError(
        absl::StrCat(controller.ready_file, " has no usable addresses: ", *ready));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<int, std::string>> ControllerHarness::AdminGet(
    const std::string& admin_address, const std::string& path) {
  absl::StatusOr<int> port = PortOf(admin_address);
  if (!port.ok()) return port.status();
  return HttpRequest(*port, /*ca_pem=*/"", "GET", path, {}, "");
}

absl::Status ControllerHarness::WaitReady(const Controller& controller, absl::Duration timeout) {
  std::string last;
  absl::Status waited = PollUntil(
      [&] {
        if (!controller.process->Running()) return true;  // Reported below.
        absl::StatusOr<std::pair<int, std::string>> answer =
            AdminGet(controller.admin_address, "/readyz");
        last = answer.ok() ? absl::StrCat(answer->first, " ", answer->second)
                           : answer.status().ToString();
        return answer.ok() && answer->first == 200;
      },
      timeout, absl::StrCat(controller.name, " /readyz 200"));
  if (!controller.process->Running()) {
    absl::StatusOr<ExitStatus> exit = controller.process->WaitExit(absl::Seconds(5));
    return absl::InternalError(absl::StrCat(
        "facet controller ", controller.name,
        " exited before it was ready: ", exit.ok() ? exit->ToString() : exit.status().ToString(),
        "\nstderr:\n", Tail(controller.process->Stderr())));
  }
  if (waited.ok()) return waited;
  return absl::DeadlineExceededError(absl::StrCat(waited.message(), "; last answer: ", last,
                                                  "\nstderr:\n",
                                                  Tail(controller.process->Stderr())));
}

absl::Status ControllerHarness::StopController(Controller& controller, absl::Duration timeout) {
  if (absl::Status sent = controller.process->Signal(SIGTERM); !sent.ok()) return sent;
  absl::StatusOr<ExitStatus> exit = controller.process->WaitExit(timeout);
  if (!exit.ok()) return exit.status();
  if (!exit->Succeeded()) {
    return absl::InternalError(absl::StrCat("facet controller ", controller.name,
                                            " did not exit 0 on SIGTERM: ", exit->ToString(),
                                            "\nstderr:\n", Tail(controller.process->Stderr())));
  }
  return absl::OkStatus();
}

absl::Status ControllerHarness::StopControllers() {
  absl::Status result;
  for (const std::unique_ptr<Controller>& controller : controllers_) {
    if (controller->process->Running()) result.Update(StopController(*controller));
  }
  return result;
}

absl::StatusOr<std::map<std::string, double>> ControllerHarness::Metrics(
    const Controller& controller) {
  absl::StatusOr<std::pair<int, std::string>> answer =
      AdminGet(controller.admin_address, "/metrics");
  if (!answer.ok()) return answer.status();
  if (answer->first != 200) {
    return absl::UnavailableError(absl::StrCat("/metrics answered ", answer->first));
  }
  std::map<std::string, double> metrics;
  for (absl::string_view line : absl::StrSplit(answer->second, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#")) continue;
    std::pair<absl::string_view, absl::string_view> sample = absl::StrSplit(line, ' ');
    double value = 0;
    if (absl::SimpleAtod(sample.second, &value)) metrics[std::string(sample.first)] = value;
  }
  return metrics;
}

absl::StatusOr<double> ControllerHarness::Metric(const Controller& controller,
                                                 const std::string& name) {
  absl::StatusOr<std::map<std::string, double>> metrics = Metrics(controller);
  if (!metrics.ok()) return metrics.status();
  auto it = metrics->find(name);
  if (it == metrics->end()) {
    return absl::NotFoundError(absl::StrCat(controller.name, " /metrics has no ", name));
  }
  return it->second;
}

std::string ControllerHarness::ControllerLogs() const {
  std::string logs;
  for (const std::unique_ptr<Controller>& controller : controllers_) {
    absl::StrAppend(&logs, "--- ", controller->name, " stderr:\n",
                    Tail(controller->process->Stderr()), "\n");
  }
  return logs;
}

absl::StatusOr<std::string> ControllerHarness::WriteBootstrap(
    const Controller& controller, const std::string& node_id,
    const std::map<std::string, std::string>& metadata) {
  Json server = Json::object();
  server["server_uri"] = controller.xds_address;
  Json insecure = Json::object();
  insecure["type"] = "insecure";
  server["channel_creds"] = Json::array({insecure});
  server["server_features"] = Json::array({"xds_v3"});
  Json bootstrap = Json::object();
  bootstrap["xds_servers"] = Json::array({server});
  Json& node = bootstrap["node"];
  node["id"] = node_id;
  node["locality"] = Json::object();  // grpc-js requires one; {} is enough.
  node["metadata"] = Json::object();
  for (const auto& [key, value] : metadata) node["metadata"][key] = value;
  const std::string path =
      absl::StrCat(e2e_->dir(), "/bootstrap-", controller.name, "-", ++next_file_, ".json");
  if (absl::Status written = WriteFileAtomically(path, Dump(bootstrap)); !written.ok()) {
    return written;
  }
  return path;
}

}  // namespace facet::e2e
