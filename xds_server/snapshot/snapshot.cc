#include "xds_server/snapshot/snapshot.h"

#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace facet::xds {

std::string ObjectRef::ToString() const {
  if (namespace_.empty()) return absl::StrCat("xdsauthority/", name);
  return absl::StrCat(namespace_, "/", name);
}

std::string ContentDigest(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), 8));
}

const Variant* ServedResource::Select(const ParameterSet& params) const {
  for (const auto& variant : variants) {
    if (variant->constraints.Matches(params)) return variant.get();
  }
  return nullptr;
}

Snapshot::Snapshot(std::vector<std::shared_ptr<const ServedResource>> resources) {
  std::string digest_input;
  for (auto& resource : resources) {
    by_owner_[resource->owner] = resource;
    by_type_[resource->type][resource->name] = std::move(resource);
  }
  for (const ResourceType* type : AllResourceTypes()) {
    for (const auto& [name, resource] : this->resources(*type)) {
      absl::StrAppend(&digest_input, type->type_url(), "\n", name, "\n");
      for (const auto& variant : resource->variants) absl::StrAppend(&digest_input, variant->version, ",");
      digest_input.push_back('\n');
    }
  }
  version_ = ContentDigest(digest_input);
}

const ServedResource* Snapshot::Find(const ResourceType& type, absl::string_view name) const {
  const ResourceMap& map = resources(type);
  auto it = map.find(name);
  return it == map.end() ? nullptr : it->second.get();
}

const Snapshot::ResourceMap& Snapshot::resources(const ResourceType& type) const {
  static const ResourceMap* const kEmpty = new ResourceMap();
  auto it = by_type_.find(&type);
  return it == by_type_.end() ? *kEmpty : it->second;
}

std::shared_ptr<const ServedResource> Snapshot::FindByOwner(const ObjectRef& owner) const {
  auto it = by_owner_.find(owner);
  return it == by_owner_.end() ? nullptr : it->second;
}

size_t Snapshot::size() const { return by_owner_.size(); }

}  // namespace facet::xds
