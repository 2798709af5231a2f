// How KubeClient reports Kubernetes API errors as absl::Status, and the
// predicates the reflector decides on. The HTTP code, the Status `reason`,
// a cause and Retry-After travel in a payload, so decisions never parse
// messages.
//
//   HTTP (reason)                       absl::StatusCode
//   400 BadRequest                      kInvalidArgument
//   401 Unauthorized                    kUnauthenticated
//   403 Forbidden                       kPermissionDenied
//   404 NotFound                        kNotFound
//   409 AlreadyExists (create)          kAlreadyExists
//   409 Conflict                        kAborted            (re-GET, recompute, retry)
//   410 Expired / Gone                  kFailedPrecondition (message contains "Expired" or "Gone")
//   415 UnsupportedMediaType            kInvalidArgument
//   422 Invalid                         kInvalidArgument
//   429 TooManyRequests                 kResourceExhausted  (message and payload carry Retry-After)
//   504 with cause ResourceVersionTooLarge  kOutOfRange
//   other 5xx                           kUnavailable
//   other codes                         kUnknown
//   connection errors, broken streams   kUnavailable        (IsConnectionRefused for refused)
//
// Messages read "<what>: HTTP <code> <reason>: <Status message>".
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_KUBE_ERRORS_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_KUBE_ERRORS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::kube {

// What the API server (or the connection) said, as carried by a Status.
struct ApiErrorInfo {
  int http_code = 0;   // 0: no HTTP response (connection error, broken stream).
  std::string reason;  // The Status `reason`, e.g. "Expired", "Conflict".
  std::string cause;   // e.g. "ResourceVersionTooLarge" from details.causes.
  absl::Duration retry_after = absl::ZeroDuration();
  bool connection_refused = false;
};

// Returns the status for an API error per the table above. `what` names the
// request ("LIST /apis/..."); `message` is the Status body's message.
absl::Status ApiError(absl::string_view what, const ApiErrorInfo& info, absl::string_view message);

// Returns the status for a non-2xx HTTP response whose body is (normally) a
// kind: Status object. `retry_after` is the Retry-After header ("" if none).
// `is_create` maps a 409 without a reason to kAlreadyExists.
absl::Status StatusFromHttpResponse(absl::string_view what, int http_code, absl::string_view body,
                                    absl::string_view retry_after, bool is_create = false);

// Returns the status for a kind: Status object, as carried by a watch ERROR
// event (its `code` gives the HTTP code, 500 when absent).
absl::Status StatusFromStatusObject(absl::string_view what, const YAML::Node& status);

// Returns kUnavailable for a failure to reach the server or a broken stream.
absl::Status ConnectionError(absl::string_view what, absl::string_view detail, bool refused);

// Returns the info carried by a status made by the functions above.
std::optional<ApiErrorInfo> GetApiErrorInfo(const absl::Status& status);

// 410 Expired or Gone: the requested resourceVersion or continue token is
// older than the server keeps.
bool IsResourceExpired(const absl::Status& status);
// 504 with cause ResourceVersionTooLarge.
bool IsTooLargeResourceVersion(const absl::Status& status);
// 429.
bool IsTooManyRequests(const absl::Status& status);
// 500.
bool IsInternalError(const absl::Status& status);
// The TCP connection was refused (nothing listening).
bool IsConnectionRefused(const absl::Status& status);

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_KUBE_ERRORS_H_
