// Facet's one content digest: xxHash's XXH3 (libxxhash), 64 and 128 bits.
// Every version, revision name and change check derived from content uses
// these functions, so that equal content gives equal digests on every
// replica, build and machine (XXH3's output is fixed by its specification,
// whatever the CPU). Not a cryptographic hash: it identifies content that
// its writers control, it does not authenticate it.
#ifndef FACET_XDS_SERVER_COMMON_DIGEST_H_
#define FACET_XDS_SERVER_COMMON_DIGEST_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace facet::xds {

// A 128-bit digest: for equality checks where a collision would hide a
// change (an edit taken for the content already held).
struct Digest128 {
  uint64_t high = 0;
  uint64_t low = 0;

  // Returns the 32 hex digits of the digest (high half first).
  std::string ToHex() const;

  friend bool operator==(const Digest128& a, const Digest128& b) {
    return a.high == b.high && a.low == b.low;
  }
  friend bool operator!=(const Digest128& a, const Digest128& b) { return !(a == b); }
};

// Returns XXH3_64bits of `data`. Sums of these (mod 2^64) digest a set
// independently of its order.
uint64_t Digest64(absl::string_view data);

// Returns XXH3_128bits of `data`.
Digest128 Digest128Of(absl::string_view data);

// Returns `digest` as 16 lower-case hex digits, most significant first (as
// `xxhsum -H3` prints XXH3_64bits).
std::string DigestHex(uint64_t digest);

// Returns DigestHex(Digest64(data)).
std::string DigestHex(absl::string_view data);

// Returns Digest64 of `parts`, each length-prefixed so that no two
// different lists of parts have the same input. Allocates nothing.
uint64_t Digest64OfParts(std::initializer_list<absl::string_view> parts);

// Digests data given in pieces without joining it first. Kbits is 64 or
// 128; Finish() gives what Digest64 / Digest128Of give for the
// concatenation of everything added. Not thread-safe; one per digest.
template <int kBits>
class DigestStream {
 public:
  DigestStream();
  ~DigestStream();
  DigestStream(const DigestStream&) = delete;
  DigestStream& operator=(const DigestStream&) = delete;

  // Appends `data` as is.
  DigestStream& Add(absl::string_view data);
  // Appends `data` prefixed by its length, so that consecutive fields cannot
  // run into each other ("ab","c" differs from "a","bc").
  DigestStream& AddField(absl::string_view data);
  // Appends a number (its 8 bytes, little-endian).
  DigestStream& AddNumber(uint64_t value);

  // Returns the digest of what was added (the stream may go on).
  std::conditional_t<kBits == 64, uint64_t, Digest128> Finish() const;

 private:
  void* state_;  // An XXH3_state_t.
};

extern template class DigestStream<64>;
extern template class DigestStream<128>;

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_COMMON_DIGEST_H_
