// xDS resource names: old-style opaque names and xdstp:// URNs (xRFC TP1,
// gRFC A47). Parses, validates and canonicalises names so that the name Facet
// serves is byte-for-byte the name gRPC clients request.
//
// Canonical form of an xdstp:// name, as gRPC C-core writes it on the wire
// (XdsClient::ConstructFullXdsResourceName, which calls
// URI::Create(...).ToString() in src/core/lib/uri/uri_parser.cc):
//
//   xdstp://<authority>/<type>/<id>[?<key>=<value>[&<key>=<value>...]]
//
// - Context parameters are sorted by key (byte-wise) with one entry per key;
//   the last duplicate wins (A47). A parameter without '=' gets an empty
//   value and is written as "key=".
// - Every byte outside the component's allowed set is written as %XX with
//   upper-case hex digits; every byte inside it is written literally, so an
//   unnecessary escape such as %41 canonicalises to 'A'. The allowed sets are
//   those of RFC 3986 as gRPC C-core applies them:
//     unreserved  = A-Z a-z 0-9 - . _ ~
//     sub-delims  = ! $ & ' ( ) * + , ; =
//     authority   = unreserved, sub-delims, : [ ] @
//     type and id = unreserved, sub-delims, : @ /
//     query key and value = unreserved, sub-delims, : @ / ? but not & or =
//   So ' ' becomes %20, '%' becomes %25, '?' in an id becomes %3F, '#'
//   becomes %23, '/' in an authority becomes %2F, and each byte of a UTF-8
//   character is escaped (e.g. "ü" becomes %C3%BC).
//
// Thread-safe: everything here is a pure function of its arguments.
#ifndef FACET_XDS_SERVER_NAMES_NAMES_H_
#define FACET_XDS_SERVER_NAMES_NAMES_H_

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace facet::xds {

// Longest resource name, in bytes, that Facet accepts or produces (old-style
// names as given, xdstp names both as given and in canonical form). Bounds
// the memory a single requested name can pin in a stream's subscription set
// and in the cache; 2 KiB is far above any name a real deployment uses.
inline constexpr std::size_t kMaxResourceNameLength = 2048;

// A parsed xdstp:// resource name (a TP1 URN: no processing directives, no
// glob). Fields hold decoded text.
struct XdstpName {
  // May be empty ("xdstp:///type/id").
  std::string authority;
  // Fully-qualified protobuf message name without the "type.googleapis.com/"
  // prefix, e.g. "envoy.config.listener.v3.Listener". Contains a '.'.
  std::string type;
  // Everything after "<type>/"; may contain '/'; never empty; its last
  // segment is never "*".
  std::string id;
  // Sorted by key, keys unique and non-empty.
  std::vector<std::pair<std::string, std::string>> context_params;

  // Returns the canonical, percent-encoded form (see the file comment).
  // ParseXdstpName(ToString()) returns an equal XdstpName for any value that
  // ParseXdstpName produced or that satisfies the invariants above.
  std::string ToString() const;

  friend bool operator==(const XdstpName&, const XdstpName&) = default;
};

// Returns true if `name` uses the xdstp scheme, i.e. starts with "xdstp:".
// Case-sensitive, like gRPC C-core: "XDSTP://..." is an old-style name.
bool IsXdstpName(absl::string_view name);

// Parses and validates an xdstp:// resource name, decoding percent escapes.
// Besides "xdstp://<authority>/...", accepts "xdstp:/<type>/<id>" as an
// empty authority, because that is how gRPC C-core writes names whose
// authority is empty. Bytes that should have been escaped but were not
// (e.g. a raw space) are accepted as themselves.
// Returns InvalidArgumentError, naming the input and the reason, when the
// name is longer than kMaxResourceNameLength, is not an xdstp name, has no
// "//" authority section, no type, no id, a type without '.', an empty
// "?", an empty context-parameter key, an invalid percent escape (anything
// but '%' followed by two hex digits), a '#' fragment (processing
// directives), a glob ("/*" as the last id segment), or a decoded component
// that is not valid UTF-8 or contains control characters (C0, DEL or C1).
absl::StatusOr<XdstpName> ParseXdstpName(absl::string_view name);

// Builds the canonical xdstp:// name under which a resource declared with an
// authority is served (CRD spec.authority / spec.name / spec.contextParams).
// Inputs are decoded text; the result is percent-encoded.
// - `authority` must be non-empty and must not contain '/', '?', '#' or '@'
//   (signs that a URL or user-info was pasted), '%' (write it decoded), or
//   ASCII whitespace/control characters.
// - `type` is a fully-qualified protobuf message name; a leading
//   "type.googleapis.com/" is stripped.
// - `id` must be non-empty and not a glob; '/' separates segments.
// - Every component must be valid UTF-8 without control characters (C0, DEL
//   or C1; a YAML block scalar's trailing newline is the usual culprit);
//   parameter keys must be non-empty.
// Returns InvalidArgumentError naming the offending field otherwise, or if
// the result would exceed kMaxResourceNameLength.
absl::StatusOr<std::string> BuildXdstpName(
    absl::string_view authority, absl::string_view type, absl::string_view id,
    const std::map<std::string, std::string>& context_params);

// Returns the cache key for a requested resource name: an old-style name
// unchanged, an xdstp name in canonical form. Idempotent. Returns
// InvalidArgumentError for an empty name, one longer than
// kMaxResourceNameLength (before or after canonicalisation), an old-style
// name that is not valid UTF-8 or contains control characters (C0, DEL or
// C1), or an xdstp name that ParseXdstpName rejects.
absl::StatusOr<std::string> NormalizeResourceName(absl::string_view name);

// Returns the length of the UTF-8 sequence at the start of `text` (not
// empty), or 0 if it is not a valid one (overlong forms, surrogates and code
// points above U+10FFFF are invalid, as in RFC 3629).
std::size_t Utf8SequenceLength(absl::string_view text);

// Returns the offset of the first byte of `text` that does not begin a valid
// UTF-8 sequence, or text.size() when all of `text` is valid UTF-8.
std::size_t InvalidUtf8Offset(absl::string_view text);

// Returns why `text` cannot be (part of) a resource name, a constraint key or
// a constraint value Facet serves, or "" if it can: it must be valid UTF-8
// without control characters (C0, DEL or C1). The reason names the byte.
std::string NameTextProblem(absl::string_view text);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_NAMES_NAMES_H_
