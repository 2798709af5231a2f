#include "xds_server/names/names.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "xds_server/common/status_macros.h"

namespace facet::xds {
namespace {

constexpr absl::string_view kScheme = "xdstp:";
constexpr absl::string_view kTypeUrlPrefix = "type.googleapis.com/";

// Which URI components may hold a byte literally; see the file comment in
// names.h. Mirrors IsAuthorityChar, IsPathChar and IsQueryKeyOrValueChar in
// gRPC C-core's src/core/lib/uri/uri_parser.cc.
enum CharClass : uint8_t {
  kAuthorityChar = 1 << 0,
  kPathChar = 1 << 1,
  kQueryChar = 1 << 2,
};

constexpr std::array<uint8_t, 256> MakeCharClasses() {
  std::array<uint8_t, 256> classes{};
  constexpr uint8_t kAll = kAuthorityChar | kPathChar | kQueryChar;
  for (int c = 'A'; c <= 'Z'; ++c) classes[c] = kAll;
  for (int c = 'a'; c <= 'z'; ++c) classes[c] = kAll;
  for (int c = '0'; c <= '9'; ++c) classes[c] = kAll;
  for (char c : absl::string_view("-._~")) classes[static_cast<uint8_t>(c)] = kAll;  // unreserved
  for (char c : absl::string_view("!$'()*+,;")) classes[static_cast<uint8_t>(c)] = kAll;
  // The sub-delims '&' and '=' separate query parameters.
  classes['&'] = kAuthorityChar | kPathChar;
  classes['='] = kAuthorityChar | kPathChar;
  classes[':'] = kAll;
  classes['@'] = kAll;
  classes['['] = kAuthorityChar;
  classes[']'] = kAuthorityChar;
  classes['/'] = kPathChar | kQueryChar;
  classes['?'] = kQueryChar;
  return classes;
}

constexpr std::array<uint8_t, 256> kCharClasses = MakeCharClasses();

void AppendEncoded(absl::string_view text, CharClass allowed, std::string* out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char c : text) {
    const auto byte = static_cast<uint8_t>(c);
    if (kCharClasses[byte] & allowed) {
      out->push_back(c);
    } else {
      out->push_back('%');
      out->push_back(kHex[byte >> 4]);
      out->push_back(kHex[byte & 0xF]);
    }
  }
}

// Upper bound of AppendEncoded's output size, for reserve().
std::size_t MaxEncodedSize(absl::string_view text) { return 3 * text.size(); }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Quotes a user-supplied name for an error message: C-escaped so control
// bytes stay visible, and shortened if it is very long.
std::string Quote(absl::string_view text) {
  constexpr std::size_t kShown = 160;
  if (text.size() <= kShown) return absl::StrCat("\"", absl::CHexEscape(text), "\"");
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, kShown)), "\"... (truncated)");
}

absl::Status InvalidName(absl::string_view name, absl::string_view reason) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid xDS resource name ", Quote(name), ": ", reason));
}

absl::Status TooLong(absl::string_view name, std::size_t size, absl::string_view what) {
  return InvalidName(
      name, absl::StrCat(what, size, " bytes; the limit is ", kMaxResourceNameLength, " bytes"));
}

// Decodes %XX escapes in `raw` (the `component` part of `name`) into `out`.
// Rejects a '%' not followed by two hex digits instead of passing it through
// as gRPC C-core does, so that a typo cannot silently name another resource.
absl::Status PercentDecode(absl::string_view name, absl::string_view raw,
                           absl::string_view component, std::string* out) {
  out->clear();
  out->reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '%') {
      out->push_back(raw[i]);
      continue;
    }
    const int high = i + 1 < raw.size() ? HexValue(raw[i + 1]) : -1;
    const int low = i + 2 < raw.size() ? HexValue(raw[i + 2]) : -1;
    if (high < 0 || low < 0) {
      return InvalidName(
          name, absl::StrCat("invalid percent escape ", Quote(raw.substr(i, 3)), " in the ",
                             component, "; '%' must be followed by two hex digits (write %25 ",
                             "for a literal '%')"));
    }
    out->push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return absl::OkStatus();
}

