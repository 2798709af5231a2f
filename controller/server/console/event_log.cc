#include "controller/server/console/event_log.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "xds_server/common/struct_json.h"
#include "xds_server/resources/resource_type.h"

namespace facet::controller {
namespace {

const char* ReasonText(xds::StreamEndReason reason) {
  switch (reason) {
    case xds::StreamEndReason::kNamesLimit:
      return "over the names limit";
    case xds::StreamEndReason::kTypesLimit:
      return "over the types limit";
    case xds::StreamEndReason::kBytesLimit:
      return "over the bytes limit";
    case xds::StreamEndReason::kConnectionSubscriptionLimit:
      return "over the subscription bytes per connection";
    case xds::StreamEndReason::kServerSubscriptionLimit:
      return "over the server's subscription bytes";
    case xds::StreamEndReason::kWriteStall:
      return "a write stalled";
    case xds::StreamEndReason::kInvalidRequest:
      return "an invalid request";
    case xds::StreamEndReason::kShutdown:
      return "shutting down";
  }
  return "unknown";
}

// Author-controlled text kept in an event is cut at this many bytes (at a
// character boundary), so the log stays bounded whatever objects say.
constexpr size_t kMaxTextBytes = 1024;

std::string Cut(absl::string_view text) {
  if (text.size() <= kMaxTextBytes) return std::string(text);
  size_t end = kMaxTextBytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return absl::StrCat(text.substr(0, end), "…");
}

std::string Rfc3339Millis(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone());
}

}  // namespace

EventLog::EventLog(size_t capacity, std::function<absl::Time()> now)
    : capacity_(capacity == 0 ? 1 : capacity), now_(std::move(now)) {}

void EventLog::OnSnapshot(int64_t streams_woken) {
  const int64_t pushes = pushes_.exchange(0, std::memory_order_relaxed);
  Add("snapshot", absl::StrCat("snapshot published; ", streams_woken, " stream",
                               streams_woken == 1 ? "" : "s", " woken; ", pushes, " response",
                               pushes == 1 ? "" : "s", " pushed since the one before"));
}

void EventLog::OnPush(absl::string_view /*type_url*/) {
  pushes_.fetch_add(1, std::memory_order_relaxed);
}

void EventLog::OnNack(absl::string_view type_url) {
  Add("nack", absl::StrCat("a client NACKed a ", xds::ResourceTypeForLog(type_url), " response"));
}

void EventLog::OnStreamEnding(xds::StreamEndReason reason) {
  if (reason == xds::StreamEndReason::kShutdown) return;
  Add("stream_ended", absl::StrCat("the server ended a stream: ", ReasonText(reason)));
}

void EventLog::OnRejected(absl::string_view object, absl::string_view field,
                          absl::string_view reason, bool serving_previous, absl::Time since) {
  Event event;
  event.kind = "rejected";
  event.object = Cut(object);
  event.field = Cut(field);
  event.reason = Cut(reason);
  event.since = since;
  event.serving_previous = serving_previous;
  event.text = absl::StrCat(
      event.object, " rejected: ", event.field, event.field.empty() ? "" : ": ", event.reason,
      serving_previous ? absl::StrCat("; previous revision serving since ", Rfc3339Millis(since))
                       : "; not served");
  Add(std::move(event));
}

void EventLog::OnAccepted(absl::string_view object) {
  Event event;
  event.kind = "accepted";
  event.object = Cut(object);
  event.text = absl::StrCat(event.object, " accepted again");
  Add(std::move(event));
}

void EventLog::OnFileRead(absl::string_view path, absl::string_view problem) {
  Event event;
  event.kind = problem.empty() ? "parsed" : "unparsed";
  event.file = Cut(path);
  event.reason = Cut(problem);
  event.text = problem.empty() ? absl::StrCat(event.file, " parses again")
                               : absl::StrCat(event.file, " does not parse: ", event.reason,
                                              "; its last good read keeps serving");
  Add(std::move(event));
}

void EventLog::Add(std::string kind, std::string text) {
  Event event;
  event.kind = std::move(kind);
  event.text = std::move(text);
  Add(std::move(event));
}

void EventLog::Add(Event event) {
  event.time = now_ ? now_() : absl::Now();
  absl::MutexLock lock(&mu_);
  event.seq = ++last_seq_;
  events_.push_back(std::move(event));
  while (events_.size() > capacity_) events_.pop_front();
}

std::deque<EventLog::Event> EventLog::After(uint64_t after) const {
  absl::MutexLock lock(&mu_);
  std::deque<Event> out;
  for (const Event& event : events_) {
    if (event.seq > after) out.push_back(event);
  }
  return out;
}

std::string EventLog::Json(uint64_t after) const {
  google::protobuf::Struct document;
  auto& fields = *document.mutable_fields();
  google::protobuf::ListValue& events = *fields["events"].mutable_list_value();
  {
    absl::MutexLock lock(&mu_);
    for (const Event& event : events_) {
      if (event.seq <= after) continue;
      auto& entry = *events.add_values()->mutable_struct_value()->mutable_fields();
      const bool rejection = event.kind == "rejected";
      if (rejection) {
        entry["field"] = json::StringValue(event.field);
        entry["serving_previous"] = json::BoolValue(event.serving_previous);
        entry["since"] = json::StringValue(Rfc3339Millis(event.since));
      }
      if (!event.file.empty()) entry["file"] = json::StringValue(event.file);
      entry["kind"] = json::StringValue(event.kind);
      if (!event.object.empty()) entry["object"] = json::StringValue(event.object);
      if (!event.reason.empty()) entry["reason"] = json::StringValue(event.reason);
      entry["seq"] = json::NumberValue(static_cast<double>(event.seq));
      entry["text"] = json::StringValue(event.text);
      entry["time"] = json::StringValue(Rfc3339Millis(event.time));
    }
    fields["last_seq"] = json::NumberValue(static_cast<double>(last_seq_));
  }
  fields["pushes_since_snapshot"] =
      json::NumberValue(static_cast<double>(pushes_.load(std::memory_order_relaxed)));
  return json::MessageToJson(document, /*pretty=*/false);
}

}  // namespace facet::controller
