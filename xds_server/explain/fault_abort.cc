#include "xds_server/explain/fault_abort.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "envoy/config/route/v3/route_components.pb.h"
#include "envoy/extensions/filters/http/fault/v3/fault.pb.h"
#include "envoy/type/v3/percent.pb.h"

namespace facet::xds {
namespace {

using ::envoy::config::route::v3::FilterConfig;
using ::envoy::extensions::filters::http::fault::v3::FaultAbort;
using ::envoy::extensions::filters::http::fault::v3::HTTPFault;
using ::envoy::type::v3::FractionalPercent;
using ::google::protobuf::Any;

// gRPC's mapping of an HTTP status to a gRPC code
// (doc/http-grpc-status-mapping.md), which the fault filter applies to
// abort.http_status. 200 is OK, as in C-core (grpc_http2_status_to_grpc_status);
// grpc-js-xds maps it to UNKNOWN and aborts.
int GrpcCodeOfHttpStatus(uint32_t status) {
  switch (status) {
    case 200:
      return static_cast<int>(absl::StatusCode::kOk);
    case 400:
      return static_cast<int>(absl::StatusCode::kInternal);
    case 401:
      return static_cast<int>(absl::StatusCode::kUnauthenticated);
    case 403:
      return static_cast<int>(absl::StatusCode::kPermissionDenied);
    case 404:
      return static_cast<int>(absl::StatusCode::kUnimplemented);
    case 429:
    case 502:
    case 503:
    case 504:
      return static_cast<int>(absl::StatusCode::kUnavailable);
    default:
      return static_cast<int>(absl::StatusCode::kUnknown);
  }
}

bool IsWhole(const FractionalPercent& percentage) {
  uint64_t denominator = 100;
  if (percentage.denominator() == FractionalPercent::TEN_THOUSAND) denominator = 10000;
  if (percentage.denominator() == FractionalPercent::MILLION) denominator = 1000000;
  // gRPC caps a numerator above the denominator at 100 %.
  return percentage.numerator() >= denominator;
}

// The code `config` (an HTTPFault, or a FilterConfig wrapping one) aborts
// every RPC with, or nullopt. Read as gRPC C-core reads it: neither client
// reads FilterConfig.disabled (the config inside applies) nor
// HTTPFault.headers (gRFC A33 leaves header selection out), and a code that
// maps to OK aborts nothing (C-core takes grpc_status 0 for unset and
// aborts only with a code that is not OK; grpc-js-xds would fail the RPC
// with UNKNOWN on http_status 200: the clients differ there).
std::optional<int> AbortCode(const Any& config) {
  const Any* inner = &config;
  FilterConfig wrapper;
  if (config.Is<FilterConfig>()) {
    if (!config.UnpackTo(&wrapper)) return std::nullopt;
    inner = &wrapper.config();
  }
  HTTPFault fault;
  if (!inner->Is<HTTPFault>() || !inner->UnpackTo(&fault)) return std::nullopt;
  if (!fault.has_abort() || fault.has_max_active_faults()) return std::nullopt;
  const FaultAbort& abort = fault.abort();
  if (!abort.has_percentage() || !IsWhole(abort.percentage())) return std::nullopt;
  int code;
  switch (abort.error_type_case()) {
    case FaultAbort::kGrpcStatus:
      code = static_cast<int>(abort.grpc_status());
      break;
    case FaultAbort::kHttpStatus:
      code = GrpcCodeOfHttpStatus(abort.http_status());
      break;
    default:  // header_abort: the request decides.
      return std::nullopt;
  }
  if (code == static_cast<int>(absl::StatusCode::kOk)) return std::nullopt;
  return code;
}

}  // namespace

FaultFilters::FaultFilters(
    const envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager&
        hcm) {
  for (const auto& filter : hcm.http_filters()) {
    if (filter.typed_config().Is<HTTPFault>()) {
      filters_.emplace_back(filter.name(), filter.typed_config());
    }
  }
}

std::optional<int> FaultFilters::CertainAbort(
    absl::Span<const FilterConfigMap* const> overrides) const {
  for (const auto& [name, own] : filters_) {
    const Any* config = &own;
    for (const FilterConfigMap* map : overrides) {
      if (map == nullptr) continue;
      auto it = map->find(name);
      if (it != map->end()) {
        config = &it->second;
        break;
      }
    }
    if (std::optional<int> code = AbortCode(*config)) return code;
  }
  return std::nullopt;
}

std::string GrpcCodeName(int code) {
  if (code < 0 || code > 16) return absl::StrCat("code ", code);
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace facet::xds
