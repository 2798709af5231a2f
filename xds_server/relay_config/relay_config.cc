#include "xds_server/relay_config/relay_config.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "xds_server/common/log_text.h"
#include "xds_server/common/regular_file.h"
#include "xds_server/common/status_macros.h"
#include "xds_server/json/proto_json.h"
#include "xds_server/json/yaml_json.h"
#include "xds_server/names/names.h"
#include "yaml-cpp/depthguard.h"
#include "yaml-cpp/yaml.h"

namespace facet::xds {
namespace {

using Keys = std::initializer_list<absl::string_view>;

// The channel_creds types the relay can dial with, in no particular order
// (the file's order decides). "tls" uses the system's root certificates
// unless its config names a CA file.
constexpr Keys kSupportedCredsTypes = {"insecure", "tls"};

// Returns `path` extended by an object key: `.key` for identifier-like keys,
// `["key"]` (JSON-escaped) otherwise or when `bracket` is set.
std::string AppendKey(absl::string_view path, absl::string_view key, bool bracket = false) {
  bool identifier = !key.empty() && !absl::ascii_isdigit(static_cast<unsigned char>(key[0]));
  for (char c : key) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') identifier = false;
  }
  if (identifier && !bracket) return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
  std::string out = absl::StrCat(path, "[\"");
  for (unsigned char c : key) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7f) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.append("\"]");
  return out;
}

std::string AppendIndex(absl::string_view path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

std::string Location(const YAML::Mark& mark) {
  return absl::StrCat("line ", mark.line + 1, ", column ", mark.column + 1);
}

std::string Quoted(absl::string_view text) { return absl::StrCat("\"", text, "\""); }

bool IsPlain(const YAML::Node& node) { return node.Tag() == "?" || node.Tag().empty(); }

bool IsJsonString(const YAML::Node& node) { return node.IsScalar() && !IsPlain(node); }

// A plain (unquoted) scalar is JSON only as a literal or a number.
bool IsJsonLiteral(absl::string_view text) {
  if (text == "true" || text == "false" || text == "null") return true;
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i - start;
  };
  if (i < text.size() && text[i] == '-') ++i;
  size_t start = i;
  size_t integer_digits = digits();
  if (integer_digits == 0 || (integer_digits > 1 && text[start] == '0')) return false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == text.size();
}

