#include "xds_server/snapshot_store/parameters.h"

#include <utility>

namespace facet::xds {

Parameters::Parameters(ParameterSet p)
    : params(std::move(p)), canonical(CanonicalParameters(params)) {}

}  // namespace facet::xds
