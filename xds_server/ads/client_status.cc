#include "xds_server/ads/client_status.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "xds_server/common/struct_json.h"
#include "xds_server/resources/resource_type.h"

namespace facet::xds {
namespace {

using ::envoy::service::status::v3::ClientConfig;
using ::envoy::service::status::v3::ClientStatusRequest;
using ::google::protobuf::Struct;
using ::google::protobuf::Value;
using json::NumberValue;
using json::StringValue;

// Bytes a resource status adds besides its strings (field tags, enums,
// the GenericXdsConfig framing).
constexpr size_t kResourceOverheadBytes = 32;

envoy::admin::v3::ClientResourceStatus ToProto(ResourceStatus::State state) {
  switch (state) {
    case ResourceStatus::State::kRequested:
      return envoy::admin::v3::REQUESTED;
    case ResourceStatus::State::kAcked:
      return envoy::admin::v3::ACKED;
    case ResourceStatus::State::kNacked:
      return envoy::admin::v3::NACKED;
    case ResourceStatus::State::kDoesNotExist:
      return envoy::admin::v3::DOES_NOT_EXIST;
  }
  return envoy::admin::v3::UNKNOWN;
}

// The control plane's view (ConfigStatus) of a resource status.
envoy::service::status::v3::ConfigStatus ConfigStatusOf(const ResourceStatus& status) {
  switch (status.state) {
    case ResourceStatus::State::kAcked:
      return envoy::service::status::v3::SYNCED;
    case ResourceStatus::State::kNacked:
      return envoy::service::status::v3::ERROR;
    case ResourceStatus::State::kRequested:
      // Sent and awaiting the client's answer, or not sent yet.
      return status.version.empty() ? envoy::service::status::v3::NOT_SENT
                                    : envoy::service::status::v3::STALE;
    case ResourceStatus::State::kDoesNotExist:
      break;
  }
  return envoy::service::status::v3::UNKNOWN;
}


}  // namespace

absl::string_view StateName(ResourceStatus::State state) {
  switch (state) {
    case ResourceStatus::State::kRequested:
      return "REQUESTED";
    case ResourceStatus::State::kAcked:
      return "ACKED";
    case ResourceStatus::State::kNacked:
      return "NACKED";
    case ResourceStatus::State::kDoesNotExist:
      return "DOES_NOT_EXIST";
  }
  return "UNKNOWN";
}

size_t EstimatedBytes(const ResourceStatus& resource) {
  size_t bytes = kResourceOverheadBytes + resource.type_url.size() + resource.name.size() +
                 resource.version.size() + resource.nacked_version.size();
  if (resource.error_detail != nullptr) bytes += resource.error_detail->size();
  return bytes;
}

absl::StatusOr<ClientStatusQuery> QueryFromRequest(const ClientStatusRequest& request,
                                                   size_t max_bytes) {
  ClientStatusQuery query;
  query.max_bytes = max_bytes;
  if (request.node_matchers_size() == 0) return query;
  if (request.node_matchers_size() > 1) {
    return absl::UnimplementedError(
        absl::StrCat("ClientStatusRequest.node_matchers: ", request.node_matchers_size(),
                     " matchers given; Facet supports one (node_id with an exact match)"));
  }
  const auto& matcher = request.node_matchers(0);
  if (matcher.node_metadatas_size() > 0) {
    return absl::UnimplementedError(
        "ClientStatusRequest.node_matchers[0].node_metadatas: not supported; match on node_id "
        "with an exact match");
  }
  if (!matcher.has_node_id() ||
      matcher.node_id().match_pattern_case() != envoy::type::matcher::v3::StringMatcher::kExact ||
      matcher.node_id().ignore_case()) {
    return absl::UnimplementedError(
        "ClientStatusRequest.node_matchers[0].node_id: only an exact, case-sensitive match "
        "(node_id.exact) is supported");
  }
  query.filter_node_id = true;
  query.node_id = matcher.node_id().exact();
  return query;
}

bool ClientStatusQuery::Selects(const ClientIdentity& identity,
                                const envoy::config::core::v3::Node* node) const {
  if (filter_node_id && (node == nullptr || node->id() != node_id)) return false;
  return !only_readers_identity || SameIdentity(identity, reader);
}

ClientConfig ToClientConfig(const ClientStatus& client) {
  ClientConfig config;
  *config.mutable_node() = client.node;
  Struct& parameters =
      *(*config.mutable_node()->mutable_metadata()->mutable_fields())[kDerivedParametersKey]
           .mutable_struct_value();
  for (const auto& [key, value] : client.parameters) {
    (*parameters.mutable_fields())[key] = StringValue(value);
  }
  for (const ResourceStatus& resource : client.resources) {
    ClientConfig::GenericXdsConfig& generic = *config.add_generic_xds_configs();
    generic.set_type_url(resource.type_url);
    generic.set_name(resource.name);
    generic.set_version_info(resource.version);
    generic.set_client_status(ToProto(resource.state));
    generic.set_config_status(ConfigStatusOf(resource));
    if (resource.state == ResourceStatus::State::kNacked) {
      auto& error = *generic.mutable_error_state();
      error.set_version_info(resource.nacked_version);
      if (resource.error_detail != nullptr) error.set_details(*resource.error_detail);
    }
  }
  return config;
}

std::string ClientToJson(const ClientStatus& client) {
  Struct entry;
  auto& e = *entry.mutable_fields();
  e["stream_id"] = NumberValue(static_cast<double>(client.stream_id));
  e["peer"] = StringValue(client.peer);
  // The peer's identity: only for a client that presented a certificate
  // the server verified (its SPIFFE ID and DNS SANs; both may be empty).
  if (client.identity.has_certificate) {
    auto& identity = *e["identity"].mutable_struct_value()->mutable_fields();
    identity["spiffe_id"] = StringValue(client.identity.spiffe_id);
    auto& dns_names = *identity["dns_names"].mutable_list_value();
    for (const std::string& name : client.identity.dns_names) {
      *dns_names.add_values() = StringValue(name);
    }
  }
  e["protocol"] = StringValue(client.delta ? "delta" : "SotW");
  e["node_id"] = StringValue(client.node.id());
  auto& parameters = *e["parameters"].mutable_struct_value()->mutable_fields();
  for (const auto& [key, value] : client.parameters) parameters[key] = StringValue(value);
  auto& resources = *e["resources"].mutable_list_value();
  for (const ResourceStatus& resource : client.resources) {
    Value value;
    auto& r = *value.mutable_struct_value()->mutable_fields();
    const ResourceType* type = FindResourceType(resource.type_url);
    r["type"] = StringValue(type != nullptr ? std::string(type->alias()) : resource.type_url);
    r["name"] = StringValue(resource.name);
    r["version"] = StringValue(resource.version);
    r["status"] = StringValue(std::string(StateName(resource.state)));
    r["object"] = StringValue(resource.object);
    r["variant"] = StringValue(resource.variant);
    r["constraints"] = StringValue(resource.constraints);
    if (resource.state == ResourceStatus::State::kNacked) {
      r["nacked_version"] = StringValue(resource.nacked_version);
      r["error_detail"] =
          StringValue(resource.error_detail == nullptr ? "" : *resource.error_detail);
    }
    if (resource.stale_since.has_value()) {
      r["stale_since"] = StringValue(
          absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", *resource.stale_since, absl::UTCTimeZone()));
    }
    *resources.add_values() = std::move(value);
  }
  e["omitted_resources"] = NumberValue(static_cast<double>(client.omitted_resources));
  // The CSDS message in its proto3 JSON form (fields in field order, map
  // keys sorted), put first: "client_config" sorts before every other key.
  // Printed once, not parsed back into the Struct and printed again.
  std::string rest = json::MessageToJson(entry, /*pretty=*/false);
  return absl::StrCat("{\"client_config\":",
                      json::MessageToJson(ToClientConfig(client), /*pretty=*/false), ",",
                      absl::string_view(rest).substr(1));
}

std::string ReportToJson(const ClientStatusReport& report) {
  return ReportToJson(report, std::numeric_limits<size_t>::max());
}

std::string ReportToJson(ClientStatusReport report, size_t max_bytes) {
  const size_t count = report.clients.size();
  // The document's end when its first `kept` clients are kept (written here,
  // the clients being JSON already; keys sorted, as in every client).
  auto tail = [&report, count](size_t kept) {
    const int64_t omitted = report.omitted_clients + static_cast<int64_t>(count - kept);
    std::string out = kept > 0 ? "\n]" : "]";
    if (omitted > 0 && kept > 0) {
      absl::StrAppend(&out, ",\"next_after\":", report.clients[kept - 1].stream_id);
    }
    absl::StrAppend(&out, ",\"omitted_clients\":", omitted,
                    ",\"omitted_resources\":", report.omitted_resources);
    if (report.truncated || kept < count) out += ",\"truncated\":true";
    out += "}";
    return out;
  };
  std::string out = "{\"clients\":[";
  size_t kept = 0;
  for (; kept < count; ++kept) {
    std::string entry = ClientToJson(report.clients[kept]);
    // Whether the document fits with this client and none after it.
    auto fits = [&] {
      return out.size() + (kept == 0 ? 1 : 2) + entry.size() + tail(kept + 1).size() <= max_bytes;
    };
    if (kept == 0) {
      // Alone too large: keep the share of its resources that fits, less a
      // tenth for the margin between their sizes; at least one fewer each
      // round.
      ClientStatus& client = report.clients[0];
      while (!fits() && !client.resources.empty()) {
        const size_t frame = out.size() + 1 + tail(1).size();
        const double room = max_bytes > frame ? static_cast<double>(max_bytes - frame) : 0;
        const size_t resources = client.resources.size();
        const size_t keep = std::min(
            resources - 1, static_cast<size_t>(static_cast<double>(resources) * 0.9 * room /
                                               static_cast<double>(entry.size())));
        const auto dropped = static_cast<int64_t>(resources - keep);
        client.omitted_resources += dropped;
        report.omitted_resources += dropped;
        client.resources.resize(keep);
        report.truncated = true;
        entry = ClientToJson(client);
      }
    }
    if (!fits()) break;
    absl::StrAppend(&out, kept == 0 ? "\n" : ",\n", entry);
  }
  out += tail(kept);
  return out;
}

}  // namespace facet::xds