// Levenshtein distance, for "did you mean" hints on short field names.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string Folded(absl::string_view name) {
  std::string out;
  for (char c : name) {
    if (c != '_' && c != '-') out.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// Returns the known name `key` was probably meant to be, or "" if none is
// close: the same but for case and separators (`xdsServers`), or within an
// edit for every three characters (`authority`, `xds_server`).
absl::string_view Suggest(absl::string_view key, absl::Span<const absl::string_view> known) {
  absl::string_view best;
  size_t best_distance = 0;
  for (absl::string_view candidate : known) {
    size_t distance = Folded(key) == Folded(candidate) ? 0 : EditDistance(key, candidate);
    if (distance * 3 > std::max(key.size(), candidate.size())) continue;
    if (best.empty() || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

// Parses one configuration; every error names `source_` and a field path.
class Parser {
 public:
  explicit Parser(absl::string_view source) : source_(source) {}

  absl::StatusOr<RelayConfig> Parse(absl::string_view json) {
    if (json.size() > kMaxRelayConfigBytes) {
      return Invalid("", absl::StrCat("is ", json.size(), " bytes; a relay configuration may be",
                                      " at most ", kMaxRelayConfigBytes, " bytes"));
    }
    std::vector<YAML::Node> documents;
    try {
      documents = YAML::LoadAll(std::string(json));
    } catch (const YAML::DeepRecursion&) {
      return Invalid("", "malformed JSON: nested too deeply");
    } catch (const YAML::Exception& e) {
      return Invalid("", absl::StrCat(Location(e.mark), ": malformed JSON: ", e.msg));
    }
    if (documents.empty()) return Invalid("", "is empty; expected a JSON object");
    if (documents.size() > 1) {
      return Invalid("", absl::StrCat(Location(documents[1].Mark()),
                                      ": malformed JSON: unexpected text after the top-level "
                                      "object"));
    }
    const YAML::Node& root = documents[0];
    if (!root.IsMap()) {
      return Invalid("", absl::StrCat("expected a JSON object, found ", json::DescribeNode(root)));
    }
    if (root.Style() != YAML::EmitterStyle::Flow) {
      return Invalid("", absl::StrCat(Location(root.Mark()),
                                      ": malformed JSON: expected '{' (YAML is not accepted)"));
    }
    RETURN_IF_ERROR(CheckJson(root, ""));
    return ParseRoot(root);
  }

 private:
  // The message is escaped (xds::EscapeText): reasons quote the file's bytes
  // (yaml-cpp's messages, values), which may hold NULs or control characters.
  absl::Status Invalid(absl::string_view path, absl::string_view reason) const {
    if (path.empty()) {
      return absl::InvalidArgumentError(EscapeText(absl::StrCat(source_, ": ", reason)));
    }
    return absl::InvalidArgumentError(EscapeText(absl::StrCat(source_, ": ", path, ": ", reason)));
  }

  absl::Status Expected(absl::string_view path, absl::string_view what,
                        const YAML::Node& node) const {
    return Invalid(path, absl::StrCat("expected ", what, ", found ", json::DescribeNode(node)));
  }

  // Rejects what YAML accepts but JSON does not: unquoted keys and text, and
  // duplicate keys (yaml-cpp keeps both entries).
  absl::Status CheckJson(const YAML::Node& node, const std::string& path) const {
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) {
        RETURN_IF_ERROR(CheckJson(node[i], AppendIndex(path, i)));
      }
    } else if (node.IsMap()) {
      absl::flat_hash_map<std::string, YAML::Mark> seen;
      for (const auto& entry : node) {
        if (!IsJsonString(entry.first)) {
          return Invalid(path, absl::StrCat(Location(entry.first.Mark()),
                                            ": malformed JSON: an object key must be a quoted "
                                            "string, found ",
                                            json::DescribeNode(entry.first)));
        }
        const std::string& key = entry.first.Scalar();
        auto [it, inserted] = seen.emplace(key, entry.first.Mark());
        if (!inserted) {
          return Invalid(
              path, absl::StrCat("duplicate key ", Quoted(key), " (", Location(entry.first.Mark()),
                                 "; first at ", Location(it->second), ")"));
        }
        RETURN_IF_ERROR(
            CheckJson(entry.second, AppendKey(path, key, /*bracket=*/path == "authorities")));
      }
    } else if (node.IsScalar() && IsPlain(node) && !IsJsonLiteral(node.Scalar())) {
      return Invalid(path, absl::StrCat(Location(node.Mark()), ": malformed JSON: unquoted text ",
                                        Quoted(node.Scalar())));
    }
    return absl::OkStatus();
  }

  // Checks that `node` is an object whose keys are all in `known` or
  // `ignored`.
  absl::Status CheckObject(const YAML::Node& node, const std::string& path, Keys known,
                           Keys ignored = {}) const {
    if (!node.IsMap()) return Expected(path, "a JSON object", node);
    for (const auto& entry : node) {
      const std::string& key = entry.first.Scalar();
      auto is_key = [&](absl::string_view name) { return name == key; };
      if (std::any_of(known.begin(), known.end(), is_key) ||
          std::any_of(ignored.begin(), ignored.end(), is_key)) {
        continue;
      }
      std::string reason = "unknown field";
      std::vector<absl::string_view> all(known);
      all.insert(all.end(), ignored.begin(), ignored.end());
      if (absl::string_view suggestion = Suggest(key, all); !suggestion.empty()) {
        absl::StrAppend(&reason, "; did you mean ", Quoted(suggestion), "?");
      } else {
        absl::StrAppend(&reason, " (expected ", absl::StrJoin(known, ", "), ")");
      }
      return Invalid(AppendKey(path, key), reason);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String(const YAML::Node& node, const std::string& path) const {
    if (!IsJsonString(node)) return Expected(path, "a string", node);
    return node.Scalar();
  }

  absl::Status CheckListSize(const YAML::Node& node, const std::string& path) const {
    if (!node.IsSequence()) return Expected(path, "a list", node);
    if (node.size() > kMaxRelayListLength) {
      return Invalid(path, absl::StrCat("has ", node.size(), " entries; at most ",
                                        kMaxRelayListLength, " are allowed"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<RelayConfig> ParseRoot(const YAML::Node& root) const {
    RETURN_IF_ERROR(
        CheckObject(root, "", {"xds_servers", "authorities", "node"},
                    {"client_default_listener_resource_name_template",
                     "server_listener_resource_name_template", "certificate_providers"}));
    RelayConfig config;
    const YAML::Node servers = json::Child(root, "xds_servers");
    if (!servers.IsDefined()) {
      return Invalid("xds_servers", "required: the upstream servers for old-style names");
    }
    ASSIGN_OR_RETURN(config.xds_servers, ServerList(servers, "xds_servers", ""));

    if (const YAML::Node authorities = json::Child(root, "authorities"); authorities.IsDefined()) {
      if (!authorities.IsMap()) return Expected("authorities", "a JSON object", authorities);
      if (authorities.size() > kMaxRelayAuthorities) {
        return Invalid("authorities", absl::StrCat("has ", authorities.size(), " entries; at most ",
                                                   kMaxRelayAuthorities, " are allowed"));
      }
      for (const auto& entry : authorities) {
        const std::string& name = entry.first.Scalar();
        std::string path = AppendKey("authorities", name, /*bracket=*/true);
        ASSIGN_OR_RETURN(std::vector<UpstreamServer> list,
                         Authority(entry.second, path, config.xds_servers));
        config.authorities.emplace(name, std::move(list));
      }
    }

    if (const YAML::Node node = json::Child(root, "node"); node.IsDefined()) {
      RETURN_IF_ERROR(CheckObject(node, "node", {"id", "cluster", "locality", "metadata"}));
      if (absl::Status status = json::ParseMessage(node, "node", &config.node); !status.ok()) {
        return absl::Status(status.code(), absl::StrCat(source_, ": ", status.message()));
      }
    }
    return config;
  }

  absl::StatusOr<std::vector<UpstreamServer>> Authority(
      const YAML::Node& node, const std::string& path,
      const std::vector<UpstreamServer>& top_level) const {
    RETURN_IF_ERROR(
        CheckObject(node, path, {"xds_servers"}, {"client_listener_resource_name_template"}));
    std::string template_path = absl::StrCat(path, ".client_listener_resource_name_template");
    if (const YAML::Node name_template =
            json::Child(node, "client_listener_resource_name_template");
        name_template.IsDefined()) {
      RETURN_IF_ERROR(String(name_template, template_path).status());
    }
    const YAML::Node servers = json::Child(node, "xds_servers");
    if (!servers.IsDefined()) return top_level;
    return ServerList(servers, absl::StrCat(path, ".xds_servers"),
                      " (omit xds_servers to use the top-level list)");
  }

  // `if_empty` is appended to the complaint about an empty list.
  absl::StatusOr<std::vector<UpstreamServer>> ServerList(const YAML::Node& node,
                                                         const std::string& path,
                                                         absl::string_view if_empty) const {
    RETURN_IF_ERROR(CheckListSize(node, path));
    if (node.size() == 0) return Invalid(path, absl::StrCat("must not be empty", if_empty));
    std::vector<UpstreamServer> servers;
    for (size_t i = 0; i < node.size(); ++i) {
      std::string server_path = AppendIndex(path, i);
      ASSIGN_OR_RETURN(UpstreamServer server, Server(node[i], server_path));
      for (size_t j = 0; j < servers.size(); ++j) {
        if (servers[j].server_uri == server.server_uri) {
          return Invalid(
              absl::StrCat(server_path, ".server_uri"),
              absl::StrCat(Quoted(server.server_uri), " is listed already as ",
                           AppendIndex(path, j), "; a failover list names each server once"));
        }
      }
      servers.push_back(std::move(server));
    }
    return servers;
  }

  absl::StatusOr<UpstreamServer> Server(const YAML::Node& node, const std::string& path) const {
    RETURN_IF_ERROR(CheckObject(node, path, {"server_uri", "channel_creds", "server_features"}));
    UpstreamServer server;

    std::string uri_path = absl::StrCat(path, ".server_uri");
    const YAML::Node uri = json::Child(node, "server_uri");
    if (!uri.IsDefined()) return Invalid(uri_path, "required");
    ASSIGN_OR_RETURN(server.server_uri, String(uri, uri_path));
    if (server.server_uri.empty()) return Invalid(uri_path, "must not be empty");
    for (char c : server.server_uri) {
      if (absl::ascii_isspace(static_cast<unsigned char>(c)) ||
          absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
        return Invalid(uri_path, absl::StrCat(Quoted(server.server_uri),
                                              " contains whitespace or a control character"));
      }
    }

    std::string creds_path = absl::StrCat(path, ".channel_creds");
    const YAML::Node creds = json::Child(node, "channel_creds");
    if (!creds.IsDefined()) {
      return Invalid(creds_path,
                     "required: a list of {\"type\": ...} such as [{\"type\": "
                     "\"insecure\"}] or [{\"type\": \"tls\"}]");
    }
    RETURN_IF_ERROR(ChannelCreds(creds, creds_path, server));

    if (const YAML::Node features = json::Child(node, "server_features"); features.IsDefined()) {
      std::string features_path = absl::StrCat(path, ".server_features");
      RETURN_IF_ERROR(CheckListSize(features, features_path));
      for (size_t i = 0; i < features.size(); ++i) {
        ASSIGN_OR_RETURN(std::string feature, String(features[i], AppendIndex(features_path, i)));
        server.server_features.push_back(std::move(feature));
      }
    }
    return server;
  }

  // Sets server.channel_creds (and the tls_* files) from the first entry the
  // relay supports. Every entry must be well-formed, even those after it.
  absl::Status ChannelCreds(const YAML::Node& node, const std::string& path,
                            UpstreamServer& server) const {
    RETURN_IF_ERROR(CheckListSize(node, path));
    std::string chosen;
    std::vector<std::string> seen;
    for (size_t i = 0; i < node.size(); ++i) {
      std::string entry_path = AppendIndex(path, i);
      RETURN_IF_ERROR(CheckObject(node[i], entry_path, {"type", "config"}));
      std::string type_path = absl::StrCat(entry_path, ".type");
      const YAML::Node type_node = json::Child(node[i], "type");
      if (!type_node.IsDefined()) return Invalid(type_path, "required");
      ASSIGN_OR_RETURN(std::string type, String(type_node, type_path));
      std::string config_path = absl::StrCat(entry_path, ".config");
      const YAML::Node config = json::Child(node[i], "config");
      if (config.IsDefined() && !config.IsMap())
        return Expected(config_path, "a JSON object", config);
      bool supported = std::find(kSupportedCredsTypes.begin(), kSupportedCredsTypes.end(), type) !=
                       kSupportedCredsTypes.end();
      if (supported && chosen.empty()) {
        if (type == "tls" && config.IsDefined()) {
          RETURN_IF_ERROR(TlsConfig(config, config_path, server));
        }
        chosen = type;
      }
      seen.push_back(Quoted(type));
    }
    if (chosen.empty()) {
      std::string listed =
          seen.empty() ? "is empty" : absl::StrCat("lists only ", absl::StrJoin(seen, ", "));
      return Invalid(path, absl::StrCat(listed, "; the relay supports \"insecure\" and \"tls\""));
    }
    server.channel_creds = chosen;
    return absl::OkStatus();
  }

  // Reads a "tls" entry's config (gRFC A65): certificate files that must
  // exist, the identity pair both or neither.
  absl::Status TlsConfig(const YAML::Node& config, const std::string& path,
                         UpstreamServer& server) const {
    RETURN_IF_ERROR(
        CheckObject(config, path, {"ca_certificate_file", "certificate_file", "private_key_file"}));
    struct File {
      const char* key;
      std::string* field;
    };
    for (const File& file : {File{"ca_certificate_file", &server.tls_ca_certificate_file},
                             File{"certificate_file", &server.tls_certificate_file},
                             File{"private_key_file", &server.tls_private_key_file}}) {
      const YAML::Node value = json::Child(config, file.key);
      if (!value.IsDefined()) continue;
      const std::string file_path = AppendKey(path, file.key);
      ASSIGN_OR_RETURN(*file.field, String(value, file_path));
      if (file.field->empty()) return Invalid(file_path, "must not be empty");
      // Read once here, without blocking, so that a FIFO or a device is
      // refused before gRPC's certificate watcher opens it (blocking).
      RegularFileRead read = ReadRegularFile(*file.field, kMaxCertificateFileBytes);
      if (read.outcome != RegularFileRead::Outcome::kRead) {
        return Invalid(file_path, absl::StrCat(Quoted(*file.field), ": ",
                                               DescribeFailure(read, kMaxCertificateFileBytes,
                                                               "a certificate file")));
      }
    }
    if (server.tls_certificate_file.empty() != server.tls_private_key_file.empty()) {
      const bool no_cert = server.tls_certificate_file.empty();
      return Invalid(AppendKey(path, no_cert ? "certificate_file" : "private_key_file"),
                     no_cert ? "required with private_key_file" : "required with certificate_file");
    }
    return absl::OkStatus();
  }

  std::string source_;
};

}  // namespace

absl::StatusOr<RelayConfig> ParseRelayConfig(absl::string_view json, absl::string_view source) {
  return Parser(source).Parse(json);
}

absl::StatusOr<RelayConfig> LoadRelayConfig(const std::string& path) {
  ASSIGN_OR_RETURN(std::string contents,
                   ReadRegularFileOrError(path, kMaxRelayConfigBytes, "a relay configuration",
                                          absl::StrCat(path, ": ")));
  return ParseRelayConfig(contents, path);
}

absl::StatusOr<const std::vector<UpstreamServer>*> ServersFor(const RelayConfig& config,
                                                              absl::string_view name) {
  if (!IsXdstpName(name)) return &config.xds_servers;
  ASSIGN_OR_RETURN(XdstpName parsed, ParseXdstpName(name));
  auto it = config.authorities.find(parsed.authority);
  if (it == config.authorities.end()) {
    return absl::NotFoundError(absl::StrCat("authority ", Quoted(parsed.authority), " of ", name,
                                            " is not in the relay configuration's authorities"));
  }
  return &it->second;
}

}  // namespace facet::xds
