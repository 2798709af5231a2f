// A snapshot as served: the immutable Snapshot plus memoized variant
// selection per (resource, parameter set).
#ifndef FACET_XDS_SERVER_ADS_SERVING_SNAPSHOT_H_
#define FACET_XDS_SERVER_ADS_SERVING_SNAPSHOT_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/any.pb.h"
#include "xds_server/snapshot/snapshot.h"
#include "xds_server/snapshot_store/parameters.h"

namespace facet::xds {

// Thread-safe.
class ServingSnapshot {
 public:
  explicit ServingSnapshot(std::shared_ptr<const Snapshot> snapshot);

  const Snapshot& snapshot() const { return *snapshot_; }
  const std::shared_ptr<const Snapshot>& shared() const { return snapshot_; }

  // Returns the variant of `resource` (which must belong to this snapshot)
  // selected by `params`, or null. Memoized.
  std::shared_ptr<const Variant> Select(const ServedResource& resource,
                                        const Parameters& params) const;

  // Returns whether the source does not know yet what `params` selects of
  // (type, name), whose resource is `resource` (null when the snapshot holds
  // none): only partial snapshots have unknowns. Such a subscription is not
  // answered ("does not exist" would be a guess) until the source learns it.
  bool Unknown(const ServedResource* resource, const Parameters& params) const;

  // Distinct parameter sets remembered per resource.
  static constexpr size_t kMaxMemoizedParameterSets = 4096;

 private:
  std::shared_ptr<const Snapshot> snapshot_;
  mutable absl::Mutex mu_;
  // resource -> canonical parameters -> index into resource->variants (-1: none).
  mutable absl::flat_hash_map<const ServedResource*, absl::flat_hash_map<std::string, int>> memo_
      ABSL_GUARDED_BY(mu_);
};

// Returns the variant packed as google.protobuf.Any of `type`. The resource
// bytes are the variant's shared serialization (copied into the Any).
google::protobuf::Any PackVariant(const ResourceType& type, const Variant& variant);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_SERVING_SNAPSHOT_H_
