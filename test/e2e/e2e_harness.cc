#include "test/e2e/e2e_harness.h"

#include <httplib.h>  // Its feature macros come from pkg-config (CMakeLists.txt).
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

#ifndef FACET_BINARY
#error "FACET_BINARY must name the facet executable"
#endif

namespace facet::e2e {
namespace {

namespace fs = std::filesystem;

constexpr char kPlaceholderStart[] = "${port:";
constexpr absl::Duration kStartTimeout = absl::Seconds(30);

// Returns the last `max_chars` characters of `text`.
std::string Tail(absl::string_view text, size_t max_chars = 4000) {
  if (text.size() <= max_chars) return std::string(text);
  return absl::StrCat("...", text.substr(text.size() - max_chars));
}

// Returns the full path of `program` found in $PATH, or "".
std::string FindInPath(absl::string_view program) {
  const char* path = getenv("PATH");
  if (path == nullptr) return "";
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

bool IsBackendId(absl::string_view id) {
  if (id.empty()) return false;
  for (char c : id) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-') return false;
  }
  return true;
}

absl::StatusOr<google::protobuf::Struct> ParseJsonObject(absl::string_view json,
                                                         absl::string_view what) {
  google::protobuf::Struct object;
  auto status = google::protobuf::util::JsonStringToMessage(std::string(json), &object);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is not a JSON object: ", status.ToString(), "\n", json));
  }
  return object;
}

std::string StringField(const google::protobuf::Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  return it == object.fields().end() ? "" : it->second.string_value();
}

google::protobuf::Value StringValue(absl::string_view s) {
  google::protobuf::Value value;
  value.set_string_value(std::string(s));
  return value;
}

google::protobuf::Value ObjectValue(google::protobuf::Struct object = {}) {
  google::protobuf::Value value;
  *value.mutable_struct_value() = std::move(object);
  return value;
}

google::protobuf::Value StringListValue(const std::vector<std::string>& strings) {
  google::protobuf::Value value;
  for (const std::string& s : strings) *value.mutable_list_value()->add_values() = StringValue(s);
  return value;
}

// Returns an xds_servers entry: `server_uri`, insecure, xds_v3.
google::protobuf::Value XdsServerValue(absl::string_view server_uri) {
  google::protobuf::Struct server;
  auto& fields = *server.mutable_fields();
  fields["server_uri"] = StringValue(server_uri);
  google::protobuf::Struct insecure;
  (*insecure.mutable_fields())["type"] = StringValue("insecure");
  *fields["channel_creds"].mutable_list_value()->add_values() = ObjectValue(insecure);
  fields["server_features"] = StringListValue({"xds_v3"});
  return ObjectValue(std::move(server));
}

google::protobuf::Value XdsServersValue(const std::vector<std::string>& server_uris) {
  google::protobuf::Value value;
  value.mutable_list_value();
  for (const std::string& uri : server_uris) {
    *value.mutable_list_value()->add_values() = XdsServerValue(uri);
  }
  return value;
}

// Returns a node: `id`, an empty locality (grpc-js requires one) and
// `metadata` as string fields.
google::protobuf::Value NodeValue(absl::string_view id,
                                  const std::map<std::string, std::string>& metadata) {
  google::protobuf::Struct metadata_struct;
  for (const auto& [key, value] : metadata) {
    (*metadata_struct.mutable_fields())[key] = StringValue(value);
  }
  google::protobuf::Struct node;
  auto& fields = *node.mutable_fields();
  fields["id"] = StringValue(id);
  fields["locality"] = ObjectValue();
  fields["metadata"] = ObjectValue(std::move(metadata_struct));
  return ObjectValue(std::move(node));
}

absl::StatusOr<std::string> ToJson(const google::protobuf::Struct& object) {
  std::string json;
  google::protobuf::util::JsonPrintOptions print;
  print.add_whitespace = true;
  auto status = google::protobuf::util::MessageToJsonString(object, &json, print);
  if (!status.ok()) return absl::InternalError(status.ToString());
  return json;
}

// Splits "host:port"; InvalidArgument naming `address` otherwise.
absl::StatusOr<std::pair<std::string, int>> HostPort(absl::string_view address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\" is not HOST:PORT"));
  }
  return std::make_pair(std::string(address.substr(0, colon)), port);
}

