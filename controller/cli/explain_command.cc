#include "controller/cli/explain_command.h"

#include <httplib.h>  // Feature macros come from pkg-config (controller/kubernetes/webhook).

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/cli/flags.h"
#include "controller/sources/manifest/manifest_build.h"
#include "controller/sources/manifest/manifest_loader.h"
#include "xds_server/explain/explain.h"
#include "xds_server/resources/resource_type.h"
#include "xds_server/snapshot/builder.h"

namespace facet::controller {
namespace {

constexpr char kUsage[] =
    "usage: facet explain --target NAME [--param KEY=VALUE]... [--authority AUTHORITY]\n"
    "                     [--output text|json] (PATH... | --server ADMIN_URL)\n"
    "  Shows what a client with these dynamic parameters sees for the xDS target NAME\n"
    "  (xds:///NAME, or a full xdstp:// listener name): the variant each resource selects\n"
    "  and the graph listener -> route -> cluster -> endpoints, or where and why it breaks.\n"
    "  PATH...              manifests (files or directories), loaded as facet validate does\n"
    "  --server ADMIN_URL   ask a running facet serve, controller or relay instead\n"
    "                       (http://HOST:PORT or https://HOST:PORT of its admin port)\n"
    "  --server-ca FILE     PEM CA certificates for an https ADMIN_URL (default: system roots)\n"
    "  --authority A        the client resolves NAME with bootstrap authority A:\n"
    "                       xdstp://A/envoy.config.listener.v3.Listener/NAME\n"
    "  --output FORMAT      text (default) or json\n"
    "  --gateway-client-namespace-param KEY\n"
    "                       the client parameter holding a client's namespace, for\n"
    "                       consumer GRPCRoutes (default: namespace; empty: not served)\n"
    "  Exit status: 0 the graph is complete, 1 it is broken, 2 bad usage or unreadable input\n"
    "  (manifests that cannot be read, a server that cannot be reached or answers an error).\n";

struct Args {
  xds::ExplainRequest request;
  std::string server;
  std::string server_ca;
  bool json = false;
  std::vector<std::string> paths;
  gateway::TranslateOptions gateway;
};

// Parses `args`; returns "" or the usage error.
std::string ParseArgs(const std::vector<std::string>& args, Args* parsed, bool* help) {
  bool have_target = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return "";
    }
    if (!absl::StartsWith(arg, "--")) {
      parsed->paths.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::string value;
    if (const size_t equals = name.find('='); equals != std::string::npos) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
    } else if (name == "target" || name == "param" || name == "authority" || name == "server" ||
               name == "server-ca" || name == "output" ||
               name == kGatewayClientNamespaceParamFlag) {
      if (i + 1 >= args.size()) return absl::StrCat("--", name, ": needs a value");
      value = args[++i];
    } else {
      return absl::StrCat("unknown flag ", arg);
    }
    if (name == "target") {
      parsed->request.target = value;
      have_target = true;
    } else if (name == "param") {
      const size_t equals = value.find('=');
      if (equals == std::string::npos || equals == 0) {
        return absl::StrCat("--param \"", value, "\": expected KEY=VALUE");
      }
      const std::string key = value.substr(0, equals);
      if (parsed->request.params.count(key) > 0) {
        return absl::StrCat("--param ", key, ": given twice");
      }
      parsed->request.params[key] = value.substr(equals + 1);
    } else if (name == "authority") {
      parsed->request.authority = value;
    } else if (name == "server") {
      parsed->server = value;
    } else if (name == "server-ca") {
      parsed->server_ca = value;
    } else if (name == "output") {
      if (value != "text" && value != "json") {
        return absl::StrCat("--output \"", value, "\": expected text or json");
      }
      parsed->json = value == "json";
    } else if (name == kGatewayClientNamespaceParamFlag) {
      parsed->gateway.client_namespace_param = value;
    } else {
      return absl::StrCat("unknown flag --", name);
    }
  }
  if (!have_target || parsed->request.target.empty()) return "--target NAME is required";
  if (parsed->server.empty() == parsed->paths.empty()) {
    return "give either PATH... or --server ADMIN_URL (one of the two)";
  }
  if (!parsed->server_ca.empty() && parsed->server.empty()) return "--server-ca: needs --server";
  if (!parsed->server.empty() && !absl::StartsWith(parsed->server, "http://") &&
      !absl::StartsWith(parsed->server, "https://")) {
    return absl::StrCat("--server \"", parsed->server,
                        "\": expected http://HOST:PORT or https://HOST:PORT");
  }
  return "";
}

