// The console's pages on the admin port: the embedded files under /ui/.
#ifndef FACET_CONTROLLER_SERVER_CONSOLE_CONSOLE_ROUTES_H_
#define FACET_CONTROLLER_SERVER_CONSOLE_CONSOLE_ROUTES_H_

#include <functional>
#include <map>
#include <string>

#include "absl/types/span.h"
#include "controller/server/admin/admin_server.h"
#include "controller/server/console/embedded_file.h"

namespace facet::controller {

// Returns the embedded console files (/ui/, /ui/console.js, ...).
absl::Span<const EmbeddedFile> ConsoleFiles();

// Returns one exact-path admin route per file (so no other path, and no
// "..", reaches a file), plus "/ui" redirecting to "/ui/". Each answers with
// the file's content type, its ETag and `Cache-Control: no-cache` (a browser
// revalidates, and an unchanged file costs a 304 with no body), a
// Content-Security-Policy allowing only this origin, and 304 when the
// request's If-None-Match names the ETag (or is "*"). `files` must be static.
std::map<std::string, AdminHandler> ConsoleRoutes(
    absl::Span<const EmbeddedFile> files = ConsoleFiles());

// Returns a route that answers with `handler` and the header fields
// `ETag: "TAG"` and `Cache-Control: no-cache`, where TAG is `tag()` taken
// first; a request whose If-None-Match names that tag gets 304 with no body
// and `handler` does not run. `tag` must be cheap and change whenever what
// `handler` answers may (a change counter, taken before the state it
// counts is read). For endpoints a page polls (/status). Thread-safe as
// `tag` and `handler` are.
AdminHandler ChangeTaggedRoute(std::function<std::string()> tag, AdminHandler handler);

// Returns whether an If-None-Match value matches `etag` (RFC 9110 13.1.2:
// "*", or a comma-separated list compared weakly).
bool IfNoneMatchMatches(absl::string_view if_none_match, absl::string_view etag);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_CONSOLE_CONSOLE_ROUTES_H_
