#include "xds_server/common/did_you_mean.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace facet {
namespace {

// Longer names are never compared: a bound on the quadratic distance.
constexpr size_t kMaxLength = 256;

std::string Normalize(absl::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c != '_' && c != '-') out.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool HasUpper(absl::string_view name) {
  return std::any_of(name.begin(), name.end(),
                     [](char c) { return absl::ascii_isupper(static_cast<unsigned char>(c)); });
}

// Optimal string alignment distance between `a` and `b`, or a value above
// `limit` once it is certain to exceed it.
size_t Distance(const std::string& a, const std::string& b, size_t limit) {
  const size_t n = a.size(), m = b.size();
  if ((n > m ? n - m : m - n) > limit) return limit + 1;
  std::vector<size_t> before(m + 1), previous(m + 1), current(m + 1);
  for (size_t j = 0; j <= m; ++j) previous[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    current[0] = i;
    size_t row_min = current[0];
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
      row_min = std::min(row_min, current[j]);
    }
    if (row_min > limit) return limit + 1;
    before.swap(previous);
    previous.swap(current);
  }
  return previous[m];
}

}  // namespace

std::string NearestName(absl::string_view input, absl::Span<const std::string> candidates) {
  if (input.empty() || input.size() > kMaxLength) return "";
  const std::string wanted = Normalize(input);
  const bool camel = HasUpper(input);
  const std::string* best = nullptr;
  std::tuple<size_t, bool> best_score{std::numeric_limits<size_t>::max(), true};
  for (const std::string& candidate : candidates) {
    if (candidate.empty() || candidate.size() > kMaxLength) continue;
    const std::string normalized = Normalize(candidate);
    const size_t limit = std::max<size_t>(1, std::min(wanted.size(), normalized.size()) / 3);
    const size_t distance = Distance(wanted, normalized, limit);
    if (distance > limit) continue;
    const bool other_style =
        camel ? candidate.find('_') != std::string::npos : HasUpper(candidate);
    const std::tuple<size_t, bool> score{distance, other_style};
    if (best == nullptr || score < best_score) {
      best = &candidate;
      best_score = score;
    }
  }
  return best == nullptr ? "" : *best;
}

std::string DidYouMean(absl::string_view input, absl::Span<const std::string> candidates) {
  const std::string nearest = NearestName(input, candidates);
  if (nearest.empty()) return "";
  return absl::StrCat("; did you mean \"", nearest, "\"?");
}

}  // namespace facet