std::vector<std::string> ClientArgs(const ClientOptions& options) {
  std::vector<std::string> args = {"--target", options.target, "--rpc-timeout-ms",
                                   absl::StrCat(absl::ToInt64Milliseconds(options.rpc_timeout))};
  if (options.duration > absl::ZeroDuration()) {
    args.insert(args.end(),
                {"--duration-ms", absl::StrCat(absl::ToInt64Milliseconds(options.duration)),
                 "--interval-ms", absl::StrCat(absl::ToInt64Milliseconds(options.interval))});
  } else {
    args.insert(args.end(), {"--count", absl::StrCat(options.count)});
  }
  if (!options.methods.empty()) {
    args.insert(args.end(), {"--method", absl::StrJoin(options.methods, ",")});
  }
  if (!options.metadata.empty()) {
    std::vector<std::string> sets;
    for (const auto& set : options.metadata) {
      sets.push_back(absl::StrJoin(set, ",", absl::PairFormatter("=")));
    }
    args.insert(args.end(), {"--metadata", absl::StrJoin(sets, ";")});
  }
  if (options.outcomes) args.push_back("--outcomes=true");
  return args;
}

}  // namespace

std::vector<std::string> SplitLines(absl::string_view text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

absl::StatusOr<double> MetricValue(absl::string_view text, absl::string_view metric) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#")) continue;
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos || line.substr(0, space) != metric) continue;
    double value = 0;
    if (!absl::SimpleAtod(line.substr(space + 1), &value)) {
      return absl::InvalidArgumentError(absl::StrCat("bad sample: ", line));
    }
    return value;
  }
  return absl::NotFoundError(absl::StrCat("no sample ", metric));
}

absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  absl::Status status = absl::OkStatus();
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    status = absl::ErrnoToStatus(errno, "bind 127.0.0.1:0");
  }
  close(fd);
  if (!status.ok()) return status;
  return static_cast<int>(ntohs(address.sin_port));
}

std::string ClientRun::ToString() const {
  return absl::StrCat(description, "\n  ", exit.ToString(), "\n  stdout:\n    ",
                      absl::StrJoin(lines, "\n    "), "\n  stderr:\n", Tail(stderr_text));
}

absl::StatusOr<std::unique_ptr<E2eHarness>> E2eHarness::Create() {
  std::error_code error;
  fs::path base = fs::temp_directory_path(error);
  if (error) base = "/tmp";
  std::string pattern = (base / "facet-e2e.XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("mkdtemp ", pattern));
  }
  std::unique_ptr<E2eHarness> harness(new E2eHarness(pattern));
  fs::create_directories(harness->manifest_dir_, error);
  if (!error) fs::create_directories(harness->dir_ + "/logs", error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", harness->dir_, ": ", error.message()));
  }
  return harness;
}

E2eHarness::E2eHarness(std::string dir)
    : dir_(std::move(dir)), manifest_dir_(dir_ + "/manifests") {}

