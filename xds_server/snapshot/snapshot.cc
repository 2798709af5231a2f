#include "xds_server/snapshot/snapshot.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "xds_server/common/digest.h"
#include "xds_server/names/names.h"

namespace facet::xds {

std::string ObjectRef::ToString() const {
  if (namespace_.empty()) return absl::StrCat("xdsauthority/", name);
  return absl::StrCat(namespace_, "/", name);
}

const std::string& Variant::EncodedAny() const {
  std::call_once(any_once_, [this] {
    google::protobuf::Any any;
    any.set_type_url(type->type_url());
    any.set_value(serialized);
    any.SerializeToString(&any_);
  });
  return any_;
}

uint64_t Variant::HeldDigest(bool locator) const {
  std::atomic<uint64_t>& kept = held_digest_[locator ? 1 : 0];
  uint64_t digest = kept.load(std::memory_order_relaxed);
  if (digest == 0) {
    digest = HeldVariantDigest(name, locator, version);
    kept.store(digest, std::memory_order_relaxed);
  }
  return digest;
}

uint64_t HeldVariantDigest(absl::string_view name, bool locator, absl::string_view version) {
  // The key (form and version) laid out on the stack: versions are short.
  char key[128];
  if (version.size() >= sizeof(key)) {
    return Digest64OfParts({name, absl::StrCat(locator ? "L" : "P", version)});
  }
  key[0] = locator ? 'L' : 'P';
  std::copy(version.begin(), version.end(), key + 1);
  return Digest64OfParts({name, absl::string_view(key, version.size() + 1)});
}

namespace {

// Appends a length-delimited field's tag and length (protobuf wire format).
void AppendFieldHead(int field, size_t length, std::string* out) {
  using ::google::protobuf::internal::WireFormatLite;
  using ::google::protobuf::io::CodedOutputStream;
  uint8_t head[10];  // A tag and a 32-bit length: at most 5 bytes each.
  uint8_t* end = CodedOutputStream::WriteTagToArray(
      WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED), head);
  end = CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(length), end);
  out->append(reinterpret_cast<const char*>(head), static_cast<size_t>(end - head));
}

}  // namespace

const std::string& Variant::EncodedWrappedAny(bool locator) const {
  const int index = locator ? 1 : 0;
  std::call_once(wrapper_once_[index], [this, locator, index] {
    // Serialized by hand around the shared Any bytes, so the resource is not
    // copied into a message first. Field numbers from discovery.proto and
    // any.proto: Any.type_url = 1, value = 2; Resource.name = 3, version =
    // 1, resource = 2, resource_name = 8.
    envoy::service::discovery::v3::Resource head;
    if (locator) {
      auto* resource_name = head.mutable_resource_name();
      resource_name->set_name(name);
      *resource_name->mutable_dynamic_parameter_constraints() = constraints.proto();
    } else {
      head.set_name(name);
    }
    head.set_version(version);
    const std::string head_bytes = head.SerializeAsString();
    const std::string& any = EncodedAny();
    std::string resource_head;
    AppendFieldHead(2, any.size(), &resource_head);
    const size_t wrapper_size = head_bytes.size() + resource_head.size() + any.size();
    std::string out;
    AppendFieldHead(1, kResourceWrapperTypeUrl.size(), &out);
    out.append(kResourceWrapperTypeUrl.data(), kResourceWrapperTypeUrl.size());
    AppendFieldHead(2, wrapper_size, &out);
    wrapper_offset_[index] = out.size();
    out.append(head_bytes);
    out.append(resource_head);
    out.append(any);
    wrapper_[index] = std::move(out);
  });
  return wrapper_[index];
}

absl::string_view Variant::EncodedWrapper(bool locator) const {
  const std::string& any = EncodedWrappedAny(locator);
  return absl::string_view(any).substr(wrapper_offset_[locator ? 1 : 0]);
}

bool Resolution::Knows(const ParameterSet& params) const {
  return known.contains(
      CanonicalParameters(keys.has_value() ? ProjectParameters(params, *keys) : params));
}

const Variant* ServedResource::Select(const ParameterSet& params) const {
  for (const auto& variant : variants) {
    if (variant->constraints.Matches(params)) return variant.get();
  }
  return nullptr;
}

size_t ChangeSet::size() const {
  size_t n = 0;
  for (const auto& [type, changes] : by_type) {
    n += changes.added.size() + changes.changed.size() + changes.removed.size();
  }
  return n;
}

uint64_t ResourceDigest(const ServedResource& resource) {
  DigestStream<64> digest;
  digest.AddField(resource.type->type_url()).AddField(resource.name);
  for (const auto& variant : resource.variants) digest.AddField(variant->version);
  return digest.Finish();
}

