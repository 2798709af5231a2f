#include "controller/kubernetes/client/kube_config.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "spdlog/spdlog.h"
#include "xds_server/common/status_macros.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::kube {
namespace {

namespace fs = std::filesystem;

// Reads a whole file. NotFound when it does not exist; FailedPrecondition
// for any other failure. The message is "<path>: <reason>".
absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    std::string message = absl::StrCat(path, ": ", std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(message);
    return absl::FailedPreconditionError(message);
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::FailedPreconditionError(absl::StrCat(path, ": read failed"));
  return contents.str();
}

std::string JoinHostPort(const std::string& host, const std::string& port) {
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

std::optional<std::string> NonEmptyEnv(const Environment& env, const std::string& name) {
  std::optional<std::string> value = env.GetEnv(name);
  if (value.has_value() && value->empty()) return std::nullopt;
  return value;
}

// One named cluster, user or context, with the file that defined it.
struct Entry {
  std::string file;
  YAML::Node body;
};

struct MergedKubeconfig {
  std::vector<std::string> files;  // The files read, in order.
  std::string current_context;
  std::map<std::string, Entry> clusters;
  std::map<std::string, Entry> users;
  std::map<std::string, Entry> contexts;
};

// Adds the entries of `list_field` ("clusters") whose names are new; each
// entry's body is under `body_field` ("cluster").
absl::Status MergeEntries(const std::string& file, const YAML::Node& doc,
                          absl::string_view list_field, absl::string_view body_field,
                          std::map<std::string, Entry>& entries) {
  const YAML::Node list = Field(doc, list_field);
  if (!list.IsDefined() || list.IsNull()) return absl::OkStatus();
  if (!list.IsSequence()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig ", file, ": field \"", list_field, "\" must be a list"));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string name = StringAt(item, {"name"});
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", file, ": ", list_field, "[", i,
                                                     "]: field \"name\" is missing"));
    }
    YAML::Node body = Field(item, body_field);
    if (body.IsDefined() && !body.IsNull() && !body.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", file, ": ", body_field, " \"",
                                                     name, "\": field \"", body_field,
                                                     "\" must be a map"));
    }
    entries.try_emplace(name, Entry{file, body});
  }
  return absl::OkStatus();
}

absl::StatusOr<MergedKubeconfig> ReadKubeconfigs(const std::vector<std::string>& paths) {
  MergedKubeconfig merged;
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> text = ReadFileToString(path);
    if (absl::IsNotFound(text.status())) continue;  // kubectl skips missing files.
    if (!text.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("kubeconfig ", text.status().message()));
    }
    ASSIGN_OR_RETURN(YAML::Node doc, ParseDocumentText(*text, absl::StrCat("kubeconfig ", path),
                                                       ObjectLimits("kubeconfig file")));
    merged.files.push_back(path);
    if (!doc.IsDefined() || doc.IsNull()) continue;
    if (!doc.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": not a map"));
    }
    if (merged.current_context.empty()) merged.current_context = StringAt(doc, {"current-context"});
    RETURN_IF_ERROR(MergeEntries(path, doc, "clusters", "cluster", merged.clusters));
    RETURN_IF_ERROR(MergeEntries(path, doc, "users", "user", merged.users));
    RETURN_IF_ERROR(MergeEntries(path, doc, "contexts", "context", merged.contexts));
  }
  if (merged.files.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no kubeconfig file found (looked for ", absl::StrJoin(paths, ", "), ")"));
  }
  return merged;
}

// Reads the fields of one cluster or user entry; `where` prefixes errors
// ("kubeconfig /path: user \"alice\"").
class EntryReader {
 public:
  EntryReader(const Entry& entry, std::string where) : entry_(entry), where_(std::move(where)) {}

  std::string String(absl::string_view field) const { return StringAt(entry_.body, {field}); }
  bool Has(absl::string_view field) const { return Field(entry_.body, field).IsDefined(); }

  absl::Status Error(absl::StatusCode code, absl::string_view field,
                     absl::string_view problem) const {
    return absl::Status(code, absl::StrCat(where_, ": field \"", field, "\": ", problem));
  }

