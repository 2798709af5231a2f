#include "xds_server/common/digest.h"

#include <cstring>

#include "absl/strings/str_cat.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack.
#include <xxhash.h>

namespace facet::xds {
namespace {

// Feeds `data` to a 64-bit or 128-bit XXH3 state.
template <int kBits>
void Update(XXH3_state_t* state, const void* data, size_t size) {
  if constexpr (kBits == 64) {
    XXH3_64bits_update(state, data, size);
  } else {
    XXH3_128bits_update(state, data, size);
  }
}

// Writes `value` as 8 bytes, least significant first (the same on every
// CPU), at `out`, and returns the byte after them.
unsigned char* LayOutNumber(uint64_t value, unsigned char* out) {
  for (int i = 0; i < 8; ++i, value >>= 8) *out++ = static_cast<unsigned char>(value & 0xff);
  return out;
}

// Feeds `value` laid out as above.
template <int kBits>
void UpdateNumber(XXH3_state_t* state, uint64_t value) {
  unsigned char bytes[8];
  LayOutNumber(value, bytes);
  Update<kBits>(state, bytes, sizeof(bytes));
}

template <int kBits>
void UpdateField(XXH3_state_t* state, absl::string_view data) {
  UpdateNumber<kBits>(state, data.size());
  Update<kBits>(state, data.data(), data.size());
}

}  // namespace

std::string Digest128::ToHex() const { return absl::StrCat(DigestHex(high), DigestHex(low)); }

uint64_t Digest64(absl::string_view data) { return XXH3_64bits(data.data(), data.size()); }

Digest128 Digest128Of(absl::string_view data) {
  const XXH128_hash_t hash = XXH3_128bits(data.data(), data.size());
  return {hash.high64, hash.low64};
}

std::string DigestHex(uint64_t digest) { return absl::StrCat(absl::Hex(digest, absl::kZeroPad16)); }

std::string DigestHex(absl::string_view data) { return DigestHex(Digest64(data)); }

uint64_t Digest64OfParts(std::initializer_list<absl::string_view> parts) {
  // Nearly every call digests a name and a short key: laid out as the
  // stream below would see them and digested in one call, which XXH3 defines
  // to give the stream's digest, without setting up its 576-byte state.
  constexpr size_t kOneCallBytes = 256;
  size_t total = 0;
  for (absl::string_view part : parts) total += 8 + part.size();
  if (total <= kOneCallBytes) {
    unsigned char input[kOneCallBytes];
    unsigned char* out = input;
    for (absl::string_view part : parts) {
      out = LayOutNumber(part.size(), out);
      if (!part.empty()) std::memcpy(out, part.data(), part.size());
      out += part.size();
    }
    return XXH3_64bits(input, total);
  }
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  for (absl::string_view part : parts) UpdateField<64>(&state, part);
  return XXH3_64bits_digest(&state);
}

template <int kBits>
DigestStream<kBits>::DigestStream() : state_(XXH3_createState()) {
  auto* state = static_cast<XXH3_state_t*>(state_);
  if constexpr (kBits == 64) {
    XXH3_64bits_reset(state);
  } else {
    XXH3_128bits_reset(state);
  }
}

template <int kBits>
DigestStream<kBits>::~DigestStream() {
  XXH3_freeState(static_cast<XXH3_state_t*>(state_));
}

template <int kBits>
DigestStream<kBits>& DigestStream<kBits>::Add(absl::string_view data) {
  Update<kBits>(static_cast<XXH3_state_t*>(state_), data.data(), data.size());
  return *this;
}

template <int kBits>
DigestStream<kBits>& DigestStream<kBits>::AddField(absl::string_view data) {
  UpdateField<kBits>(static_cast<XXH3_state_t*>(state_), data);
  return *this;
}

template <int kBits>
DigestStream<kBits>& DigestStream<kBits>::AddNumber(uint64_t value) {
  UpdateNumber<kBits>(static_cast<XXH3_state_t*>(state_), value);
  return *this;
}

template <int kBits>
std::conditional_t<kBits == 64, uint64_t, Digest128> DigestStream<kBits>::Finish() const {
  const auto* state = static_cast<const XXH3_state_t*>(state_);
  if constexpr (kBits == 64) {
    return XXH3_64bits_digest(state);
  } else {
    const XXH128_hash_t hash = XXH3_128bits_digest(state);
    return Digest128{hash.high64, hash.low64};
  }
}

template class DigestStream<64>;
template class DigestStream<128>;

}  // namespace facet::xds