std::string VariantVersion(const ResourceType& type, absl::string_view name,
                           absl::string_view constraints, absl::string_view serialized) {
  DigestStream<64> digest;
  digest.AddField(type.type_url()).AddField(name).AddField(constraints).AddField(serialized);
  return DigestHex(digest.Finish());
}

namespace {

bool SameVersions(const ServedResource& a, const ServedResource& b) {
  if (a.variants.size() != b.variants.size()) return false;
  for (size_t i = 0; i < a.variants.size(); ++i) {
    if (a.variants[i]->version != b.variants[i]->version) return false;
  }
  // A partial source answering more (or fewer) parameter sets is a change.
  return a.resolution == b.resolution;
}

// Returns whether `name` is an xdstp:// name of one of `authorities` (or one
// that does not parse, to be safe).
bool UnderAuthority(absl::string_view name, const std::set<std::string>& authorities) {
  if (authorities.empty() || !IsXdstpName(name)) return false;
  absl::StatusOr<XdstpName> parsed = ParseXdstpName(name);
  return !parsed.ok() || authorities.count(parsed->authority) > 0;
}

}  // namespace

template <typename Key, typename Hash>
template <typename K>
const std::shared_ptr<const ServedResource>* Snapshot::ShardedMap<Key, Hash>::Find(
    const K& key) const {
  const auto& shard = shards_[ShardOf(key)];
  if (shard == nullptr) return nullptr;
  auto it = shard->find(key);
  return it == shard->end() ? nullptr : &it->second;
}

template <typename Key, typename Hash>
typename Snapshot::ShardedMap<Key, Hash>::Shard& Snapshot::ShardedMap<Key, Hash>::Own(
    size_t index) {
  auto& shard = shards_[index];
  if (!owned_[index]) {
    shard = shard == nullptr ? std::make_shared<Shard>() : std::make_shared<Shard>(*shard);
    owned_[index] = true;
  }
  return *shard;
}

template <typename Key, typename Hash>
void Snapshot::ShardedMap<Key, Hash>::Set(const Key& key,
                                          std::shared_ptr<const ServedResource> value) {
  auto [it, inserted] = Own(ShardOf(key)).insert_or_assign(key, std::move(value));
  if (inserted) ++size_;
}

template <typename Key, typename Hash>
bool Snapshot::ShardedMap<Key, Hash>::Erase(const Key& key) {
  const size_t index = ShardOf(key);
  if (shards_[index] == nullptr || shards_[index]->find(key) == shards_[index]->end()) {
    return false;
  }
  Shard& shard = Own(index);
  shard.erase(shard.find(key));
  --size_;
  return true;
}

template <typename Key, typename Hash>
void Snapshot::ShardedMap<Key, Hash>::ForEach(
    const std::function<void(const Key&, const std::shared_ptr<const ServedResource>&)>& f)
    const {
  for (const auto& shard : shards_) {
    if (shard == nullptr) continue;
    for (const auto& [key, value] : *shard) f(key, value);
  }
}

size_t Snapshot::RefHash::operator()(const ObjectRef& ref) const {
  return std::hash<std::string>()(ref.namespace_) * 31 + std::hash<std::string>()(ref.name) +
         std::hash<std::string>()(ref.kind);
}

size_t Snapshot::NameHash::operator()(absl::string_view name) const {
  return std::hash<std::string_view>()(std::string_view(name.data(), name.size()));
}

size_t Snapshot::TypeIndex(const ResourceType* type) {
  return static_cast<size_t>(type->push_rank()) % 4;
}

void Snapshot::Insert(std::shared_ptr<const ServedResource> resource) {
  digest_sum_ += ResourceDigest(*resource);
  by_owner_.Set(resource->owner, resource);
  const size_t index = TypeIndex(resource->type);
  const std::string name = resource->name;
  by_type_[index].Set(name, std::move(resource));
}

void Snapshot::Erase(const ResourceType* type, absl::string_view name) {
  auto& map = by_type_[TypeIndex(type)];
  const std::shared_ptr<const ServedResource>* found = map.Find(name);
  if (found == nullptr) return;
  std::shared_ptr<const ServedResource> resource = *found;
  digest_sum_ -= ResourceDigest(*resource);
  const std::shared_ptr<const ServedResource>* owner = by_owner_.Find(resource->owner);
  if (owner != nullptr && *owner == resource) by_owner_.Erase(resource->owner);
  map.Erase(std::string(name));
}

void Snapshot::SetVersion() {
  const uint64_t digest = digest_sum_ + (access_ == nullptr ? 0 : access_->digest());
  version_ = DigestHex(digest);
}

