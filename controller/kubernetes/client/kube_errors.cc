#include "controller/kubernetes/client/kube_errors.h"

#include <cstdint>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/kubernetes/client/yaml_fields.h"

namespace facet::controller::kube {
namespace {

constexpr char kPayloadUrl[] = "type.facet.dev/facet.kube.ApiErrorInfo";
constexpr char kTooLargeCause[] = "ResourceVersionTooLarge";

absl::StatusCode CodeFor(const ApiErrorInfo& info) {
  switch (info.http_code) {
    case 0:
      return absl::StatusCode::kUnavailable;
    case 400:
    case 415:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return info.reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                            : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kFailedPrecondition;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    default:
      break;
  }
  if (info.http_code == 504 && info.cause == kTooLargeCause) return absl::StatusCode::kOutOfRange;
  if (info.http_code >= 500 && info.http_code <= 599) return absl::StatusCode::kUnavailable;
  return absl::StatusCode::kUnknown;
}

// The reason Kubernetes uses for a code when the body gives none.
absl::string_view DefaultReason(int http_code) {
  switch (http_code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

absl::Duration ParseSeconds(absl::string_view text) {
  int64_t seconds = 0;
  if (absl::SimpleAtoi(text, &seconds) && seconds > 0) return absl::Seconds(seconds);
  return absl::ZeroDuration();
}

// Fills reason, cause and retry_after from a kind: Status object; returns
// its message.
std::string ReadStatusObject(const YAML::Node& status, ApiErrorInfo& info) {
  info.reason = StringAt(status, {"reason"});
  const YAML::Node causes = FieldAt(status, {"details", "causes"});
  if (causes.IsDefined() && causes.IsSequence()) {
    for (const auto& cause : causes) {
      for (absl::string_view field : {"reason", "type"}) {
        const std::string value = StringAt(cause, {field});
        if (value == kTooLargeCause) info.cause = value;
      }
    }
  }
  if (info.retry_after == absl::ZeroDuration()) {
    info.retry_after = ParseSeconds(StringAt(status, {"details", "retryAfterSeconds"}));
  }
  return StringAt(status, {"message"});
}

}  // namespace

absl::Status ApiError(absl::string_view what, const ApiErrorInfo& info, absl::string_view message) {
  std::string text(what);
  if (info.http_code != 0) {
    absl::StrAppend(&text, ": HTTP ", info.http_code);
    const absl::string_view reason =
        info.reason.empty() ? DefaultReason(info.http_code) : absl::string_view(info.reason);
    if (!reason.empty()) absl::StrAppend(&text, " ", reason);
  }
  if (!message.empty()) absl::StrAppend(&text, ": ", message);
  if (info.retry_after > absl::ZeroDuration()) {
    absl::StrAppend(&text, " (retry after ", absl::FormatDuration(info.retry_after), ")");
  }
  absl::Status status(CodeFor(info), text);
  status.SetPayload(kPayloadUrl,
                    absl::Cord(absl::StrCat(info.http_code, ";", info.reason, ";", info.cause, ";",
                                            absl::ToInt64Milliseconds(info.retry_after), ";",
                                            info.connection_refused ? 1 : 0)));
  return status;
}

absl::Status StatusFromHttpResponse(absl::string_view what, int http_code, absl::string_view body,
                                    absl::string_view retry_after, bool is_create) {
  ApiErrorInfo info;
  info.http_code = http_code;
  info.retry_after = ParseSeconds(retry_after);
  std::string message;
  absl::StatusOr<YAML::Node> parsed = ParseDocumentText(body, "response body");
  if (parsed.ok() && StringAt(*parsed, {"kind"}) == "Status") {
    message = ReadStatusObject(*parsed, info);
  } else {
    constexpr size_t kMaxBody = 300;
    message = std::string(body.substr(0, kMaxBody));
  }
  if (http_code == 409 && info.reason.empty() && is_create) info.reason = "AlreadyExists";
  return ApiError(what, info, message);
}

absl::Status StatusFromStatusObject(absl::string_view what, const YAML::Node& status) {
  ApiErrorInfo info;
  int code = 0;
  info.http_code = absl::SimpleAtoi(StringAt(status, {"code"}), &code) && code > 0 ? code : 500;
  const std::string message = ReadStatusObject(status, info);
  return ApiError(what, info, message);
}

absl::Status ConnectionError(absl::string_view what, absl::string_view detail, bool refused) {
  ApiErrorInfo info;
  info.connection_refused = refused;
  return ApiError(what, info, detail);
}

std::optional<ApiErrorInfo> GetApiErrorInfo(const absl::Status& status) {
  const auto payload = status.GetPayload(kPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  const std::vector<std::string> parts = absl::StrSplit(std::string(*payload), ';');
  if (parts.size() != 5) return std::nullopt;
  ApiErrorInfo info;
  int64_t retry_ms = 0;
  if (!absl::SimpleAtoi(parts[0], &info.http_code) || !absl::SimpleAtoi(parts[3], &retry_ms)) {
    return std::nullopt;
  }
  info.reason = parts[1];
  info.cause = parts[2];
  info.retry_after = absl::Milliseconds(retry_ms);
  info.connection_refused = parts[4] == "1";
  return info;
}

namespace {
bool HasHttpCode(const absl::Status& status, int code) {
  const std::optional<ApiErrorInfo> info = GetApiErrorInfo(status);
  return info.has_value() && info->http_code == code;
}
}  // namespace

bool IsResourceExpired(const absl::Status& status) { return HasHttpCode(status, 410); }

bool IsTooLargeResourceVersion(const absl::Status& status) {
  const std::optional<ApiErrorInfo> info = GetApiErrorInfo(status);
  return info.has_value() && info->http_code == 504 && info->cause == kTooLargeCause;
}

bool IsTooManyRequests(const absl::Status& status) { return HasHttpCode(status, 429); }

bool IsInternalError(const absl::Status& status) { return HasHttpCode(status, 500); }

bool IsConnectionRefused(const absl::Status& status) {
  const std::optional<ApiErrorInfo> info = GetApiErrorInfo(status);
  return info.has_value() && info->connection_refused;
}

}  // namespace facet::controller::kube
