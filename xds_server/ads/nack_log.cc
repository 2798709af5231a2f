#include "xds_server/ads/nack_log.h"

#include <algorithm>
#include <utility>

#include "xds_server/common/log_text.h"

namespace facet::xds {

NackLog::NackLog(int max_records, int max_detail_bytes, AdsObserver& observer)
    : max_records_(max_records),
      max_detail_bytes_(static_cast<size_t>(std::max(max_detail_bytes, 0))),
      observer_(observer) {}

NackLog::~NackLog() {
  // Freed under the lock the records were written under, on gRPC's threads:
  // that orders their last write before this visibly to ThreadSanitizer
  // (gRPC's own synchronization is not).
  absl::MutexLock lock(&mu_);
  records_.clear();
  holders_.clear();
}

NackLog::Detail NackLog::Add(const std::string& type_url, const std::vector<PushedItem>& nacked,
                             const std::string& node_id, absl::string_view error_detail) {
  // Cut at a character boundary and escaped once, then shared by every
  // record of this NACK (and valid UTF-8 for /status and object status).
  const size_t kept = Utf8PrefixLength(error_detail, max_detail_bytes_);
  Detail detail;
  detail.truncated = kept < error_detail.size();
  detail.text = std::make_shared<const std::string>(EscapeText(error_detail.substr(0, kept)));
  if (detail.truncated) observer_.OnNackDetailTruncated();
  absl::MutexLock lock(&mu_);
  for (const PushedItem& item : nacked) {
    if (item.removal) continue;
    auto key = std::make_tuple(type_url, item.name, item.version);
    auto it = records_.find(key);
    if (it == records_.end()) {
      if (static_cast<int>(records_.size()) >= max_records_) {
        observer_.OnNackRecordDropped();
        continue;
      }
      it = records_.emplace(std::move(key), Stored()).first;
    }
    NackRecord& record = it->second.record;
    record.type_url = type_url;
    record.name = item.name;
    record.version = item.version;
    record.label = item.label;
    record.node_id = node_id;
    record.count++;
    ShareLocked(detail.text, it->second.detail.get());
    it->second.detail = detail.text;
  }
  return detail;
}

void NackLog::ShareLocked(const std::shared_ptr<const std::string>& detail,
                          const std::string* replaced) {
  if (replaced == detail.get()) return;
  if (++holders_[detail.get()] == 1) {
    observer_.OnNackDetailBytesChange(static_cast<int64_t>(detail->size()));
  }
  if (replaced == nullptr) return;
  auto it = holders_.find(replaced);
  if (--it->second > 0) return;
  // No record holds it any more: the last shared_ptr goes with the record's.
  observer_.OnNackDetailBytesChange(-static_cast<int64_t>(replaced->size()));
  holders_.erase(it);
}

std::vector<NackRecord> NackLog::Records() const {
  absl::MutexLock lock(&mu_);
  std::vector<NackRecord> out;
  out.reserve(records_.size());
  for (const auto& [key, stored] : records_) {
    out.push_back(stored.record);
    out.back().error_detail = *stored.detail;
  }
  return out;
}

}  // namespace facet::xds