Snapshot::Snapshot(std::vector<std::shared_ptr<const ServedResource>> resources,
                   const Snapshot* base, std::shared_ptr<const ClientAccess> access)
    : access_(std::move(access)) {
  for (auto& resource : resources) Insert(std::move(resource));
  SetVersion();
  if (base == nullptr) return;
  base_version_ = base->version();
  changes_.all = false;
  // Names whose readers changed count as changed.
  const std::set<std::string> reread = ClientAccess::Differences(base->access(), access_.get());
  for (const ResourceType* type : AllResourceTypes()) {
    const ResourceMap& before = base->resources(*type);
    const ResourceMap& after = this->resources(*type);
    TypeChanges changes;
    for (const auto& [name, resource] : after) {
      auto it = before.find(name);
      if (it == before.end()) {
        changes.added.push_back(name);
      } else if (!SameVersions(*it->second, *resource) || UnderAuthority(name, reread)) {
        changes.changed.push_back(name);
      }
    }
    for (const auto& [name, resource] : before) {
      if (after.find(name) == after.end()) changes.removed.push_back(name);
    }
    if (!changes.empty()) changes_.by_type[type] = std::move(changes);
  }
}

std::shared_ptr<const Snapshot> Snapshot::EmptyPartial() {
  auto out = std::make_shared<Snapshot>();
  out->partial_ = true;
  out->SetVersion();
  return out;
}

std::shared_ptr<const Snapshot> Snapshot::Derive(
    const Snapshot& base, std::vector<std::shared_ptr<const ServedResource>> upserts,
    const std::vector<std::pair<const ResourceType*, std::string>>& removals) {
  return Derive(base, std::move(upserts), removals, base.access_);
}

std::shared_ptr<const Snapshot> Snapshot::Derive(
    const Snapshot& base, std::vector<std::shared_ptr<const ServedResource>> upserts,
    const std::vector<std::pair<const ResourceType*, std::string>>& removals,
    std::shared_ptr<const ClientAccess> access) {
  auto out = std::make_shared<Snapshot>();
  out->by_type_ = base.by_type_;
  out->by_owner_ = base.by_owner_;
  out->digest_sum_ = base.digest_sum_;
  out->base_version_ = base.version();
  out->partial_ = base.partial_;
  out->access_ = std::move(access);
  out->changes_.all = false;
  std::map<const ResourceType*, std::map<std::string, int>> touched;  // -1 removed, 1 added, 0 changed.
  for (const auto& [type, name] : removals) {
    if (base.Find(*type, name) == nullptr) continue;
    out->Erase(type, name);
    touched[type][name] = -1;
  }
  for (auto& resource : upserts) {
    const ServedResource* before = base.Find(*resource->type, resource->name);
    const ResourceType* type = resource->type;
    const std::string name = resource->name;
    // Replace even when the versions are equal: the owner may differ.
    out->Erase(type, name);
    const bool same = before != nullptr && SameVersions(*before, *resource);
    out->Insert(std::move(resource));
    if (before == nullptr) {
      touched[type][name] = 1;
    } else if (!same) {
      touched[type][name] = 0;
    } else {
      touched[type].erase(name);  // Re-added with the same content: no change.
    }
  }
  if (base.access_ != out->access_) {
    // Who may read them changed: every resource of those authorities is
    // re-examined (rare; one pass over the resources).
    const std::set<std::string> reread =
        ClientAccess::Differences(base.access_.get(), out->access_.get());
    if (!reread.empty()) {
      for (const ResourceType* type : AllResourceTypes()) {
        out->by_type_[TypeIndex(type)].ForEach(
            [&](const std::string& name, const std::shared_ptr<const ServedResource>& resource) {
              if (resource->type == type && UnderAuthority(name, reread)) {
                touched[type].try_emplace(name, 0);
              }
            });
      }
    }
  }
  for (const auto& [type, names] : touched) {
    TypeChanges changes;
    for (const auto& [name, kind] : names) {
      (kind < 0 ? changes.removed : kind > 0 ? changes.added : changes.changed).push_back(name);
    }
    if (!changes.empty()) out->changes_.by_type[type] = std::move(changes);
  }
  out->SetVersion();
  return out;
}

const ServedResource* Snapshot::Find(const ResourceType& type, absl::string_view name) const {
  const std::shared_ptr<const ServedResource>* found = by_type_[TypeIndex(&type)].Find(name);
  return found == nullptr ? nullptr : found->get();
}

const Snapshot::ResourceMap& Snapshot::resources(const ResourceType& type) const {
  const size_t index = TypeIndex(&type);
  std::call_once(sorted_once_[index], [this, index] {
    by_type_[index].ForEach([this, index](const std::string& name, const auto& resource) {
      sorted_[index].emplace(name, resource);
    });
  });
  return sorted_[index];
}

std::shared_ptr<const ServedResource> Snapshot::FindByOwner(const ObjectRef& owner) const {
  const std::shared_ptr<const ServedResource>* found = by_owner_.Find(owner);
  return found == nullptr ? nullptr : *found;
}

size_t Snapshot::size() const { return by_owner_.size(); }

}  // namespace facet::xds
