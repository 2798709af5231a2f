// Suggestions for misspelt names in error messages ("did you mean ...?").
#ifndef FACET_XDS_SERVER_COMMON_DID_YOU_MEAN_H_
#define FACET_XDS_SERVER_COMMON_DID_YOU_MEAN_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace facet {

// Returns the candidate nearest to `input`, or "" when none is near enough.
// Names are compared without case and without '_' and '-' (so
// `route_config_name` and `routeConfigName` are the same name), by optimal
// string alignment distance (an insertion, deletion, substitution or swap of
// two neighbouring letters is one edit); a candidate is near enough within
// max(1, n / 3) edits, n being the length of the shorter name. Among equally
// near candidates, the one written in `input`'s style (lowerCamel when
// `input` has an upper-case letter, else snake_case) wins, then the first.
// Thread-safe.
std::string NearestName(absl::string_view input, absl::Span<const std::string> candidates);

// Returns `; did you mean "<nearest>"?` for appending to a message, or "".
std::string DidYouMean(absl::string_view input, absl::Span<const std::string> candidates);

}  // namespace facet

#endif  // FACET_XDS_SERVER_COMMON_DID_YOU_MEAN_H_
