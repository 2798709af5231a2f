// Derives dynamic parameters from node metadata, for clients that subscribe
// by plain resource_names (TP2 "migrating from node metadata").
#ifndef FACET_XDS_SERVER_ADS_PARAMETER_MAPPING_H_
#define FACET_XDS_SERVER_ADS_PARAMETER_MAPPING_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "envoy/config/core/v3/base.pb.h"
#include "xds_server/constraints/constraints.h"

namespace facet::xds {

// Immutable; thread-safe.
class ParameterMapping {
 public:
  // Every string-valued top-level field of node.metadata is a parameter of
  // the same name.
  ParameterMapping() = default;

  // Parses a mapping spec: a comma-separated list of `param` or
  // `param=metadata_key` entries; only the listed parameters are taken, each
  // from the metadata field named (default: the same name). An empty spec is
  // the default mapping. Errors name the offending entry.
  static absl::StatusOr<ParameterMapping> Parse(absl::string_view spec);

  // Returns the parameters for `node`. Non-string metadata values are ignored.
  ParameterSet ParametersFor(const envoy::config::core::v3::Node& node) const;

  // Returns the spec in the form Parse accepts ("" for the default).
  std::string ToString() const;

 private:
  // (parameter, metadata key) pairs; empty means "all string fields".
  std::vector<std::pair<std::string, std::string>> entries_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_PARAMETER_MAPPING_H_
