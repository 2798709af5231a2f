#include "xds_server/common/log_text.h"

#include <string>

#include "gtest/gtest.h"

namespace facet::xds {
namespace {

// True when `text` has no byte below 0x20 and no DEL.
bool HasNoControlBytes(const std::string& text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return false;
  }
  return true;
}

TEST(LogTextTest, KeepsPrintableAsciiAndValidUtf8) {
  EXPECT_EQ(EscapeText("client-1 \"quoted\" {x}"), "client-1 \"quoted\" {x}");
  EXPECT_EQ(EscapeText("z\xC3\xBCrich \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\x98\x80"),
            "z\xC3\xBCrich \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\x98\x80");
}

TEST(LogTextTest, EscapesNewlinesAndControls) {
  EXPECT_EQ(EscapeText("a\n[error] forged"), "a\\n[error] forged");
  EXPECT_EQ(EscapeText("\r\t"), "\\r\\t");
  EXPECT_EQ(EscapeText(std::string("\0\x1b[31m\x7f", 7)), "\\x00\\x1b[31m\\x7f");
}

TEST(LogTextTest, EscapesEveryByteOfInvalidUtf8) {
  EXPECT_EQ(EscapeText("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(EscapeText("\xC0\xAF"), "\\xc0\\xaf");              // Overlong '/'.
  EXPECT_EQ(EscapeText("\xED\xA0\x80"), "\\xed\\xa0\\x80");      // A surrogate.
  EXPECT_EQ(EscapeText("\xE6\x9D"), "\\xe6\\x9d");               // Cut short.
  EXPECT_EQ(EscapeText("\xF4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // Above U+10FFFF.
}

TEST(LogTextTest, EscapesInvisibleAndLineBreakingCharacters) {
  EXPECT_EQ(EscapeText("a\xC2\x85" "b"), "a\\u0085b");         // NEL.
  EXPECT_EQ(EscapeText("a\xE2\x80\xA8" "b"), "a\\u2028b");     // Line separator.
  EXPECT_EQ(EscapeText("\xE2\x80\xAE" "gnp.exe"), "\\u202egnp.exe");  // Right-to-left override.
}

TEST(LogTextTest, SafeForLogCutsAtACharacterBoundaryAndNotesTheSize) {
  EXPECT_EQ(SafeForLog("short"), "short");
  const std::string long_text = std::string(200, 'x') + "\n[error] forged";
  const std::string logged = SafeForLog(long_text);
  EXPECT_EQ(logged, std::string(kMaxLoggedBytes, 'x') + "...(215 bytes)");
  // Two-byte characters: the cut never splits one.
  std::string umlauts;
  for (int i = 0; i < 10; ++i) umlauts += "\xC3\xBC";
  EXPECT_EQ(SafeForLog(umlauts, 5), "\xC3\xBC\xC3\xBC...(20 bytes)");
}

TEST(LogTextTest, OutputIsAlwaysOneLineOfValidUtf8) {
  // Every byte value, alone and after a lead byte.
  for (int a = 0; a < 256; ++a) {
    for (int b : {0x0a, 0x80, 0xbf, 0xc3}) {
      const std::string text = {static_cast<char>(a), static_cast<char>(b)};
      const std::string escaped = EscapeText(text);
      ASSERT_TRUE(HasNoControlBytes(escaped)) << a << " " << b;
      // Escaping the output again changes nothing: it is valid UTF-8
      // without controls.
      EXPECT_EQ(EscapeText(escaped), escaped) << a << " " << b;
    }
  }
}

TEST(LogTextTest, Utf8PrefixLengthTreatsInvalidBytesAsSingleCharacters) {
  EXPECT_EQ(Utf8PrefixLength("abc", 10), 3u);
  EXPECT_EQ(Utf8PrefixLength("\xC3\xBC\xC3\xBC", 3), 2u);
  EXPECT_EQ(Utf8PrefixLength("\xff\xff\xff", 2), 2u);
  EXPECT_EQ(Utf8PrefixLength("\xF0\x9F\x98\x80", 3), 0u);
}

}  // namespace
}  // namespace facet::xds