// Explains from manifests; returns false (after writing why to `err`) when
// they cannot be read.
bool ExplainManifests(const Args& args, xds::ExplainRequest request, xds::ExplainResult* result,
                      std::ostream& err) {
  ManifestSet manifests = LoadManifests(args.paths);
  bool unreadable = false;
  for (const ManifestProblem& problem : manifests.problems) {
    if (problem.kind == ManifestProblem::Kind::kWarning) continue;
    unreadable = unreadable || problem.kind == ManifestProblem::Kind::kUnreadable;
    err << problem.location << ": " << problem.message << "\n";
  }
  if (unreadable) return false;
  xds::BuildOptions options;
  options.authority_policy = xds::BuildOptions::AuthorityPolicy::kEnforceWhenDeclared;
  // GRPCRoutes and Services are explained as what they generate.
  const ManifestBuild built = BuildManifests(manifests, options, args.gateway);
  // A missing resource that a rejected object declares says which and why.
  std::map<xds::ObjectRef, const xds::ResourceObject*> objects;
  for (const xds::ResourceObject& object : manifests.resources) objects[object.ref] = &object;
  for (const auto& status_ptr : built.builder->Statuses()) {
    const xds::ObjectStatus& status = *status_ptr;
    if (status.accepted || status.served_name.empty()) continue;
    auto object = objects.find(status.ref);
    if (object == objects.end() || !object->second->spec.has_value()) continue;
    const xds::ResourceType* type = xds::FindResourceType(object->second->spec->type);
    if (type == nullptr) continue;
    std::string why = status.ref.ToString();
    if (std::string reason = xds::RejectionReason(status); !reason.empty()) {
      absl::StrAppend(&why, ": ", reason);
    }
    request.rejected[{std::string(type->alias()), status.served_name}] = why;
  }
  absl::StatusOr<xds::ExplainResult> explained = xds::Explain(*built.builder->snapshot(), request);
  if (!explained.ok()) {
    err << "facet explain: " << explained.status().message() << "\n";
    return false;
  }
  *result = *std::move(explained);
  return true;
}

// The host and port of an http(s) URL (the scheme's port when it gives
// none).
struct UrlAddress {
  std::string host;
  std::string port;
};
UrlAddress AddressOf(absl::string_view url) {
  const bool https = absl::StartsWith(url, "https://");
  absl::string_view authority = url.substr(url.find("://") + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  UrlAddress address{std::string(authority), https ? "443" : "80"};
  const size_t close = authority.rfind(']');
  const size_t colon = authority.rfind(':');
  if (absl::StartsWith(authority, "[") && close != absl::string_view::npos) {
    address.host = std::string(authority.substr(1, close - 1));
    if (colon != absl::string_view::npos && colon > close) {
      address.port = std::string(authority.substr(colon + 1));
    }
  } else if (colon != absl::string_view::npos) {
    address.host = std::string(authority.substr(0, colon));
    address.port = std::string(authority.substr(colon + 1));
  }
  return address;
}

// Returns why a TCP connection to the admin port of `url` fails, as the
// system says it ("connect to 127.0.0.1:1: Connection refused"), or "" when
// one succeeds now: httplib only says that it could not connect.
std::string ConnectFailure(absl::string_view url) {
  const UrlAddress address = AddressOf(url);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(address.host.c_str(), address.port.c_str(), &hints, &found);
      rc != 0) {
    return absl::StrCat("cannot resolve \"", address.host, "\": ", gai_strerror(rc));
  }
  std::string failure;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          a->ai_protocol);
    int error = fd < 0 ? errno : 0;
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        pollfd ready{fd, POLLOUT, 0};
        error = ETIMEDOUT;
        if (poll(&ready, 1, /*timeout=*/5000) == 1) {
          socklen_t length = sizeof(error);
          if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
        }
      }
    }
    if (fd >= 0) close(fd);
    if (error == 0) {
      failure.clear();
      break;
    }
    char host[NI_MAXHOST] = "";
    char port[NI_MAXSERV] = "";
    getnameinfo(a->ai_addr, a->ai_addrlen, host, sizeof(host), port, sizeof(port),
                NI_NUMERICHOST | NI_NUMERICSERV);
    if (!failure.empty()) absl::StrAppend(&failure, "; ");
    absl::StrAppend(&failure, "connect to ",
                    a->ai_family == AF_INET6 ? absl::StrCat("[", host, "]") : std::string(host),
                    ":", port, ": ", std::strerror(error));
  }
  freeaddrinfo(found);
  return failure;
}

