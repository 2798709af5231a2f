#include "controller/server/console/console_routes.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace facet::controller {
namespace {

// Everything the pages load comes from this origin: no CDN, no fonts, no
// inline script; JSON is fetched from the admin endpoints beside them.
constexpr char kContentSecurityPolicy[] =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

void AddFileHeaders(const EmbeddedFile& file, AdminResponse* response) {
  response->headers.emplace_back("ETag", std::string(file.etag));
  response->headers.emplace_back("Cache-Control", "no-cache");
  response->headers.emplace_back("X-Content-Type-Options", "nosniff");
  response->headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
  response->headers.emplace_back("Referrer-Policy", "no-referrer");
}

}  // namespace

bool IfNoneMatchMatches(absl::string_view if_none_match, absl::string_view etag) {
  const absl::string_view opaque = absl::StripPrefix(etag, "W/");
  for (absl::string_view candidate : absl::StrSplit(if_none_match, ',')) {
    candidate = absl::StripAsciiWhitespace(candidate);
    if (candidate == "*") return true;
    if (absl::StripPrefix(candidate, "W/") == opaque) return true;
  }
  return false;
}

AdminHandler ChangeTaggedRoute(std::function<std::string()> tag, AdminHandler handler) {
  return [tag = std::move(tag), handler = std::move(handler)](const AdminRequest& request) {
    const std::string etag = absl::StrCat("\"", tag(), "\"");
    AdminResponse response;
    if (IfNoneMatchMatches(request.Header("if-none-match"), etag)) {
      response.code = 304;
    } else {
      response = handler(request);
    }
    if (response.code == 200 || response.code == 304) {
      response.headers.emplace_back("ETag", etag);
      response.headers.emplace_back("Cache-Control", "no-cache");
    }
    return response;
  };
}

std::map<std::string, AdminHandler> ConsoleRoutes(absl::Span<const EmbeddedFile> files) {
  std::map<std::string, AdminHandler> routes;
  for (const EmbeddedFile& file : files) {
    routes.emplace(std::string(file.path), [&file](const AdminRequest& request) {
      AdminResponse response;
      if (IfNoneMatchMatches(request.Header("if-none-match"), file.etag)) {
        response.code = 304;
        response.content_type = std::string(file.content_type);
      } else {
        response = AdminResponse{200, std::string(file.content_type), std::string(file.body)};
      }
      AddFileHeaders(file, &response);
      return response;
    });
  }
  routes.emplace("/ui", [] {
    AdminResponse response{308, "text/plain; charset=utf-8", "moved to /ui/\n"};
    response.headers.emplace_back("Location", "/ui/");
    return response;
  });
  return routes;
}

}  // namespace facet::controller
