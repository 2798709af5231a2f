// When gRPC's fault-injection filter (gRFC A33) fails every RPC of a route
// or weighted cluster before any load-balancing pick: such a route is a
// terminal, whatever the cluster behind it serves.
#ifndef FACET_XDS_SERVER_EXPLAIN_FAULT_ABORT_H_
#define FACET_XDS_SERVER_EXPLAIN_FAULT_ABORT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/map.h"

namespace facet::xds {

// A typed_per_filter_config map (of a VirtualHost, Route or ClusterWeight).
using FilterConfigMap = google::protobuf::Map<std::string, google::protobuf::Any>;

// The fault-injection filters of one HttpConnectionManager's filter chain,
// with their own configs. Immutable; any thread.
class FaultFilters {
 public:
  FaultFilters() = default;
  explicit FaultFilters(
      const envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager&
          hcm);

  // Returns the gRPC status code with which a fault filter fails every RPC,
  // given the typed_per_filter_config maps in force from the most specific
  // to the least (a ClusterWeight's, its Route's, its VirtualHost's): per
  // filter instance, the most specific override naming it, else the
  // filter's own config (gRFC A39). nullopt when some RPC may pass: no
  // abort, a percentage under 100 % (or none), an abort chosen by request
  // headers, max_active_faults, or a code that maps to OK. As gRPC reads
  // it, FilterConfig.disabled and HTTPFault.headers change nothing.
  std::optional<int> CertainAbort(absl::Span<const FilterConfigMap* const> overrides) const;

  bool empty() const { return filters_.empty(); }

 private:
  std::vector<std::pair<std::string, google::protobuf::Any>> filters_;  // Name, config.
};

// Returns the canonical name of a gRPC status code ("UNIMPLEMENTED"), or
// "code N" outside 0-16.
std::string GrpcCodeName(int code);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_EXPLAIN_FAULT_ABORT_H_
