#include "xds_server/snapshot/builder.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>
#include <tuple>

#include "xds_server/snapshot/incremental_builder.h"
#include "xds_server/snapshot/validation.h"

namespace facet::xds {

bool operator==(const ObjectStatus& a, const ObjectStatus& b) {
  if (!(std::tie(a.ref, a.generation, a.location, a.served_name, a.accepted, a.serving_previous,
                 a.findings) == std::tie(b.ref, b.generation, b.location, b.served_name,
                                         b.accepted, b.serving_previous, b.findings))) {
    return false;
  }
  if (a.variants.size() != b.variants.size()) return false;
  for (size_t i = 0; i < a.variants.size(); ++i) {
    if (a.variants[i]->version != b.variants[i]->version) return false;
  }
  return true;
}

bool ObjectStatus::has_errors() const { return internal::HasErrors(findings); }

BuildResult BuildSnapshot(absl::Span<const ResourceObject> resources,
                          absl::Span<const AuthorityObject> authorities, const Snapshot* previous,
                          const BuildOptions& options) {
  IncrementalBuilder builder(options);
  builder.SeedFallbacks(previous);
  for (const AuthorityObject& object : authorities) builder.Upsert(object);
  for (const ResourceObject& object : resources) builder.Upsert(object);
  // A whole set is decided in full.
  IncrementalBuilder::Result built = builder.BuildUntilDecided();
  BuildResult result;
  std::vector<std::shared_ptr<const ServedResource>> served;
  for (const ResourceType* type : AllResourceTypes()) {
    for (const auto& [name, resource] : built.snapshot->resources(*type)) served.push_back(resource);
  }
  // Relative to `previous`, so its changes() say what differs from it.
  result.snapshot =
      std::make_shared<const Snapshot>(std::move(served), previous, built.snapshot->shared_access());
  for (const auto& status : builder.Statuses()) result.statuses.push_back(*status);
  return result;
}

namespace {

// CausesFirst over `statuses`, none null.
std::vector<const ObjectStatus*> CausesFirstOf(absl::Span<const ObjectStatus* const> statuses) {
  // Made at the first cause met: most reports have none.
  std::map<ObjectRef, size_t> index;
  auto find = [&](const ObjectRef& ref) -> std::optional<size_t> {
    if (index.empty()) {
      for (size_t i = 0; i < statuses.size(); ++i) index.emplace(statuses[i]->ref, i);
    }
    auto it = index.find(ref);
    if (it == index.end()) return std::nullopt;
    return it->second;
  };
  std::vector<const ObjectStatus*> out;
  out.reserve(statuses.size());
  std::vector<bool> placed(statuses.size(), false);
  // Depth-first, causes before the objects they affect; an explicit stack,
  // as reference chains may be long.
  std::vector<std::pair<size_t, size_t>> stack;  // (status, next finding)
  for (size_t start = 0; start < statuses.size(); ++start) {
    if (placed[start]) continue;
    placed[start] = true;
    stack.emplace_back(start, 0);
    while (!stack.empty()) {
      auto& [current, next] = stack.back();
      const std::vector<Finding>& findings = statuses[current]->findings;
      if (next == findings.size()) {
        out.push_back(statuses[current]);
        stack.pop_back();
        continue;
      }
      const Finding& finding = findings[next++];
      if (!finding.cause) continue;
      const std::optional<size_t> cause = find(*finding.cause);
      if (!cause.has_value() || placed[*cause]) continue;
      placed[*cause] = true;
      stack.emplace_back(*cause, 0);
    }
  }
  return out;
}

}  // namespace

std::vector<const ObjectStatus*> CausesFirst(absl::Span<const ObjectStatus> statuses) {
  std::vector<const ObjectStatus*> pointers;
  pointers.reserve(statuses.size());
  for (const ObjectStatus& status : statuses) pointers.push_back(&status);
  return CausesFirstOf(pointers);
}

std::vector<const ObjectStatus*> CausesFirst(
    absl::Span<const std::shared_ptr<const ObjectStatus>> statuses) {
  std::vector<const ObjectStatus*> pointers;
  pointers.reserve(statuses.size());
  for (const auto& status : statuses) pointers.push_back(status.get());
  return CausesFirstOf(pointers);
}

}  // namespace facet::xds