bool IsGlob(absl::string_view id) { return id == "*" || absl::EndsWith(id, "/*"); }

// Sorts by key and keeps the last value of each duplicated key (A47).
void CanonicaliseContextParams(std::vector<std::pair<std::string, std::string>>* params) {
  std::stable_sort(params->begin(), params->end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  auto out = params->begin();
  for (auto it = params->begin(); it != params->end();) {
    auto next = std::next(it);
    while (next != params->end() && next->first == it->first) ++next;
    auto last = std::prev(next);
    if (out != last) *out = std::move(*last);
    ++out;
    it = next;
  }
  params->erase(out, params->end());
}

absl::Status ParseContextParams(absl::string_view name, absl::string_view raw_query,
                                std::vector<std::pair<std::string, std::string>>* params) {
  if (raw_query.empty()) {
    return InvalidName(name, "has a '?' with no context parameters after it; remove the '?'");
  }
  for (absl::string_view piece : absl::StrSplit(raw_query, '&')) {
    const std::size_t eq = piece.find('=');
    const absl::string_view raw_key = piece.substr(0, eq);
    const absl::string_view raw_value =
        eq == absl::string_view::npos ? absl::string_view() : piece.substr(eq + 1);
    if (raw_key.empty()) {
      return InvalidName(name,
                         "has a context parameter with an empty key (look for '&&', a "
                         "trailing '&', or '=value' without a key)");
    }
    std::pair<std::string, std::string>& param = params->emplace_back();
    RETURN_IF_ERROR(PercentDecode(name, raw_key, "context parameter key", &param.first));
    RETURN_IF_ERROR(PercentDecode(name, raw_value, "context parameter value", &param.second));
  }
  CanonicaliseContextParams(params);
  return absl::OkStatus();
}

// True for a fully-qualified protobuf message name: dot-separated
// identifiers, at least two of them.
bool IsProtoFullName(absl::string_view type) {
  if (type.find('.') == absl::string_view::npos) return false;
  for (absl::string_view part : absl::StrSplit(type, '.')) {
    if (part.empty() || absl::ascii_isdigit(static_cast<unsigned char>(part[0]))) return false;
    for (char c : part) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    }
  }
  return true;
}

absl::Status InvalidBuildField(absl::string_view field, absl::string_view value,
                               absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat("cannot build an xdstp:// resource name: ", field,
                                                 " ", Quote(value), " ", reason));
}

}  // namespace

