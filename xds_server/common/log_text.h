// Client-supplied text made safe for a log line: escaped so it cannot start
// a new line, hide itself or break the encoding, and cut so it cannot flood
// the log.
#ifndef FACET_XDS_SERVER_COMMON_LOG_TEXT_H_
#define FACET_XDS_SERVER_COMMON_LOG_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace facet::xds {

// Bytes of one client-supplied string (a node id, a resource name, a type
// URL) kept in a log line by default.
inline constexpr size_t kMaxLoggedBytes = 128;
// Bytes of an error message that may quote such strings (a gRPC status from
// a peer, a rejection naming a resource) kept in a log line.
inline constexpr size_t kMaxLoggedStatusBytes = 1024;

// Returns the length of the longest prefix of `text` of at most `max_bytes`
// bytes that does not end inside a well-formed UTF-8 sequence.
size_t Utf8PrefixLength(absl::string_view text, size_t max_bytes);

// Returns `text` with everything that is not printable, valid UTF-8 made
// visible: \n, \r and \t become "\n", "\r", "\t"; other C0 controls, DEL and
// each byte of an invalid UTF-8 sequence become "\xNN"; C1 controls, line and
// paragraph separators and bidirectional formatting characters become
// "\uNNNN". The result is valid UTF-8 without control characters (also valid
// inside a JSON string once JSON-escaped). Backslashes are kept, so escaping
// is idempotent: a message that quotes escaped text can be escaped again.
std::string EscapeText(absl::string_view text);

// Returns EscapeText of at most the first `max_bytes` bytes of `text` (cut
// at a character boundary), followed by "...(N bytes)" with text's full
// size when it was cut: what client-supplied strings look like in logs.
std::string SafeForLog(absl::string_view text, size_t max_bytes = kMaxLoggedBytes);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_COMMON_LOG_TEXT_H_
