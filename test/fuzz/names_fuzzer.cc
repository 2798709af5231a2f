// Fuzzes xdstp name parsing, canonicalisation and building (xds_server/names),
// checking the round trips names.h promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "xds_server/names/names.h"
#include "test/fuzz/fuzz_support.h"

using facet::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace facet::xds;  // NOLINT(google-build-using-namespace)
  absl::string_view input(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<XdstpName> parsed = ParseXdstpName(input);
  Check(!parsed.ok() || IsXdstpName(input));
  if (parsed.ok()) {
    // ParseXdstpName(ToString()) returns an equal name, unless percent-encoding
    // made the canonical form longer than a name may be; such a name is
    // refused wherever it is served or referenced (NormalizeResourceName).
    std::string canonical = parsed->ToString();
    absl::StatusOr<XdstpName> reparsed = ParseXdstpName(canonical);
    Check((reparsed.ok() && *reparsed == *parsed) ||
          (canonical.size() > kMaxResourceNameLength && !NormalizeResourceName(input).ok()));
    Check(canonical.size() <= kMaxResourceNameLength || !NormalizeResourceName(input).ok());

    // Building from the decoded parts gives a name that parses back to them.
    std::map<std::string, std::string> params(parsed->context_params.begin(),
                                              parsed->context_params.end());
    absl::StatusOr<std::string> built =
        BuildXdstpName(parsed->authority, parsed->type, parsed->id, params);
    if (built.ok()) {
      absl::StatusOr<XdstpName> from_built = ParseXdstpName(*built);
      Check(from_built.ok() && from_built->authority == parsed->authority &&
            from_built->type == parsed->type && from_built->id == parsed->id &&
            from_built->context_params == parsed->context_params);
      Check(built->size() <= kMaxResourceNameLength);
    }
  }

  // NormalizeResourceName is idempotent and bounded.
  absl::StatusOr<std::string> normalized = NormalizeResourceName(input);
  if (normalized.ok()) {
    Check(!normalized->empty() && normalized->size() <= kMaxResourceNameLength);
    absl::StatusOr<std::string> again = NormalizeResourceName(*normalized);
    Check(again.ok() && *again == *normalized);
  }
  return 0;
}