  absl::StatusOr<bool> Bool(absl::string_view field) const {
    const YAML::Node node = Field(entry_.body, field);
    if (!node.IsDefined() || node.IsNull()) return false;
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      return Error(absl::StatusCode::kInvalidArgument, field, "must be true or false");
    }
    return value;
  }

  // Returns the path named by `field`, resolved against the directory of the
  // file that defined the entry; "" when unset.
  std::string Path(absl::string_view field) const {
    const std::string value = String(field);
    if (value.empty()) return value;
    const fs::path path(value);
    if (path.is_absolute()) return value;
    return (fs::path(entry_.file).parent_path() / path).lexically_normal().string();
  }

  // Returns the decoded `data_field`, else the contents of the file named by
  // `file_field`, else "".
  absl::StatusOr<std::string> DataOrFile(absl::string_view data_field,
                                         absl::string_view file_field) const {
    const std::string data = String(data_field);
    if (!data.empty()) {
      std::string decoded;
      if (!absl::Base64Unescape(data, &decoded)) {
        return Error(absl::StatusCode::kInvalidArgument, data_field, "is not valid base64");
      }
      return decoded;
    }
    const std::string path = Path(file_field);
    if (path.empty()) return std::string();
    absl::StatusOr<std::string> contents = ReadFileToString(path);
    if (!contents.ok()) {
      return Error(absl::StatusCode::kFailedPrecondition, file_field,
                   absl::StrCat("cannot read ", contents.status().message()));
    }
    return contents;
  }

 private:
  const Entry& entry_;
  const std::string where_;
};

absl::Status ApplyCluster(const Entry& entry, const std::string& name, ClusterConfig& config) {
  const EntryReader reader(entry,
                           absl::StrCat("kubeconfig ", entry.file, ": cluster \"", name, "\""));
  config.server = reader.String("server");
  while (absl::EndsWith(config.server, "/")) config.server.pop_back();
  if (config.server.empty()) {
    return reader.Error(absl::StatusCode::kInvalidArgument, "server", "is missing");
  }
  ASSIGN_OR_RETURN(config.ca_pem,
                   reader.DataOrFile("certificate-authority-data", "certificate-authority"));
  ASSIGN_OR_RETURN(config.insecure_skip_tls_verify, reader.Bool("insecure-skip-tls-verify"));
  config.tls_server_name = reader.String("tls-server-name");
  return absl::OkStatus();
}

absl::Status ApplyUser(const Entry& entry, const std::string& name, ClusterConfig& config) {
  const EntryReader reader(entry, absl::StrCat("kubeconfig ", entry.file, ": user \"", name, "\""));
  constexpr absl::string_view kUseInstead =
      "is not supported by Facet; use token, tokenFile or client-certificate/client-key";
  for (absl::string_view unsupported : {"exec", "auth-provider", "username", "password"}) {
    if (reader.Has(unsupported)) {
      return reader.Error(absl::StatusCode::kUnimplemented, unsupported, kUseInstead);
    }
  }
  ASSIGN_OR_RETURN(config.client_cert_pem,
                   reader.DataOrFile("client-certificate-data", "client-certificate"));
  ASSIGN_OR_RETURN(config.client_key_pem, reader.DataOrFile("client-key-data", "client-key"));
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    const absl::string_view missing =
        config.client_cert_pem.empty() ? "client-certificate" : "client-key";
    return reader.Error(absl::StatusCode::kInvalidArgument, missing,
                        "is missing (a client certificate needs both certificate and key)");
  }
  config.token = reader.String("token");
  config.token_file = reader.Path("tokenFile");
  return absl::OkStatus();
}

}  // namespace

std::optional<std::string> ProcessEnvironment::GetEnv(const std::string& name) const {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

absl::StatusOr<ClusterConfig> LoadInClusterConfig(const Environment& env) {
  const std::optional<std::string> host = NonEmptyEnv(env, "KUBERNETES_SERVICE_HOST");
  const std::optional<std::string> port = NonEmptyEnv(env, "KUBERNETES_SERVICE_PORT");
  if (!host.has_value() || !port.has_value()) {
    return absl::FailedPreconditionError(
        "not running in a Kubernetes cluster: KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT must be set");
  }
  ClusterConfig config;
  config.server = absl::StrCat("https://", JoinHostPort(*host, *port));
  const std::string dir = env.ServiceAccountDir();
  config.token_file = absl::StrCat(dir, "/token");
  absl::StatusOr<std::string> token = ReadFileToString(config.token_file);
  if (!token.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "in-cluster config: cannot read the service-account token ", token.status().message()));
  }
  config.token = std::string(absl::StripAsciiWhitespace(*token));
  absl::StatusOr<std::string> ca = ReadFileToString(absl::StrCat(dir, "/ca.crt"));
  if (!ca.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster config: cannot read the cluster CA ", ca.status().message()));
  }
  config.ca_pem = *std::move(ca);
  if (std::optional<std::string> ns = NonEmptyEnv(env, "POD_NAMESPACE"); ns.has_value()) {
    config.default_namespace = *ns;
  } else if (absl::StatusOr<std::string> file = ReadFileToString(absl::StrCat(dir, "/namespace"));
             file.ok() && !absl::StripAsciiWhitespace(*file).empty()) {
    config.default_namespace = std::string(absl::StripAsciiWhitespace(*file));
  }
  return config;
}

