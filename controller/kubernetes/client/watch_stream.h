// Parsing of a watch response body: newline-delimited JSON, one event per
// line, where one read may hold several events and one event may span reads.
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_WATCH_STREAM_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_WATCH_STREAM_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/kubernetes/client/kube_client.h"

namespace facet::controller::kube {

// Splits a byte stream into lines across reads. Owned by one thread.
class NdjsonSplitter {
 public:
  explicit NdjsonSplitter(size_t max_line_bytes = size_t{64} << 20)
      : max_line_bytes_(max_line_bytes) {}

  // Appends `bytes` and moves every completed, non-blank line (without its
  // "\n" or "\r\n") to `lines`. Fails with kResourceExhausted when an
  // unfinished line exceeds the limit.
  absl::Status Feed(absl::string_view bytes, std::vector<std::string>& lines);

  // Returns the bytes of the unfinished last line ("" when the stream ended
  // at a line boundary).
  absl::string_view pending() const { return pending_; }

 private:
  const size_t max_line_bytes_;
  std::string pending_;
};

// Parses one line `{"type": "...", "object": {...}}`. Fails with kInternal
// naming `what` when the line is not such an event.
absl::StatusOr<WatchEvent> ParseWatchEvent(absl::string_view line, absl::string_view what);

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_WATCH_STREAM_H_