// Returns the whole reason a request to `url` failed with `error`.
std::string RequestFailure(absl::string_view url, httplib::Error error, httplib::Client& client) {
  std::string text = httplib::to_string(error);
  if (error == httplib::Error::Connection || error == httplib::Error::ConnectionTimeout) {
    if (std::string failure = ConnectFailure(url); !failure.empty()) {
      return absl::StrCat(failure, " (", text, ")");
    }
  }
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (error == httplib::Error::SSLServerVerification) {
    absl::StrAppend(&text, ": ",
                    X509_verify_cert_error_string(client.get_openssl_verify_result()));
  }
#endif
  return text;
}

// Asks a running server's /explain; returns false (after writing why to
// `err`) when it cannot.
bool ExplainOnline(const Args& args, xds::ExplainResult* result, std::ostream& err) {
  httplib::Client client(args.server);
  if (!client.is_valid()) {
    err << "facet explain: --server \"" << args.server << "\": not a usable URL\n";
    return false;
  }
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);
  if (!args.server_ca.empty()) client.set_ca_cert_path(args.server_ca.c_str());
  httplib::Params params;
  params.emplace("target", args.request.target);
  if (!args.request.authority.empty()) params.emplace("authority", args.request.authority);
  for (const auto& [key, value] : args.request.params) {
    params.emplace("param", absl::StrCat(key, "=", value));
  }
  httplib::Result response = client.Get("/explain", params, httplib::Headers());
  if (!response) {
    err << "facet explain: --server " << args.server << ": "
        << RequestFailure(args.server, response.error(), client) << "\n";
    return false;
  }
  if (response->status != 200) {
    err << "facet explain: --server " << args.server << ": /explain answered "
        << response->status << ": " << response->body.substr(0, 4096)
        << (response->body.empty() || response->body.back() != '\n' ? "\n" : "");
    return false;
  }
  absl::StatusOr<xds::ExplainResult> parsed = xds::ExplainFromJson(response->body);
  if (!parsed.ok()) {
    err << "facet explain: --server " << args.server << ": " << parsed.status().message() << "\n";
    return false;
  }
  *result = *std::move(parsed);
  return true;
}

}  // namespace

int RunExplain(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args;
  bool help = false;
  if (std::string usage_error = ParseArgs(argv, &args, &help); !usage_error.empty()) {
    err << "facet explain: " << usage_error << "\n" << kUsage;
    return kExplainUsage;
  }
  if (help) {
    out << kUsage;
    return kExplainComplete;
  }
  if (absl::StatusOr<std::string> listener = xds::ListenerNameFor(args.request); !listener.ok()) {
    err << "facet explain: " << listener.status().message() << "\n" << kUsage;
    return kExplainUsage;
  }
  xds::ExplainResult result;
  const bool answered = args.server.empty() ? ExplainManifests(args, args.request, &result, err)
                                            : ExplainOnline(args, &result, err);
  if (!answered) return kExplainUsage;
  out << (args.json ? xds::ExplainToJson(result) + "\n" : xds::ExplainToText(result));
  return result.complete() ? kExplainComplete : kExplainBroken;
}

}  // namespace facet::controller
