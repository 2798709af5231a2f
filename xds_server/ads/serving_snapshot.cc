#include "xds_server/ads/serving_snapshot.h"

#include "absl/strings/str_cat.h"

namespace facet::xds {

ServingSnapshot::ServingSnapshot(std::shared_ptr<const Snapshot> snapshot)
    : snapshot_(std::move(snapshot)) {}

std::shared_ptr<const Variant> ServingSnapshot::Select(const ServedResource& resource,
                                                       const Parameters& params) const {
  if (resource.variants.size() == 1 && resource.variants[0]->constraints.unconstrained()) {
    return resource.variants[0];
  }
  {
    absl::MutexLock lock(&mu_);
    auto outer = memo_.find(&resource);
    if (outer != memo_.end()) {
      auto inner = outer->second.find(params.canonical);
      if (inner != outer->second.end()) {
        return inner->second < 0 ? nullptr : resource.variants[inner->second];
      }
    }
  }
  int index = -1;
  for (size_t i = 0; i < resource.variants.size(); ++i) {
    if (resource.variants[i]->constraints.Matches(params.params)) {
      index = static_cast<int>(i);
      break;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    auto& memo = memo_[&resource];
    // Bounded: beyond this many distinct parameter sets per resource, select
    // without remembering (clients choose their parameters).
    if (memo.size() < kMaxMemoizedParameterSets) memo[params.canonical] = index;
  }
  return index < 0 ? nullptr : resource.variants[index];
}

bool ServingSnapshot::Unknown(const ServedResource* resource, const Parameters& params) const {
  if (!snapshot_->partial()) return false;
  if (resource == nullptr) return true;
  if (resource->resolution == nullptr) return false;
  return Select(*resource, params) == nullptr && !resource->resolution->Knows(params.params);
}

google::protobuf::Any PackVariant(const ResourceType& type, const Variant& variant) {
  google::protobuf::Any any;
  any.set_type_url(type.type_url());
  any.set_value(variant.serialized);
  return any;
}

}  // namespace facet::xds
