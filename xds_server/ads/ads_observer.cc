#include "xds_server/ads/ads_observer.h"

namespace facet::xds {

void AdsObserverPair::OnStreamOpened() {
  first_.OnStreamOpened();
  if (second_ != nullptr) second_->OnStreamOpened();
}

void AdsObserverPair::OnStreamEnding(StreamEndReason reason) {
  first_.OnStreamEnding(reason);
  if (second_ != nullptr) second_->OnStreamEnding(reason);
}

void AdsObserverPair::OnStreamClosed() {
  first_.OnStreamClosed();
  if (second_ != nullptr) second_->OnStreamClosed();
}

void AdsObserverPair::OnSnapshot(int64_t streams_woken) {
  first_.OnSnapshot(streams_woken);
  if (second_ != nullptr) second_->OnSnapshot(streams_woken);
}

void AdsObserverPair::OnPush(absl::string_view type_url) {
  first_.OnPush(type_url);
  if (second_ != nullptr) second_->OnPush(type_url);
}

void AdsObserverPair::OnPushCompleted(absl::Duration since_publish) {
  first_.OnPushCompleted(since_publish);
  if (second_ != nullptr) second_->OnPushCompleted(since_publish);
}

void AdsObserverPair::OnAck(absl::string_view type_url) {
  first_.OnAck(type_url);
  if (second_ != nullptr) second_->OnAck(type_url);
}

void AdsObserverPair::OnNack(absl::string_view type_url) {
  first_.OnNack(type_url);
  if (second_ != nullptr) second_->OnNack(type_url);
}

void AdsObserverPair::OnNackRecordDropped() {
  first_.OnNackRecordDropped();
  if (second_ != nullptr) second_->OnNackRecordDropped();
}

void AdsObserverPair::OnNackDetailTruncated() {
  first_.OnNackDetailTruncated();
  if (second_ != nullptr) second_->OnNackDetailTruncated();
}

void AdsObserverPair::OnResponseDeferred() {
  first_.OnResponseDeferred();
  if (second_ != nullptr) second_->OnResponseDeferred();
}

void AdsObserverPair::OnSubscriptionMemoryChange(int64_t bytes) {
  first_.OnSubscriptionMemoryChange(bytes);
  if (second_ != nullptr) second_->OnSubscriptionMemoryChange(bytes);
}

void AdsObserverPair::OnResponseBytesInFlightChange(int64_t bytes) {
  first_.OnResponseBytesInFlightChange(bytes);
  if (second_ != nullptr) second_->OnResponseBytesInFlightChange(bytes);
}

void AdsObserverPair::OnNackDetailBytesChange(int64_t bytes) {
  first_.OnNackDetailBytesChange(bytes);
  if (second_ != nullptr) second_->OnNackDetailBytesChange(bytes);
}

void AdsObserverPair::OnStreamsByAuthorityChange(const std::string& authority, int64_t streams) {
  first_.OnStreamsByAuthorityChange(authority, streams);
  if (second_ != nullptr) second_->OnStreamsByAuthorityChange(authority, streams);
}

}  // namespace facet::xds
