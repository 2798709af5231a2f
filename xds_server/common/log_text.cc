#include "xds_server/common/log_text.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace facet::xds {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// Returns the length of the well-formed UTF-8 sequence starting at text[i]
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or 0,
// and its code point.
size_t DecodeUtf8(absl::string_view text, size_t i, uint32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  size_t length = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  } else if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, cp = lead & 0x1F, min = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, cp = lead & 0x0F, min = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *code_point = cp;
  return length;
}

// Code points that can move or hide text on a terminal or in a viewer.
bool IsInvisibleControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) ||      // C1 controls (NEL is a newline).
         cp == 0x2028 || cp == 0x2029 ||    // Line and paragraph separators.
         cp == 0x200E || cp == 0x200F ||    // Left-to-right and right-to-left marks.
         (cp >= 0x202A && cp <= 0x202E) ||  // Bidirectional embeddings and overrides.
         (cp >= 0x2066 && cp <= 0x2069);    // Bidirectional isolates.
}

void AppendHexByte(uint8_t byte, std::string* out) {
  out->append("\\x");
  out->push_back(kHex[byte >> 4]);
  out->push_back(kHex[byte & 0xF]);
}

}  // namespace

size_t Utf8PrefixLength(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  size_t i = 0;
  while (i < max_bytes) {
    uint32_t cp = 0;
    const size_t length = DecodeUtf8(text, i, &cp);
    const size_t step = length == 0 ? 1 : length;  // An invalid byte stands alone.
    if (i + step > max_bytes) break;
    i += step;
  }
  return i;
}

std::string EscapeText(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t length = DecodeUtf8(text, i, &cp);
    if (length == 0) {
      AppendHexByte(static_cast<uint8_t>(text[i]), &out);
      ++i;
      continue;
    }
    if (cp == '\n') {
      out.append("\\n");
    } else if (cp == '\r') {
      out.append("\\r");
    } else if (cp == '\t') {
      out.append("\\t");
    } else if (cp < 0x20 || cp == 0x7F) {
      AppendHexByte(static_cast<uint8_t>(cp), &out);
    } else if (IsInvisibleControl(cp)) {
      out.append("\\u");
      for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(cp >> shift) & 0xF]);
    } else {
      out.append(text.data() + i, length);
    }
    i += length;
  }
  return out;
}

std::string SafeForLog(absl::string_view text, size_t max_bytes) {
  const size_t kept = Utf8PrefixLength(text, max_bytes);
  if (kept == text.size()) return EscapeText(text);
  return absl::StrCat(EscapeText(text.substr(0, kept)), "...(", text.size(), " bytes)");
}

}  // namespace facet::xds
