// The parameters a subscription selects variants with.
#ifndef FACET_XDS_SERVER_SNAPSHOT_STORE_PARAMETERS_H_
#define FACET_XDS_SERVER_SNAPSHOT_STORE_PARAMETERS_H_

#include <string>

#include "xds_server/constraints/constraints.h"

namespace facet::xds {

// A parameter set with its canonical text ("k=v\n..."), made once per
// subscription so lookups need not rebuild it. Immutable once made.
struct Parameters {
  explicit Parameters(ParameterSet params);
  ParameterSet params;
  std::string canonical;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_SNAPSHOT_STORE_PARAMETERS_H_
