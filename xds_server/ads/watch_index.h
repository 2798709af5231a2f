// Which ADS streams a snapshot change wakes: (type, name) -> streams,
// grouped by the parameters they select with.
#ifndef FACET_XDS_SERVER_ADS_WATCH_INDEX_H_
#define FACET_XDS_SERVER_ADS_WATCH_INDEX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "xds_server/ads/serving_snapshot.h"
#include "xds_server/ads/stream_state.h"
#include "xds_server/resources/resource_type.h"

namespace facet::xds {

// The names each stream watches, by type, so that a snapshot wakes only the
// streams watching a name it changed, and of those only the ones whose
// selected variant changed (or may have). Streams are known by an id their
// owner gives them. Not thread-safe: the owner serializes calls (one lock).
class WatchIndex {
 public:
  using StreamId = uint64_t;

  // What a snapshot change asks of one stream.
  struct Wake {
    // Re-examine everything (the snapshot is not derived from the last one).
    bool all = false;
    // Wildcard types: every changed name of the type.
    boost::container::small_vector<const ResourceType*, 1> types;
    // Changed names the stream watches (pointing into the change set of the
    // snapshot they were found in, valid while it is). Most wakes name one:
    // it is kept inline, so a change that wakes thousands of streams
    // allocates nothing per stream.
    boost::container::small_vector<std::pair<const ResourceType*, const std::string*>, 1> names;
  };

  // Adds a stream watching nothing yet.
  void AddStream(StreamId stream);
  // Applies `stream`'s watch changes, and records the parameters its
  // subscriptions all select with (`uniform_params`; null: they differ),
  // which decide whether a change wakes it. When they differ from the ones
  // recorded before, `watched` must be everything the stream watches now
  // (its entries move to their new group); otherwise it is not read.
  void Update(StreamId stream, const std::vector<WatchChange>& changes,
              std::shared_ptr<const Parameters> uniform_params,
              const std::vector<WatchChange>& watched);
  // Removes `stream` and what it watches (`watches`: everything, pending
  // changes included).
  void RemoveStream(StreamId stream, const std::vector<WatchChange>& watches);

  // Returns whether `after`, published after `before`, wakes every stream to
  // re-examine everything: it is not derived from `before`.
  static bool WakesAll(const ServingSnapshot& before, const ServingSnapshot& after);

  // Returns the streams to wake for `after`, published after `before`, each
  // once, in ascending id, with what each should re-examine. Every stream,
  // with Wake::all, when `after` is not derived from `before`. O(w log w) in
  // the w changed names' watchers, not O(streams), otherwise. Ids ascend in
  // the order streams opened, which is roughly the order their state was
  // allocated in: the caller's walk over the woken streams goes forward
  // through memory rather than in hash order. (So a change reaches the
  // newest streams last.)
  std::vector<std::pair<StreamId, Wake>> Wakes(const ServingSnapshot& before,
                                               const ServingSnapshot& after) const;

  size_t streams() const { return streams_.size(); }

 private:
  // Streams whose subscriptions all select with one parameter set.
  struct ParameterGroup {
    std::shared_ptr<const Parameters> params;
    absl::flat_hash_set<StreamId> streams;
  };
  // Streams watching one name: grouped by the parameters they select with,
  // so that a change wakes only the groups whose selected variant changed
  // (the streams of the other groups are not touched).
  struct NameWatchers {
    absl::flat_hash_map<std::string, ParameterGroup> uniform;  // By canonical parameters.
    absl::flat_hash_set<StreamId> mixed;  // Selecting with several parameter sets.
  };
  // Streams watching names of one type.
  struct TypeIndex {
    absl::flat_hash_map<std::string, NameWatchers> by_name;
    absl::flat_hash_set<StreamId> wildcard;
  };

  void Apply(StreamId stream, const std::shared_ptr<const Parameters>& params,
             const WatchChange& change, bool remove_only);

  // Every stream, with the parameters it was last reported to select with.
  absl::flat_hash_map<StreamId, std::shared_ptr<const Parameters>> streams_;
  absl::flat_hash_map<std::string, TypeIndex> index_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_WATCH_INDEX_H_
