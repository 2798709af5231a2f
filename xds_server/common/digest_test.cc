#include "xds_server/common/digest.h"

#include <string>

#include "gtest/gtest.h"

namespace facet::xds {
namespace {

TEST(DigestTest, MatchesXxh3ReferenceValues) {
  // xxHash's own test vectors for the empty input (seed 0): the digests are
  // XXH3's, not a variation of it, and do not depend on the machine.
  EXPECT_EQ(Digest64(""), 0x2D06800538D394C2u);
  EXPECT_EQ(DigestHex(absl::string_view()), "2d06800538d394c2");
  const Digest128 empty = Digest128Of("");
  EXPECT_EQ(empty.high, 0x99AA06D3014798D8u);
  EXPECT_EQ(empty.low, 0x6001C324468D497Fu);
  EXPECT_EQ(empty.ToHex(), "99aa06d3014798d86001c324468d497f");
}

TEST(DigestTest, HexIsSixteenDigitsMostSignificantFirst) {
  EXPECT_EQ(DigestHex(uint64_t{0x1f}), "000000000000001f");
  EXPECT_EQ(DigestHex(~uint64_t{0}), "ffffffffffffffff");
  EXPECT_EQ(DigestHex("content"), DigestHex(Digest64("content")));
}

TEST(DigestTest, StreamEqualsDigestOfTheConcatenation) {
  const std::string big(10'000, 'x');  // Past XXH3's internal block size.
  DigestStream<64> s64;
  s64.Add("type").Add("\n").Add(big);
  EXPECT_EQ(s64.Finish(), Digest64("type\n" + big));
  DigestStream<128> s128;
  s128.Add("type").Add("\n").Add(big);
  EXPECT_EQ(s128.Finish(), Digest128Of("type\n" + big));
}

TEST(DigestTest, FieldsDoNotRunIntoEachOther) {
  EXPECT_NE(Digest64OfParts({"ab", "c"}), Digest64OfParts({"a", "bc"}));
  EXPECT_NE(Digest64OfParts({"a", ""}), Digest64OfParts({"", "a"}));
  EXPECT_EQ(Digest64OfParts({"name", "key"}), Digest64OfParts({"name", "key"}));
  DigestStream<128> a, b;
  a.AddField("ab").AddField("c");
  b.AddField("a").AddField("bc");
  EXPECT_NE(a.Finish(), b.Finish());
  DigestStream<64> c;
  c.AddField("name").AddField("key");
  EXPECT_EQ(c.Finish(), Digest64OfParts({"name", "key"}));
}

TEST(DigestTest, PartsGiveTheStreamedDigestAtEverySize) {
  // Short lists of parts (up to 256 bytes laid out) are digested in one
  // call, long ones streamed: both give the digest of the length-prefixed
  // fields. One part of 248 and 249 bytes lays out 256 and 257; two parts
  // of 179 and 180 (and a key a third as long) 255 and 257; 232 and 233 fall
  // either side of XXH3's own 240-byte split.
  for (size_t size : {0, 1, 7, 100, 179, 180, 232, 233, 248, 249, 1000, 5000}) {
    const std::string name(size, 'n');
    const std::string key = "P" + std::string(size / 3, 'k');
    DigestStream<64> stream;
    stream.AddField(name).AddField(key);
    EXPECT_EQ(Digest64OfParts({name, key}), stream.Finish()) << size;
    DigestStream<64> one;
    one.AddField(name);
    EXPECT_EQ(Digest64OfParts({name}), one.Finish()) << size;
  }
  // The digests are those of the layout: each part's length (8 bytes, least
  // significant first), then the part.
  EXPECT_EQ(Digest64OfParts({"ab"}), Digest64(absl::string_view("\x02\0\0\0\0\0\0\0ab", 10)));
}

TEST(DigestTest, NumbersAreDigestedLeastSignificantByteFirst) {
  DigestStream<64> number;
  number.AddNumber(0x0102030405060708u);
  EXPECT_EQ(number.Finish(), Digest64(absl::string_view("\x08\x07\x06\x05\x04\x03\x02\x01", 8)));
}

TEST(DigestTest, DifferentContentDifferentDigests) {
  EXPECT_NE(Digest64("route v1"), Digest64("route v2"));
  EXPECT_NE(Digest128Of("route v1"), Digest128Of("route v2"));
}

}  // namespace
}  // namespace facet::xds