E2eHarness::~E2eHarness() {
  servers_.clear();
  backends_.clear();
  if (keep_dir_ || getenv("FACET_E2E_KEEP_TMPDIR") != nullptr) return;
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

std::string E2eHarness::NodeClientUnavailableReason() {
  if (FindInPath("node").empty()) {
    return "Node client tests skipped: no `node` on PATH (install Node.js 18+ and run "
           "scripts/setup-node-tests.sh)";
  }
  const std::string modules = std::string(FACET_E2E_NODE_DIR) + "/node_modules/@grpc/grpc-js-xds";
  if (!fs::exists(modules)) {
    return absl::StrCat("Node client tests skipped: ", modules,
                        " is missing (run scripts/setup-node-tests.sh, i.e. `npm ci` in "
                        "test/e2e/node)");
  }
  return "";
}

ProcessOptions E2eHarness::ChildOptions(absl::string_view name,
                                        std::vector<std::string> argv) const {
  ProcessOptions options;
  options.argv = std::move(argv);
  options.stdout_path = absl::StrCat(dir_, "/logs/", name, ".stdout");
  options.stderr_path = absl::StrCat(dir_, "/logs/", name, ".stderr");
  return options;
}

absl::StatusOr<int> E2eHarness::StartBackend(absl::string_view id) {
  if (!IsBackendId(id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("backend id \"", id, "\" must be lower-case letters, digits and '-'"));
  }
  if (ports_.count(std::string(id)) != 0) {
    return absl::AlreadyExistsError(absl::StrCat("backend ", id, " is already running"));
  }
  const std::string port_file = absl::StrCat(dir_, "/backend-", id, ".port");
  absl::StatusOr<std::unique_ptr<Process>> backend = Process::Start(
      ChildOptions(absl::StrCat("backend-", id),
                   {FACET_E2E_BACKEND_BINARY, "--id", std::string(id), "--port-file", port_file}));
  if (!backend.ok()) return backend.status();
  absl::StatusOr<std::string> contents = WaitForFile(port_file, kStartTimeout, backend->get());
  if (!contents.ok()) return contents.status();
  int port = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*contents), &port) || port <= 0) {
    return absl::InternalError(absl::StrCat("backend ", id, " wrote a bad port file: ", *contents));
  }
  ports_[std::string(id)] = port;
  backends_.push_back(*std::move(backend));
  return port;
}

absl::Status E2eHarness::StartBackends(const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    absl::StatusOr<int> port = StartBackend(id);
    if (!port.ok()) return port.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> E2eHarness::RenderManifest(absl::string_view template_name) const {
  const std::string path = absl::StrCat(FACET_E2E_TESTDATA_DIR, "/", template_name);
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  std::string out;
  absl::string_view rest = *text;
  while (true) {
    size_t start = rest.find(kPlaceholderStart);
    size_t end = start == absl::string_view::npos ? start : rest.find('}', start);
    if (end == absl::string_view::npos) break;
    const size_t id_start = start + sizeof(kPlaceholderStart) - 1;
    absl::string_view id = rest.substr(id_start, end - id_start);
    if (!IsBackendId(id)) {
      // Not a placeholder (e.g. "${port:<id>}" in a comment): keep it.
      absl::StrAppend(&out, rest.substr(0, id_start));
      rest.remove_prefix(id_start);
      continue;
    }
    auto port = ports_.find(std::string(id));
    if (port == ports_.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          template_name, " uses ${port:", id, "} but no backend \"", id, "\" was started"));
    }
    absl::StrAppend(&out, rest.substr(0, start), port->second);
    rest.remove_prefix(end + 1);
  }
  absl::StrAppend(&out, rest);
  return out;
}

absl::StatusOr<std::string> E2eHarness::AddManifestDir(absl::string_view name) {
  if (!IsBackendId(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "manifest directory name \"", name, "\" must be lower-case letters, digits and '-'"));
  }
  const std::string path = absl::StrCat(dir_, "/manifests-", name);
  std::error_code error;
  fs::create_directories(path, error);
  if (error) return absl::InternalError(absl::StrCat("cannot create ", path, ": ", error.message()));
  return path;
}

absl::Status E2eHarness::WriteManifest(absl::string_view template_name,
                                       absl::string_view file_name, absl::string_view dir) {
  absl::StatusOr<std::string> text = RenderManifest(template_name);
  if (!text.ok()) return text.status();
  // Stage outside the watched directory, then rename into it: the watcher
  // sees one complete file appear or change.
  const std::string staged = absl::StrCat(dir_, "/", file_name, ".staged");
  if (absl::Status written = WriteFileAtomically(staged, *text); !written.ok()) return written;
  const std::string target =
      absl::StrCat(dir.empty() ? absl::string_view(manifest_dir_) : dir, "/", file_name);
  if (rename(staged.c_str(), target.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("rename ", staged, " to ", target));
  }
  return absl::OkStatus();
}

