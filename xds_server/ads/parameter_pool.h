// One Parameters object per distinct parameter set among the streams that
// hold it, instead of one per stream.
#ifndef FACET_XDS_SERVER_ADS_PARAMETER_POOL_H_
#define FACET_XDS_SERVER_ADS_PARAMETER_POOL_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/snapshot_store/parameters.h"

namespace facet::xds {

// Shares the parameters of streams whose clients map to the same set:
// 10,000 streams of a few kinds of client hold a few Parameters, not 10,000
// copies of them (a map node per parameter and the canonical text each).
// The pool holds its entries weakly: a set no stream holds any more is
// freed, and its entry dropped by a later Intern. Thread-safe.
class ParameterPool {
 public:
  // Returns the pool's Parameters for `params`, the one already shared when
  // some holder keeps it alive, otherwise a new one. Amortized O(size of
  // `params`).
  std::shared_ptr<const Parameters> Intern(ParameterSet params);

  // Returns the entries kept, expired ones not yet dropped included.
  size_t entries() const;

  // Returns the process's pool, which the streams' states share. Never
  // destroyed.
  static ParameterPool& Shared();

 private:
  mutable absl::Mutex mu_;
  // By canonical text.
  absl::flat_hash_map<std::string, std::weak_ptr<const Parameters>> entries_ ABSL_GUARDED_BY(mu_);
  // Expired entries are dropped once the table reaches this size.
  size_t prune_at_ ABSL_GUARDED_BY(mu_) = 64;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_PARAMETER_POOL_H_
