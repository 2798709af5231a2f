#include "xds_server/snapshot/incremental_builder.h"

#include <utility>

namespace facet::xds {

class IncrementalBuilder::State {
 public:
  std::map<ObjectRef, ResourceObject> resources;
  std::map<ObjectRef, AuthorityObject> authorities;
  std::map<ObjectRef, std::shared_ptr<const ObjectStatus>> statuses;
  std::set<ObjectRef> removed;
  bool pending = false;
};

IncrementalBuilder::IncrementalBuilder(BuildOptions options)
    : options_(std::move(options)),
      state_(std::make_unique<State>()),
      snapshot_(std::make_shared<const Snapshot>()) {}

IncrementalBuilder::~IncrementalBuilder() = default;

void IncrementalBuilder::Upsert(ResourceObject object) {
  state_->removed.erase(object.ref);
  state_->resources[object.ref] = std::move(object);
  state_->pending = true;
}

void IncrementalBuilder::Upsert(AuthorityObject object) {
  state_->removed.erase(object.ref);
  state_->authorities[object.ref] = std::move(object);
  state_->pending = true;
}

void IncrementalBuilder::Remove(const ObjectRef& ref) {
  const bool known = state_->resources.erase(ref) + state_->authorities.erase(ref) > 0;
  if (known) {
    state_->removed.insert(ref);
    state_->pending = true;
  }
}

bool IncrementalBuilder::has_pending() const { return state_->pending; }

IncrementalBuilder::Result IncrementalBuilder::Build() {
  std::vector<ResourceObject> resources;
  std::vector<AuthorityObject> authorities;
  for (const auto& [ref, object] : state_->resources) resources.push_back(object);
  for (const auto& [ref, object] : state_->authorities) authorities.push_back(object);
  BuildResult built = BuildSnapshot(resources, authorities, snapshot_.get(), options_);
  Result result;
  result.validated_objects = static_cast<int64_t>(resources.size() + authorities.size());
  result.reference_checks = static_cast<int64_t>(resources.size());
  rejected_ = 0;
  for (ObjectStatus& status : built.statuses) {
    if (!status.accepted) ++rejected_;
    auto& slot = state_->statuses[status.ref];
    if (slot == nullptr || !(*slot == status)) {
      slot = std::make_shared<const ObjectStatus>(std::move(status));
      result.changed_statuses.push_back(slot);
    }
  }
  for (const ObjectRef& ref : state_->removed) {
    if (state_->statuses.erase(ref) > 0) result.removed_statuses.push_back(ref);
  }
  state_->removed.clear();
  state_->pending = false;
  result.snapshot_changed = built.snapshot->version() != snapshot_->version();
  if (result.snapshot_changed) snapshot_ = built.snapshot;
  result.snapshot = snapshot_;
  return result;
}

std::vector<std::shared_ptr<const ObjectStatus>> IncrementalBuilder::Statuses() const {
  std::vector<std::shared_ptr<const ObjectStatus>> out;
  out.reserve(state_->statuses.size());
  for (const auto& [ref, status] : state_->statuses) out.push_back(status);
  return out;
}

std::shared_ptr<const ObjectStatus> IncrementalBuilder::StatusOf(const ObjectRef& ref) const {
  auto it = state_->statuses.find(ref);
  return it == state_->statuses.end() ? nullptr : it->second;
}

size_t IncrementalBuilder::object_count() const {
  return state_->resources.size() + state_->authorities.size();
}

}  // namespace facet::xds