absl::Status E2eHarness::RemoveManifest(absl::string_view file_name) {
  std::error_code error;
  if (!fs::remove(absl::StrCat(manifest_dir_, "/", file_name), error) || error) {
    return absl::NotFoundError(absl::StrCat("cannot remove ", file_name, " from ", manifest_dir_,
                                            error ? ": " + error.message() : ""));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> E2eHarness::ValidateManifests(absl::string_view dir) {
  const std::string manifests(dir.empty() ? absl::string_view(manifest_dir_) : dir);
  absl::StatusOr<std::unique_ptr<Process>> validate =
      Process::Start(ChildOptions("validate", {FACET_BINARY, "validate", manifests}));
  if (!validate.ok()) return validate.status();
  absl::StatusOr<ExitStatus> exit = (*validate)->WaitExit(kStartTimeout);
  if (!exit.ok()) return exit.status();
  std::string output = absl::StrCat((*validate)->Stdout(), (*validate)->Stderr());
  if (!exit->Succeeded()) {
    return absl::FailedPreconditionError(
        absl::StrCat("facet validate ", manifests, ": ", exit->ToString(), "\n", output));
  }
  return output;
}

absl::Status E2eHarness::StartFacet(const std::vector<std::string>& extra_args) {
  return StartNamedFacet(kFacet, manifest_dir_, {.extra_args = extra_args});
}

absl::Status E2eHarness::StopFacet(absl::Duration timeout) { return Stop(kFacet, timeout); }

absl::Status E2eHarness::StartNamedFacet(absl::string_view name, absl::string_view manifest_dir,
                                         const ServerOptions& options) {
  return StartServer(name, {"serve", "--manifests", std::string(manifest_dir)}, options);
}

absl::Status E2eHarness::StartRelay(absl::string_view name, const RelayConfigOptions& config,
                                    const ServerOptions& options) {
  if (config.servers.empty()) {
    return absl::InvalidArgumentError("RelayConfigOptions.servers is empty");
  }
  google::protobuf::Struct relay;
  auto& fields = *relay.mutable_fields();
  fields["xds_servers"] = XdsServersValue(config.servers);
  if (!config.authorities.empty()) {
    google::protobuf::Struct authorities;
    for (const auto& [authority, servers] : config.authorities) {
      google::protobuf::Struct entry;
      if (!servers.empty()) (*entry.mutable_fields())["xds_servers"] = XdsServersValue(servers);
      (*authorities.mutable_fields())[authority] = ObjectValue(std::move(entry));
    }
    fields["authorities"] = ObjectValue(std::move(authorities));
  }
  fields["node"] = NodeValue(config.node_id, config.metadata);
  absl::StatusOr<std::string> json = ToJson(relay);
  if (!json.ok()) return json.status();
  const std::string path = absl::StrCat(dir_, "/", name, ".json");
  if (absl::Status written = WriteFileAtomically(path, *json); !written.ok()) return written;
  return StartServer(name, {"relay", "--config", path, "--log-level", "debug"}, options);
}

absl::Status E2eHarness::StartServer(absl::string_view name, std::vector<std::string> argv_tail,
                                     const ServerOptions& options) {
  if (!IsBackendId(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("server name \"", name, "\" must be lower-case letters, digits and '-'"));
  }
  Server& server = servers_[std::string(name)];
  if (server.process != nullptr && server.process->Running()) {
    return absl::AlreadyExistsError(absl::StrCat("server ", name, " is already running"));
  }
  ++server.starts;
  // A restarted server logs and reports to new files.
  const std::string instance =
      server.starts == 1 ? std::string(name) : absl::StrCat(name, ".", server.starts);
  const std::string ready_file = absl::StrCat(dir_, "/", instance, ".ready");
  std::vector<std::string> argv = {FACET_BINARY};
  argv.insert(argv.end(), argv_tail.begin(), argv_tail.end());
  argv.insert(argv.end(), {"--xds-address", options.xds_address, "--admin-address",
                           "127.0.0.1:0", "--ready-file", ready_file});
  argv.insert(argv.end(), options.extra_args.begin(), options.extra_args.end());
  server.xds_address.clear();
  server.admin_address.clear();
  absl::StatusOr<std::unique_ptr<Process>> process = Process::Start(ChildOptions(instance, argv));
  if (!process.ok()) return process.status();
  server.process = *std::move(process);
  absl::StatusOr<std::string> ready = WaitForFile(ready_file, kStartTimeout, server.process.get());
  if (!ready.ok()) {
    return absl::Status(
        ready.status().code(),
        absl::StrCat("facet ", argv_tail.front(), " (", name,
                     ") did not become ready: ", ready.status().message(), "\nstderr:\n",
                     Tail(server.process->Stderr())));
  }
  absl::StatusOr<google::protobuf::Struct> object = ParseJsonObject(*ready, ready_file);
  if (!object.ok()) return object.status();
  server.xds_address = StringField(*object, "xds_address");
  server.admin_address = StringField(*object, "admin_address");
  if (server.xds_address.empty() || absl::EndsWith(server.xds_address, ":0")) {
    return absl::InternalError(
        absl::StrCat(ready_file, " has no usable \"xds_address\": ", *ready));
  }
  return absl::OkStatus();
}

const E2eHarness::Server& E2eHarness::ServerOf(absl::string_view name) const {
  static const Server* const kNever = new Server();
  auto it = servers_.find(name);
  return it == servers_.end() ? *kNever : it->second;
}

const std::string& E2eHarness::XdsAddressOf(absl::string_view name) const {
  return ServerOf(name).xds_address;
}

const std::string& E2eHarness::AdminAddressOf(absl::string_view name) const {
  return ServerOf(name).admin_address;
}

absl::Status E2eHarness::Stop(absl::string_view name, absl::Duration timeout) {
  Process* process = ServerOf(name).process.get();
  if (process == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(name, " was never started"));
  }
  if (absl::Status sent = process->Signal(SIGTERM); !sent.ok()) return sent;
  absl::StatusOr<ExitStatus> exit = process->WaitExit(timeout);
  if (!exit.ok()) return exit.status();
  if (!exit->Succeeded()) {
    return absl::InternalError(absl::StrCat(process->description(),
                                            " did not exit cleanly on SIGTERM: ", exit->ToString(),
                                            "\nstderr:\n", Tail(process->Stderr())));
  }
  return absl::OkStatus();
}

absl::Status E2eHarness::Kill(absl::string_view name) {
  Process* process = ServerOf(name).process.get();
  if (process == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(name, " was never started"));
  }
  if (absl::Status sent = process->Signal(SIGKILL); !sent.ok()) return sent;
  absl::StatusOr<ExitStatus> exit = process->WaitExit(kStartTimeout);
  return exit.ok() ? absl::OkStatus() : exit.status();
}

