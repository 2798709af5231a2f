// The NACKs clients sent, as the admin port and object status report them.
#ifndef FACET_XDS_SERVER_ADS_NACK_LOG_H_
#define FACET_XDS_SERVER_ADS_NACK_LOG_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "xds_server/ads/ads_observer.h"
#include "xds_server/ads/stream_state.h"

namespace facet::xds {

// The last NACK clients sent for one resource variant.
struct NackRecord {
  std::string type_url;
  std::string name;
  std::string version;
  std::string label;
  std::string node_id;  // The last client that NACKed it.
  std::string error_detail;
  int64_t count = 0;
};

// The last NACK of each resource variant, within bounds: at most
// `max_records` records (later variants are counted as dropped, not kept),
// each error detail cut to `max_detail_bytes` and kept once for every record
// of its NACK. Thread-safe.
class NackLog {
 public:
  // `observer` (not owned) hears of dropped records, cut details and the
  // bytes of details kept; it must outlive the log.
  NackLog(int max_records, int max_detail_bytes, AdsObserver& observer);
  ~NackLog();

  // A NACK's error detail as kept: cut at a character boundary and escaped.
  struct Detail {
    std::shared_ptr<const std::string> text;
    bool truncated = false;  // Cut to max_detail_bytes.
  };

  // Records that `node_id` NACKed `nacked` (the items of a response of
  // `type_url`; removals are not recorded) with `error_detail`, and returns
  // the detail as kept.
  Detail Add(const std::string& type_url, const std::vector<PushedItem>& nacked,
             const std::string& node_id, absl::string_view error_detail);

  // Returns every record, by type URL, name and version.
  std::vector<NackRecord> Records() const;

 private:
  // A record; its error detail is shared by every record of one NACK.
  struct Stored {
    NackRecord record;  // error_detail unset.
    std::shared_ptr<const std::string> detail;
  };

  // Counts one more record holding `detail`, and one fewer holding
  // `replaced` (null: none), reporting the bytes of details kept.
  void ShareLocked(const std::shared_ptr<const std::string>& detail, const std::string* replaced)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_records_;
  const size_t max_detail_bytes_;
  AdsObserver& observer_;
  mutable absl::Mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, Stored> records_ ABSL_GUARDED_BY(mu_);
  // Records holding each detail kept.
  absl::flat_hash_map<const std::string*, int> holders_ ABSL_GUARDED_BY(mu_);
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_NACK_LOG_H_
