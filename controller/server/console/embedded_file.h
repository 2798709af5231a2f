// A file compiled into the binary (cmake/FacetEmbed.cmake generates the table).
#ifndef FACET_CONTROLLER_SERVER_CONSOLE_EMBEDDED_FILE_H_
#define FACET_CONTROLLER_SERVER_CONSOLE_EMBEDDED_FILE_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace facet::controller {

// Immutable, static storage: safe from any thread.
struct EmbeddedFile {
  absl::string_view path;          // The URL path it is served under, e.g. "/ui/".
  absl::string_view content_type;  // From its extension, e.g. "text/html; charset=utf-8".
  absl::string_view etag;          // A quoted digest of its bytes, e.g. "\"3f2a...\"".
  absl::string_view body;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_CONSOLE_EMBEDDED_FILE_H_