std::string E2eHarness::LogOf(absl::string_view name) const {
  const Process* process = ServerOf(name).process.get();
  return process == nullptr ? "" : process->Stderr();
}

std::string E2eHarness::ServerLogs() const {
  std::string logs;
  for (const auto& [name, server] : servers_) {
    if (server.process == nullptr) continue;
    absl::StrAppend(&logs, "--- ", name, " stderr:\n", Tail(server.process->Stderr()), "\n");
  }
  return logs;
}

absl::StatusOr<std::string> E2eHarness::AdminGet(absl::string_view name,
                                                 absl::string_view path) const {
  const std::string& address = AdminAddressOf(name);
  if (address.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(name, " has no admin address"));
  }
  absl::StatusOr<std::pair<std::string, int>> host_port = HostPort(address);
  if (!host_port.ok()) return host_port.status();
  httplib::Client client(host_port->first, host_port->second);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  httplib::Result result = client.Get(std::string(path));
  if (!result) {
    return absl::UnavailableError(absl::StrCat("GET http://", address, path, ": ",
                                               httplib::to_string(result.error())));
  }
  if (result->status != 200) {
    return absl::UnavailableError(
        absl::StrCat("GET http://", address, path, " answered ", result->status));
  }
  return result->body;
}

absl::StatusOr<double> E2eHarness::Metric(absl::string_view name,
                                          absl::string_view metric) const {
  absl::StatusOr<std::string> text = AdminGet(name, "/metrics");
  if (!text.ok()) return text.status();
  absl::StatusOr<double> value = MetricValue(*text, metric);
  if (!value.ok()) {
    return absl::Status(value.status().code(),
                        absl::StrCat(name, " /metrics: ", value.status().message()));
  }
  return value;
}

