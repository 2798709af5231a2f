// What the streams a server serves ask of the sources that feed it: a partial
// source (the relay) fetches only what is subscribed.
#ifndef FACET_XDS_SERVER_SNAPSHOT_STORE_DEMAND_CHANGE_H_
#define FACET_XDS_SERVER_SNAPSHOT_STORE_DEMAND_CHANGE_H_

#include <memory>
#include <string>
#include <vector>

#include "xds_server/snapshot_store/parameters.h"

namespace facet::xds {

// One subscription started or ended: what a partial source (the relay) must
// fetch for the streams it serves.
struct DemandChange {
  std::string type_url;
  std::string name;  // Normalised.
  std::shared_ptr<const Parameters> params;
  bool added = true;  // False: ended.
};

// Told what streams subscribe to: a partial source (the relay) fetches what
// its streams ask for.
class DemandObserver {
 public:
  virtual ~DemandObserver() = default;
  // Called on gRPC threads with no service or stream lock held; the changes
  // of one stream arrive in order, and every addition is followed by its
  // removal at the latest when the stream ends.
  virtual void OnDemand(const std::vector<DemandChange>& changes) = 0;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_SNAPSHOT_STORE_DEMAND_CHANGE_H_
