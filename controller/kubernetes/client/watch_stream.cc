#include "controller/kubernetes/client/watch_stream.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "controller/kubernetes/client/yaml_fields.h"

namespace facet::controller::kube {

absl::Status NdjsonSplitter::Feed(absl::string_view bytes, std::vector<std::string>& lines) {
  while (!bytes.empty()) {
    const size_t newline = bytes.find('\n');
    if (newline == absl::string_view::npos) {
      pending_.append(bytes.data(), bytes.size());
      break;
    }
    pending_.append(bytes.data(), newline);
    bytes.remove_prefix(newline + 1);
    if (!absl::StripAsciiWhitespace(pending_).empty()) {
      if (pending_.back() == '\r') pending_.pop_back();
      lines.push_back(std::move(pending_));
    }
    pending_.clear();
  }
  if (pending_.size() > max_line_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("watch event longer than ", max_line_bytes_, " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<WatchEvent> ParseWatchEvent(absl::string_view line, absl::string_view what) {
  absl::StatusOr<YAML::Node> parsed = ParseDocumentText(line, "watch event", WatchEventLimits());
  if (!parsed.ok()) {
    return absl::InternalError(absl::StrCat(what, ": malformed ", parsed.status().message()));
  }
  const std::string type = StringAt(*parsed, {"type"});
  WatchEvent event;
  if (type == "ADDED") {
    event.type = WatchEvent::Type::kAdded;
  } else if (type == "MODIFIED") {
    event.type = WatchEvent::Type::kModified;
  } else if (type == "DELETED") {
    event.type = WatchEvent::Type::kDeleted;
  } else if (type == "BOOKMARK") {
    event.type = WatchEvent::Type::kBookmark;
  } else if (type == "ERROR") {
    event.type = WatchEvent::Type::kError;
  } else {
    return absl::InternalError(
        absl::StrCat(what, ": watch event with unknown type \"", type, "\""));
  }
  event.object = Field(*parsed, "object");
  if (!event.object.IsDefined() || !event.object.IsMap()) {
    return absl::InternalError(absl::StrCat(what, ": ", type, " watch event without an object"));
  }
  return event;
}

}  // namespace facet::controller::kube