std::size_t Utf8SequenceLength(absl::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char first = byte(0);
  if (first < 0x80) return 1;
  std::size_t length;
  unsigned char low = 0x80, high = 0xBF;  // Allowed range of the second byte.
  if (first >= 0xC2 && first <= 0xDF) {
    length = 2;
  } else if (first >= 0xE0 && first <= 0xEF) {
    length = 3;
    if (first == 0xE0) low = 0xA0;
    if (first == 0xED) high = 0x9F;
  } else if (first >= 0xF0 && first <= 0xF4) {
    length = 4;
    if (first == 0xF0) low = 0x90;
    if (first == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

std::string NameTextProblem(absl::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = Utf8SequenceLength(text.substr(i));
    if (length == 0) return absl::StrCat("is not valid UTF-8 (at byte ", i, ")");
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const bool c1 = length == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0;
    if (absl::ascii_iscntrl(c) || c1) {
      return absl::StrCat("contains control characters (at byte ", i, ")");
    }
    i += length;
  }
  return "";
}

std::size_t InvalidUtf8Offset(absl::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = Utf8SequenceLength(text.substr(i));
    if (length == 0) return i;
    i += length;
  }
  return text.size();
}

std::string XdstpName::ToString() const {
  std::size_t size =
      kScheme.size() + 3 + MaxEncodedSize(authority) + MaxEncodedSize(type) + MaxEncodedSize(id);
  for (const auto& [key, value] : context_params) {
    size += 2 + MaxEncodedSize(key) + MaxEncodedSize(value);
  }
  std::string out;
  out.reserve(size);
  out.append(kScheme.data(), kScheme.size());
  out.append("//");
  AppendEncoded(authority, kAuthorityChar, &out);
  out.push_back('/');
  AppendEncoded(type, kPathChar, &out);
  out.push_back('/');
  AppendEncoded(id, kPathChar, &out);
  char separator = '?';
  for (const auto& [key, value] : context_params) {
    out.push_back(separator);
    separator = '&';
    AppendEncoded(key, kQueryChar, &out);
    out.push_back('=');
    AppendEncoded(value, kQueryChar, &out);
  }
  return out;
}

bool IsXdstpName(absl::string_view name) { return absl::StartsWith(name, kScheme); }

absl::StatusOr<XdstpName> ParseXdstpName(absl::string_view name) {
  if (name.size() > kMaxResourceNameLength) return TooLong(name, name.size(), "is ");
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, kScheme)) {
    return InvalidName(name, "not an xdstp name; expected \"xdstp://<authority>/<type>/<id>\"");
  }
  // Checked first: TP1 URLs with #alt=/#entry= are the likeliest source of a
  // '#', and the other checks would give a less helpful message.
  if (absl::StrContains(rest, '#')) {
    return InvalidName(name,
                       "has a '#' fragment, but processing directives (#alt=, #entry=) are "
                       "not supported in resource names; remove everything from '#' on");
  }
  absl::string_view raw_authority;
  if (absl::ConsumePrefix(&rest, "//")) {
    raw_authority = rest.substr(0, rest.find_first_of("/?"));
    rest.remove_prefix(raw_authority.size());
  } else if (!absl::StartsWith(rest, "/")) {
    // "xdstp:/<type>/<id>" (no "//") is gRPC C-core's spelling of an empty
    // authority, so only a missing "/" altogether is an error.
    return InvalidName(name,
                       "has no authority section; expected \"xdstp://<authority>/<type>/<id>\" "
                       "(\"xdstp:///<type>/<id>\" for an empty authority)");
  }
  const std::size_t query_start = rest.find('?');
  const absl::string_view raw_path = rest.substr(0, query_start);

  XdstpName parsed;
  RETURN_IF_ERROR(PercentDecode(name, raw_authority, "authority", &parsed.authority));
  // Like gRPC C-core, decode the whole path before splitting it, so "%2F"
  // separates segments exactly as '/' does.
  std::string path;
  RETURN_IF_ERROR(PercentDecode(name, raw_path, "path", &path));
  absl::string_view type_and_id = path;
  absl::ConsumePrefix(&type_and_id, "/");
  const std::size_t slash = type_and_id.find('/');
  const absl::string_view type = type_and_id.substr(0, slash);
  if (type.empty()) {
    return InvalidName(name, "has no resource type; expected \"xdstp://<authority>/<type>/<id>\"");
  }
  if (type.find('.') == absl::string_view::npos) {
    return InvalidName(name, absl::StrCat("resource type ", Quote(type),
                                          " is not a fully-qualified protobuf message name "
                                          "such as \"envoy.config.listener.v3.Listener\""));
  }
  if (slash == absl::string_view::npos || slash + 1 == type_and_id.size()) {
    return InvalidName(name,
                       "has no resource id after the type; expected "
                       "\"xdstp://<authority>/<type>/<id>\"");
  }
  const absl::string_view id = type_and_id.substr(slash + 1);
  if (IsGlob(id)) {
    return InvalidName(name,
                       "ends in \"/*\", but glob collections are not supported; request "
                       "each resource by its own name");
  }
  parsed.type = std::string(type);
  parsed.id = std::string(id);
  if (query_start != absl::string_view::npos) {
    RETURN_IF_ERROR(ParseContextParams(name, rest.substr(query_start + 1), &parsed.context_params));
  }
  auto check = [&](absl::string_view component, absl::string_view decoded) -> absl::Status {
    const std::string problem = NameTextProblem(decoded);
    if (problem.empty()) return absl::OkStatus();
    return InvalidName(name, absl::StrCat("the ", component, " ", Quote(decoded), " (decoded) ",
                                          problem));
  };
  RETURN_IF_ERROR(check("authority", parsed.authority));
  RETURN_IF_ERROR(check("resource type", parsed.type));
  RETURN_IF_ERROR(check("resource id", parsed.id));
  for (const auto& [key, value] : parsed.context_params) {
    RETURN_IF_ERROR(check("context parameter key", key));
    RETURN_IF_ERROR(check(absl::StrCat("value of context parameter ", Quote(key)), value));
  }
  return parsed;
}

