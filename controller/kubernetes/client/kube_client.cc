#include "controller/kubernetes/client/kube_client.h"

#include <utility>

namespace facet::controller::kube {

const char* WatchEventTypeName(WatchEvent::Type type) {
  switch (type) {
    case WatchEvent::Type::kAdded:
      return "ADDED";
    case WatchEvent::Type::kModified:
      return "MODIFIED";
    case WatchEvent::Type::kDeleted:
      return "DELETED";
    case WatchEvent::Type::kBookmark:
      return "BOOKMARK";
    case WatchEvent::Type::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

WatchSink::WatchSink(std::function<void(WatchEvent)> on_event,
                     std::function<void(absl::Status)> on_end)
    : on_event_(std::move(on_event)), on_end_(std::move(on_end)) {}

bool WatchSink::Event(WatchEvent event) {
  absl::MutexLock lock(&mu_);
  if (done_) return false;
  on_event_(std::move(event));
  return true;
}

void WatchSink::End(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (done_) return;
  done_ = true;
  on_end_(std::move(status));
  on_event_ = nullptr;
  on_end_ = nullptr;
}

void WatchSink::Cancel() {
  absl::MutexLock lock(&mu_);
  done_ = true;
  on_event_ = nullptr;
  on_end_ = nullptr;
}

bool WatchSink::done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

}  // namespace facet::controller::kube