absl::StatusOr<ClusterConfig> LoadKubeconfig(const std::vector<std::string>& paths,
                                             absl::string_view context) {
  ASSIGN_OR_RETURN(MergedKubeconfig merged, ReadKubeconfigs(paths));
  const std::string files = absl::StrJoin(merged.files, ", ");
  const std::string context_name = context.empty() ? merged.current_context : std::string(context);
  if (context_name.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("kubeconfig ", files, ": no current-context is set and no context was given"));
  }
  const auto context_it = merged.contexts.find(context_name);
  if (context_it == merged.contexts.end()) {
    return absl::NotFoundError(
        absl::StrCat("kubeconfig ", files, ": context \"", context_name, "\" not found"));
  }
  const Entry& context_entry = context_it->second;
  const std::string where =
      absl::StrCat("kubeconfig ", context_entry.file, ": context \"", context_name, "\"");
  const std::string cluster_name = StringAt(context_entry.body, {"cluster"});
  if (cluster_name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": field \"cluster\" is missing"));
  }
  const auto cluster_it = merged.clusters.find(cluster_name);
  if (cluster_it == merged.clusters.end()) {
    return absl::NotFoundError(
        absl::StrCat(where, ": cluster \"", cluster_name, "\" not found in ", files));
  }
  ClusterConfig config;
  RETURN_IF_ERROR(ApplyCluster(cluster_it->second, cluster_name, config));
  const std::string user_name = StringAt(context_entry.body, {"user"});
  if (!user_name.empty()) {
    const auto user_it = merged.users.find(user_name);
    if (user_it == merged.users.end()) {
      return absl::NotFoundError(
          absl::StrCat(where, ": user \"", user_name, "\" not found in ", files));
    }
    RETURN_IF_ERROR(ApplyUser(user_it->second, user_name, config));
  }
  const std::string ns = StringAt(context_entry.body, {"namespace"});
  if (!ns.empty()) config.default_namespace = ns;
  return config;
}

std::vector<std::string> DefaultKubeconfigPaths(const Environment& env) {
  std::vector<std::string> paths;
  if (std::optional<std::string> list = NonEmptyEnv(env, "KUBECONFIG"); list.has_value()) {
    for (absl::string_view path : absl::StrSplit(*list, ':', absl::SkipEmpty())) {
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.emplace_back(path);
    }
    return paths;
  }
  if (std::optional<std::string> home = NonEmptyEnv(env, "HOME"); home.has_value()) {
    paths.push_back(absl::StrCat(*home, "/.kube/config"));
  }
  return paths;
}

absl::StatusOr<ClusterConfig> LoadClusterConfig(const Environment& env,
                                                absl::string_view kubeconfig,
                                                absl::string_view context) {
  if (!kubeconfig.empty()) return LoadKubeconfig({std::string(kubeconfig)}, context);
  if (NonEmptyEnv(env, "KUBECONFIG").has_value()) {
    return LoadKubeconfig(DefaultKubeconfigPaths(env), context);
  }
  if (NonEmptyEnv(env, "KUBERNETES_SERVICE_HOST").has_value()) return LoadInClusterConfig(env);
  const std::vector<std::string> paths = DefaultKubeconfigPaths(env);
  if (paths.empty()) {
    return absl::FailedPreconditionError(
        "no Kubernetes configuration: pass a kubeconfig, set KUBECONFIG or HOME, or run in a "
        "cluster");
  }
  return LoadKubeconfig(paths, context);
}

TokenSource::TokenSource(std::string static_token, std::string token_file, Clock& clock,
                         absl::Duration refresh_period)
    : static_token_(std::move(static_token)),
      token_file_(std::move(token_file)),
      clock_(clock),
      refresh_period_(refresh_period) {}

TokenSource::TokenSource(const ClusterConfig& config, Clock& clock)
    : TokenSource(config.token, config.token_file, clock) {}

absl::StatusOr<std::string> TokenSource::Token() {
  if (token_file_.empty()) return static_token_;
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  if (have_cached_ && !invalidated_ && now - last_read_ < refresh_period_) return cached_;
  absl::StatusOr<std::string> contents = ReadFileToString(token_file_);
  absl::Status problem;
  if (contents.ok()) {
    const absl::string_view token = absl::StripAsciiWhitespace(*contents);
    if (!token.empty()) {
      cached_ = std::string(token);
      have_cached_ = true;
      invalidated_ = false;
      last_read_ = now;
      return cached_;
    }
    problem =
        absl::UnauthenticatedError(absl::StrCat("bearer token file ", token_file_, " is empty"));
  } else {
    problem = absl::UnauthenticatedError(
        absl::StrCat("cannot read bearer token file ", contents.status().message()));
  }
  if (have_cached_) {
    spdlog::warn("kube: {}; keeping the last token read", std::string(problem.message()));
    return cached_;
  }
  if (!static_token_.empty()) {
    spdlog::warn("kube: {}; using the configured token", std::string(problem.message()));
    return static_token_;
  }
  return problem;
}

void TokenSource::Invalidate() {
  absl::MutexLock lock(&mu_);
  invalidated_ = true;
}

}  // namespace facet::controller::kube