absl::StatusOr<std::string> E2eHarness::WriteBootstrap(const BootstrapOptions& options) {
  const std::string& server =
      options.server_address.empty() ? xds_address() : options.server_address;
  if (server.empty()) {
    return absl::FailedPreconditionError("start facet before writing a bootstrap");
  }
  google::protobuf::Struct bootstrap;
  auto& fields = *bootstrap.mutable_fields();
  fields["xds_servers"] = XdsServersValue({server});
  fields["node"] = NodeValue(options.node_id, options.metadata);
  if (!options.authorities.empty()) {
    google::protobuf::Struct authorities;
    for (const std::string& authority : options.authorities) {
      (*authorities.mutable_fields())[authority] = ObjectValue();
    }
    fields["authorities"] = ObjectValue(std::move(authorities));
  }
  absl::StatusOr<std::string> json = ToJson(bootstrap);
  if (!json.ok()) return json.status();
  const std::string path = absl::StrCat(dir_, "/bootstrap-", ++next_bootstrap_, ".json");
  if (absl::Status written = WriteFileAtomically(path, *json); !written.ok()) return written;
  return path;
}

absl::StatusOr<std::unique_ptr<Process>> E2eHarness::StartClient(const ClientOptions& options) {
  if (options.bootstrap_path.empty()) {
    return absl::InvalidArgumentError("ClientOptions.bootstrap_path is empty");
  }
  std::vector<std::string> argv;
  std::string name;
  if (options.kind == ClientKind::kCpp) {
    argv = {FACET_E2E_CPP_CLIENT_BINARY};
    name = absl::StrCat("cpp-client-", ++next_client_);
  } else {
    if (std::string reason = NodeClientUnavailableReason(); !reason.empty()) {
      return absl::FailedPreconditionError(reason);
    }
    argv = {FindInPath("node"), std::string(FACET_E2E_NODE_DIR) + "/client.js"};
    name = absl::StrCat("node-client-", ++next_client_);
  }
  for (std::string& arg : ClientArgs(options)) argv.push_back(std::move(arg));
  ProcessOptions process = ChildOptions(name, std::move(argv));
  process.env["GRPC_XDS_BOOTSTRAP"] = options.bootstrap_path;
  process.env["GRPC_XDS_BOOTSTRAP_CONFIG"] = std::nullopt;
  process.env["GRPC_EXPERIMENTAL_XDS_FEDERATION"] =
      options.federation ? std::optional<std::string>("true") : std::nullopt;
  return Process::Start(process);
}

absl::StatusOr<ClientRun> E2eHarness::FinishClient(Process& client, absl::Duration timeout) {
  absl::StatusOr<ExitStatus> exit = client.WaitExit(timeout);
  if (!exit.ok()) {
    return absl::DeadlineExceededError(absl::StrCat(exit.status().message(), "\nstdout:\n",
                                                    Tail(client.Stdout()), "\nstderr:\n",
                                                    Tail(client.Stderr())));
  }
  return ClientRun{.description = client.description(),
                   .exit = *exit,
                   .lines = SplitLines(client.Stdout()),
                   .stderr_text = client.Stderr()};
}

absl::StatusOr<std::vector<ClientRun>> E2eHarness::RunClients(
    const std::vector<ClientOptions>& options, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<std::unique_ptr<Process>> clients;
  for (const ClientOptions& client_options : options) {
    absl::StatusOr<std::unique_ptr<Process>> client = StartClient(client_options);
    if (!client.ok()) return client.status();
    clients.push_back(*std::move(client));
  }
  std::vector<ClientRun> runs;
  for (const std::unique_ptr<Process>& client : clients) {
    absl::StatusOr<ClientRun> run = FinishClient(*client, deadline - absl::Now());
    if (!run.ok()) return run.status();
    runs.push_back(*std::move(run));
  }
  return runs;
}

absl::StatusOr<ClientRun> E2eHarness::RunClient(const ClientOptions& options,
                                                absl::Duration timeout) {
  absl::StatusOr<std::vector<ClientRun>> runs = RunClients({options}, timeout);
  if (!runs.ok()) return runs.status();
  return std::move(runs->front());
}

}  // namespace facet::e2e