absl::StatusOr<std::string> BuildXdstpName(
    absl::string_view authority, absl::string_view type, absl::string_view id,
    const std::map<std::string, std::string>& context_params) {
  if (authority.empty()) {
    return InvalidBuildField("authority", authority, "is empty");
  }
  if (const std::size_t bad = authority.find_first_of("/?#@%"); bad != absl::string_view::npos) {
    return InvalidBuildField(
        "authority", authority,
        absl::StrCat("contains '", authority.substr(bad, 1),
                     "'; give just the authority name (e.g. \"xds.example.com\"), unencoded"));
  }
  if (std::any_of(authority.begin(), authority.end(), [](char c) {
        return absl::ascii_isspace(static_cast<unsigned char>(c)) ||
               absl::ascii_iscntrl(static_cast<unsigned char>(c));
      })) {
    return InvalidBuildField("authority", authority, "contains whitespace or control characters");
  }
  if (std::string problem = NameTextProblem(authority); !problem.empty()) {
    return InvalidBuildField("authority", authority, problem);
  }
  absl::ConsumePrefix(&type, kTypeUrlPrefix);
  if (!IsProtoFullName(type)) {
    return InvalidBuildField("type", type,
                             "is not a fully-qualified protobuf message name such as "
                             "\"envoy.config.listener.v3.Listener\"");
  }
  if (id.empty()) return InvalidBuildField("id", id, "is empty");
  if (IsGlob(id)) {
    return InvalidBuildField("id", id, "ends in \"/*\", but glob collections are not supported");
  }
  if (std::string problem = NameTextProblem(id); !problem.empty()) {
    return InvalidBuildField(
        "id", id,
        absl::StrCat(problem, absl::StrContains(problem, "control") ? "; a trailing newline?" : ""));
  }
  XdstpName name;
  name.authority = std::string(authority);
  name.type = std::string(type);
  name.id = std::string(id);
  name.context_params.reserve(context_params.size());
  // std::map iterates in byte-wise key order, which is the canonical order.
  for (const auto& [key, value] : context_params) {
    if (key.empty()) {
      return InvalidBuildField("context parameter key", key, "is empty");
    }
    if (std::string problem = NameTextProblem(key); !problem.empty()) {
      return InvalidBuildField("context parameter key", key, problem);
    }
    if (std::string problem = NameTextProblem(value); !problem.empty()) {
      return InvalidBuildField(absl::StrCat("value of context parameter \"", key, "\""), value,
                               problem);
    }
    name.context_params.emplace_back(key, value);
  }
  std::string result = name.ToString();
  if (result.size() > kMaxResourceNameLength) {
    return TooLong(result, result.size(), "would be ");
  }
  return result;
}

absl::StatusOr<std::string> NormalizeResourceName(absl::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError("invalid xDS resource name: the name is empty");
  }
  if (name.size() > kMaxResourceNameLength) return TooLong(name, name.size(), "is ");
  if (!IsXdstpName(name)) {
    if (std::string problem = NameTextProblem(name); !problem.empty()) {
      return InvalidName(name, problem);
    }
    return std::string(name);
  }
  ASSIGN_OR_RETURN(const XdstpName parsed, ParseXdstpName(name));
  std::string canonical = parsed.ToString();
  // Only a name with unescaped bytes can grow; rejecting it keeps
  // NormalizeResourceName idempotent.
  if (canonical.size() > kMaxResourceNameLength) {
    return TooLong(name, canonical.size(), "percent-encodes to ");
  }
  return canonical;
}

}  // namespace facet::xds
