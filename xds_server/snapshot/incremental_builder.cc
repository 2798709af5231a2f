#include "xds_server/snapshot/incremental_builder.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "xds_server/common/digest.h"
#include "xds_server/common/parallel.h"
#include "xds_server/json/yaml_json.h"
#include "xds_server/snapshot/validation.h"

namespace facet::xds {
namespace {

using NameKey = std::pair<const ResourceType*, std::string>;

std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

// Objects per thread below which a first build's checks stay on one thread.
constexpr size_t kObjectsPerThread = 256;

// Adds the structure, scalars and tags (a quoted "80" differs from a plain
// 80) of a YAML document to a digest, reading the document in place.
class YamlDigest : public json::YamlVisitor {
 public:
  explicit YamlDigest(DigestStream<128>& digest) : digest_(digest) {}
  void Undefined() override { digest_.Add("U"); }
  void Null() override { digest_.Add("N"); }
  void Scalar(const std::string& tag, const std::string& text) override {
    digest_.Add("S").AddField(tag).AddField(text);
  }
  void List(size_t size) override { digest_.Add("L").AddNumber(size); }
  void Map(size_t size) override { digest_.Add("M").AddNumber(size); }

 private:
  DigestStream<128>& digest_;
};

void AddYaml(DigestStream<128>& digest, const YAML::Node& node) {
  YamlDigest visitor(digest);
  json::WalkYaml(node, visitor);
}

// A digest of everything about an object that validation reads: equal
// digests, equal outcome. Generation and location only label the status.
Digest128 SpecDigest(const ResourceObject& object) {
  DigestStream<128> digest;
  for (const Finding& finding : object.findings) {
    digest.Add("F").AddNumber(static_cast<uint64_t>(finding.severity));
    digest.AddField(finding.reason).AddField(finding.field).AddField(finding.message);
  }
  if (object.spec.has_value()) {
    const ResourceSpec& spec = *object.spec;
    digest.Add("P").AddField(spec.type).AddField(spec.name).AddField(spec.authority);
    digest.AddNumber(spec.context_params.size());
    for (const auto& [key, value] : spec.context_params) digest.AddField(key).AddField(value);
    for (const VariantSpec& variant : spec.variants) {
      digest.Add("V").AddField(variant.label).AddField(variant.constraints_field);
      digest.AddField(variant.constraints.SerializeAsString());
      AddYaml(digest, variant.resource);
      if (variant.endpoints_from) {
        digest.Add("E").AddField(variant.endpoints_from->service);
        digest.AddField(variant.endpoints_from->port_name);
        digest.AddNumber(static_cast<uint64_t>(variant.endpoints_from->port_number));
        digest.AddNumber(variant.endpoints_from->match_name_only ? 1 : 0);
      }
      if (variant.origin != nullptr) {
        // Findings point into what was written.
        digest.Add("C");
        AddYaml(digest, variant.origin->written_resource);
        digest.AddNumber(variant.included.size());
        for (size_t element : variant.included) digest.AddNumber(element);
      }
    }
  }
  return digest.Finish();
}

bool SameAuthority(const AuthorityObject& a, const AuthorityObject& b) {
  return a.authority == b.authority && a.allowed_namespaces == b.allowed_namespaces &&
         a.allowed_clients == b.allowed_clients && a.findings == b.findings;
}

}  // namespace

class IncrementalBuilder::State {
 public:
  explicit State(const BuildOptions& options) : options_(options) {}

  struct Entry {
    // The object as the builder keeps it: its identity, what labels its
    // status, and a digest of its spec (the spec itself is not kept).
    struct {
      ObjectRef ref;
      int64_t generation = 0;
      std::string location;
      std::optional<std::string> generated_from;
    } object;
    Digest128 digest;
    internal::OwnValidation own;
    std::vector<Finding> admission;
    bool new_ok = false;  // own.resource set and admitted.
    // What this object serves now (its new revision or an earlier one).
    std::shared_ptr<const ServedResource> served;
    // What it served when this build first touched it: the earlier
    // revision it may fall back to.
    std::shared_ptr<const ServedResource> fallback;
    uint64_t touched_build = 0;
    bool last_good_asked = false;  // In this build.
    // The object that won the name this object claims, when not this one.
    std::optional<ObjectRef> duplicate_of;
    std::vector<Finding> new_problems;       // Why the new revision does not serve.
    std::optional<Finding> fallback_problem;  // Why the earlier revision stopped serving.
    std::optional<NameKey> claim;            // The name this object asks to serve.
    std::vector<NameKey> indexed;            // Keys under which it is in referrers_.
    std::optional<NameKey> declares;         // Its key in `declarers`.
    std::shared_ptr<const ObjectStatus> status;
  };

  // --- pending changes -----------------------------------------------------
  // With their spec digests, computed by ValidateAll when Upsert had no
  // reason to (a new object).
  std::map<ObjectRef, std::pair<ResourceObject, std::optional<Digest128>>> pending_resources;
  std::map<ObjectRef, AuthorityObject> pending_authorities;
  std::set<ObjectRef> pending_removals;
  // What labels an object whose spec is unchanged.
  struct Metadata {
    int64_t generation = 0;
    std::string location;
    std::optional<std::string> generated_from;
  };
  std::map<ObjectRef, Metadata> pending_metadata;
  std::set<ObjectRef> pending_last_good;  // Changed for objects serving nothing.
  LastGoodLookup last_good_lookup;
  // Validated last accepted revisions asked for, by object (null: none).
  std::map<ObjectRef, std::shared_ptr<const ServedResource>> last_good;

  // --- held state ----------------------------------------------------------
  std::map<ObjectRef, Entry> entries;
  std::map<ObjectRef, AuthorityObject> authorities;
  std::map<ObjectRef, std::shared_ptr<const ObjectStatus>> authority_statuses;
  internal::AuthorityTable table;
  std::map<NameKey, std::set<ObjectRef>> claims;
  std::map<NameKey, std::set<ObjectRef>> referrers;
  // Every object by the (type, name) its current spec declares, served or not.
  std::map<NameKey, std::set<ObjectRef>> declarers;
  std::shared_ptr<const Snapshot> snapshot = std::make_shared<const Snapshot>();
  // A snapshot whose owners' revisions may serve as fallbacks for objects
  // seen for the first time (BuildSnapshot's `previous`).
  const Snapshot* seed = nullptr;
  uint64_t build_number = 0;
  int rejected = 0;  // Objects whose status says not accepted.

  Result Build();

 private:
  // The served state while a build runs: the snapshot plus this build's edits.
  const ServedResource* Served(const ResourceType* type, absl::string_view name) const {
    auto it = overlay_.find(NameKey(type, std::string(name)));
    if (it != overlay_.end()) return it->second.get();
    return snapshot->Find(*type, name);
  }
  std::optional<ObjectRef> ServedOwner(const NameKey& key) const {
    const ServedResource* resource = Served(key.first, key.second);
    if (resource == nullptr) return std::nullopt;
    return resource->owner;
  }

  // The earlier revision an object may serve instead of its new one: not
  // when its name is no longer admitted by its authority.
  std::shared_ptr<const ServedResource> Fallback(Entry& entry) {
    if (entry.fallback == nullptr && !entry.last_good_asked) {
      // Nothing served here before: a revision accepted elsewhere, asked for
      // only now that it is needed.
      entry.last_good_asked = true;
      entry.fallback = LastGood(entry.object.ref);
    }
    if (entry.fallback != nullptr && entry.fallback->name == entry.own.served_name &&
        internal::HasErrors(entry.admission)) {
      return nullptr;
    }
    return entry.fallback;
  }

  // The validated last accepted revision the lookup gives for `ref`, or
  // null; asked once until LastGoodChanged(ref).
  std::shared_ptr<const ServedResource> LastGood(const ObjectRef& ref) {
    if (!last_good_lookup) return nullptr;
    auto [it, inserted] = last_good.try_emplace(ref);
    if (inserted) {
      if (std::optional<ResourceObject> object = last_good_lookup(ref)) {
        it->second = internal::ValidateResourceObject(*object, options_, &variant_sets_).resource;
      }
    }
    return it->second;
  }

  // Records what `entry` was generated for; a change re-decides its claim
  // (generated objects yield names) and re-statuses the other claimants
  // (their DuplicateName findings name it).
  void SetGeneratedFrom(Entry& entry, std::optional<std::string> generated_from,
                        std::set<NameKey>* claim_names) {
    if (entry.object.generated_from == generated_from) return;
    entry.object.generated_from = std::move(generated_from);
    if (entry.claim) claim_names->insert(*entry.claim);
  }

  // Returns the entries touched so far, in reference order (what touched_
  // holds now, whatever later touches add).
  std::vector<Entry*> TouchedEntries() {
    std::vector<Entry*> out;
    out.reserve(touched_.size());
    for (const ObjectRef& ref : touched_) out.push_back(&entries.at(ref));
    return out;
  }

  void Touch(Entry& entry) {
    if (entry.touched_build == build_number) return;
    entry.touched_build = build_number;
    entry.fallback = entry.served;
    entry.last_good_asked = false;
    touched_.insert(entry.object.ref);
  }
  void Reindex(Entry& entry);
  // Records what `entry` declares now; the objects referring to what it
  // declared before or declares now are checked again.
  void Declare(Entry& entry, std::optional<NameKey> key);
  void Unindex(Entry& entry);
  void UpdateClaim(Entry& entry, std::set<NameKey>* names);
  void SetServed(Entry& entry, std::shared_ptr<const ServedResource> resource);
  // Runs every pending object's own checks (on several threads for a large
  // batch); results in the map's order. Sets the digests not set yet.
  std::vector<internal::OwnValidation> ValidateAll(
      std::map<ObjectRef, std::pair<ResourceObject, std::optional<Digest128>>>& pending) const;
  // Frees the specs (their documents) of the pending objects `validated`
  // does not defer, on several threads for a large batch. After validation,
  // not during it: freed while the validation allocates what it keeps, the
  // documents' memory was mixed with that and glibc's malloc_trim gave little
  // of it back.
  void ReleaseSpecs(const std::vector<internal::OwnValidation>& validated);
  void Readmit(Entry& entry);
  void ApplyAuthorities();
  // Returns the objects whose right to their name changed. Every claimant of
  // `names` is re-statused.
  std::set<ObjectRef> ResolveClaims(const std::set<NameKey>& names);
  void Upgrade(const std::set<ObjectRef>& start);
  void Prune(const std::set<ObjectRef>& start);
  std::shared_ptr<const ObjectStatus> MakeStatus(const Entry& entry) const;

  const BuildOptions& options_;
  // Outcomes held by entries' own validations, by variant-set content.
  mutable internal::VariantSetCache variant_sets_;
  absl::flat_hash_map<NameKey, std::shared_ptr<const ServedResource>> overlay_;
  std::set<ObjectRef> touched_;
  // Objects whose status may change though nothing of theirs did: the
  // claimants of a name whose claimants changed.
  std::set<ObjectRef> restatus_;
  std::set<NameKey> changed_names_;
  uint64_t served_changes_ = 0;  // Calls of SetServed that changed what an entry serves.
  Result* result_ = nullptr;
};

void IncrementalBuilder::State::Unindex(Entry& entry) {
  for (const NameKey& key : entry.indexed) {
    auto it = referrers.find(key);
    if (it == referrers.end()) continue;
    it->second.erase(entry.object.ref);
    if (it->second.empty()) referrers.erase(it);
  }
  entry.indexed.clear();
}

void IncrementalBuilder::State::Declare(Entry& entry, std::optional<NameKey> key) {
  if (entry.declares == key) return;
  if (entry.declares) {
    changed_names_.insert(*entry.declares);
    auto it = declarers.find(*entry.declares);
    if (it != declarers.end()) {
      it->second.erase(entry.object.ref);
      if (it->second.empty()) declarers.erase(it);
    }
  }
  entry.declares = std::move(key);
  if (entry.declares) {
    changed_names_.insert(*entry.declares);
    declarers[*entry.declares].insert(entry.object.ref);
  }
}

void IncrementalBuilder::State::Reindex(Entry& entry) {
  std::vector<NameKey> keys;
  for (const auto* resource : {entry.own.resource.get(), entry.served.get()}) {
    if (resource == nullptr) continue;
    for (const auto& variant : resource->variants) {
      for (const ResourceReference& ref : variant->references) {
        keys.emplace_back(ref.target, ref.name);
      }
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // Indexed under these very keys already: when an object starts serving
  // what it was validated with, say.
  if (keys == entry.indexed) return;
  Unindex(entry);
  for (const NameKey& key : keys) referrers[key].insert(entry.object.ref);
  entry.indexed = std::move(keys);
}

void IncrementalBuilder::State::UpdateClaim(Entry& entry, std::set<NameKey>* names) {
  std::optional<NameKey> claim;
  const ServedResource* primary = entry.new_ok ? entry.own.resource.get() : Fallback(entry).get();
  if (primary != nullptr) claim = NameKey(primary->type, primary->name);
  if (claim == entry.claim) return;
  if (entry.claim) {
    names->insert(*entry.claim);
    auto it = claims.find(*entry.claim);
    if (it != claims.end()) {
      it->second.erase(entry.object.ref);
      if (it->second.empty()) claims.erase(it);
    }
  }
  entry.claim = claim;
  if (claim) {
    names->insert(*claim);
    claims[*claim].insert(entry.object.ref);
  }
}

void IncrementalBuilder::State::SetServed(Entry& entry,
                                          std::shared_ptr<const ServedResource> resource) {
  if (entry.served == resource) return;
  ++served_changes_;
  Touch(entry);
  if (entry.served != nullptr) {
    NameKey key(entry.served->type, entry.served->name);
    const ServedResource* current = Served(key.first, key.second);
    if (current != nullptr && current->owner == entry.object.ref) {
      overlay_[key] = nullptr;
      changed_names_.insert(key);
    }
  }
  entry.served = std::move(resource);
  if (entry.served != nullptr) {
    NameKey key(entry.served->type, entry.served->name);
    overlay_[key] = entry.served;
    changed_names_.insert(key);
  }
  Reindex(entry);
}

std::vector<internal::OwnValidation> IncrementalBuilder::State::ValidateAll(
    std::map<ObjectRef, std::pair<ResourceObject, std::optional<Digest128>>>& pending) const {
  std::vector<std::pair<ResourceObject, std::optional<Digest128>>*> objects;
  objects.reserve(pending.size());
  for (auto& [ref, entry] : pending) objects.push_back(&entry);
  std::vector<internal::OwnValidation> out(objects.size());
  // Never less than one object's budget, so that every build finishes at
  // least the first object it checks.
  std::atomic<int64_t> budget(
      std::max(options_.limits.build_search_steps, options_.limits.object_search_steps));
  ParallelFor(objects.size(), kObjectsPerThread, [&](size_t i) {
    auto& [object, digest] = *objects[i];
    if (!digest.has_value()) digest = SpecDigest(object);
    out[i] = internal::ValidateResourceObject(object, options_, &variant_sets_, &budget);
  });
  return out;
}

void IncrementalBuilder::State::ReleaseSpecs(
    const std::vector<internal::OwnValidation>& validated) {
  std::vector<ResourceObject*> objects;
  objects.reserve(pending_resources.size());
  size_t i = 0;
  for (auto& [ref, pending] : pending_resources) {
    if (!validated[i++].deferred) objects.push_back(&pending.first);
  }
  ParallelFor(objects.size(), kObjectsPerThread, [&](size_t i) { objects[i]->spec.reset(); });
}

void IncrementalBuilder::State::Readmit(Entry& entry) {
  entry.admission.clear();
  if (!entry.own.served_name.empty()) {
    internal::CheckAdmission(entry.object.ref, entry.own.served_name, table, options_,
                             &entry.admission);
  }
  entry.new_ok = entry.own.resource != nullptr && !internal::HasErrors(entry.admission);
}

void IncrementalBuilder::State::ApplyAuthorities() {
  for (auto& [ref, object] : pending_authorities) authorities[ref] = std::move(object);
  pending_authorities.clear();
  std::vector<const AuthorityObject*> objects;
  for (const auto& [ref, object] : authorities) objects.push_back(&object);
  internal::AuthorityTable next;
  std::vector<ObjectStatus> statuses = internal::CheckAuthorities(objects, options_, &next);
  for (ObjectStatus& status : statuses) {
    auto& slot = authority_statuses[status.ref];
    if (slot == nullptr || !(*slot == status)) {
      if (slot != nullptr && !slot->accepted) --rejected;
      if (!status.accepted) ++rejected;
      slot = std::make_shared<const ObjectStatus>(std::move(status));
      result_->changed_statuses.push_back(slot);
    }
  }
  if (next == table) return;
  // Unchanged restrictions keep their object: the snapshot changes only
  // when they do.
  if (ClientAccess::Differences(next.access.get(), table.access.get()).empty()) {
    next.access = table.access;
  }
  table = std::move(next);
  // Admission changed: re-check it everywhere (a rare, cheap check).
  for (auto& [ref, entry] : entries) {
    std::vector<Finding> before = entry.admission;
    Readmit(entry);
    if (!(before == entry.admission)) Touch(entry);
  }
}

// Decides, for each name whose claimants changed, which claimant may serve
// it: first an object that is not generated, in the namespace of a
// generated claimant (a namespace's own XdsResource overrides what is
// generated for its Services; one in another namespace does not take their
// names); then the one serving it now if it still claims it; then the first
// by reference. The others are duplicates.
std::set<ObjectRef> IncrementalBuilder::State::ResolveClaims(const std::set<NameKey>& names) {
  std::set<ObjectRef> moved;
  for (const NameKey& key : names) {
    auto it = claims.find(key);
    if (it == claims.end()) continue;
    std::optional<ObjectRef> owner = ServedOwner(key);
    if (!owner && seed != nullptr) {
      if (const ServedResource* before = seed->Find(*key.first, key.second)) owner = before->owner;
    }
    // Claimants are few (one, nearly always): a scan in reference order,
    // replacing the candidate only with a better one.
    std::vector<absl::string_view> generated_in;  // Namespaces of generated claimants.
    if (it->second.size() > 1) {
      for (const ObjectRef& ref : it->second) {
        if (entries.at(ref).object.generated_from) generated_in.push_back(ref.namespace_);
      }
    }
    auto rank = [&](const ObjectRef& ref) {
      const bool overrides =
          !entries.at(ref).object.generated_from &&
          std::find(generated_in.begin(), generated_in.end(), ref.namespace_) != generated_in.end();
      return std::make_pair(!overrides, !(owner && ref == *owner));
    };
    ObjectRef winner = *it->second.begin();
    for (const ObjectRef& ref : it->second) {
      if (rank(ref) < rank(winner)) winner = ref;
    }
    for (const ObjectRef& ref : it->second) {
      Entry& entry = entries.at(ref);
      restatus_.insert(ref);
      std::optional<ObjectRef> duplicate_of;
      if (!(ref == winner)) duplicate_of = winner;
      if (duplicate_of != entry.duplicate_of) {
        Touch(entry);
        entry.duplicate_of = duplicate_of;
        moved.insert(ref);
      }
    }
  }
  return moved;
}

// Optimistically serves every touched object's preferred revision, and
// upgrades waiting objects whose references may now resolve; Prune() then
// takes back whatever does not resolve.
void IncrementalBuilder::State::Upgrade(const std::set<ObjectRef>& start) {
  std::set<NameKey> seen_names;
  std::set<ObjectRef> queue;
  const std::set<ObjectRef>* round = &start;
  // At least one round: a name may have changed with no object touched (a
  // rejected object deleted), and its referrers may need a new message.
  for (bool first = true; first || !round->empty(); first = false) {
    for (const ObjectRef& ref : *round) {
      Entry& entry = entries.at(ref);
      std::shared_ptr<const ServedResource> desired;
      if (!entry.duplicate_of) desired = entry.new_ok ? entry.own.resource : Fallback(entry);
      SetServed(entry, std::move(desired));
    }
    queue.clear();
    round = &queue;
    for (const NameKey& key : changed_names_) {
      if (!seen_names.insert(key).second) continue;
      auto it = referrers.find(key);
      if (it == referrers.end()) continue;
      for (const ObjectRef& ref : it->second) {
        Entry& entry = entries.at(ref);
        if (entry.new_ok && !entry.duplicate_of && entry.served != entry.own.resource) {
          Touch(entry);
          queue.insert(ref);
        }
      }
    }
  }
}

void IncrementalBuilder::State::Prune(const std::set<ObjectRef>& start) {
  // Lower push ranks first, so targets settle before their referrers; then
  // by reference. Entries stay put while this runs: the work holds them, not
  // copies of their references.
  using Item = std::pair<int, Entry*>;
  struct ItemLess {
    bool operator()(const Item& a, const Item& b) const {
      if (a.first != b.first) return a.first < b.first;
      return a.second->object.ref < b.second->object.ref;
    }
  };
  std::set<Item, ItemLess> work;
  auto rank_of = [](const Entry& entry) {
    return entry.served != nullptr ? entry.served->type->push_rank() : 0;
  };
  auto add = [&](Entry& entry) { work.emplace(rank_of(entry), &entry); };
  for (const ObjectRef& ref : start) add(entries.at(ref));
  for (const NameKey& key : changed_names_) {
    auto it = referrers.find(key);
    if (it == referrers.end()) continue;
    for (const ObjectRef& ref : it->second) add(entries.at(ref));
  }
  // A name no object serves may still be declared by a rejected object: the
  // first of those is the cause to point at.
  auto rejected_owner = [this](const ResourceType* type,
                               absl::string_view name) -> const ObjectRef* {
    auto it = declarers.find(NameKey(type, std::string(name)));
    if (it == declarers.end()) return nullptr;
    for (const ObjectRef& ref : it->second) {
      if (entries.at(ref).served == nullptr) return &ref;
    }
    return nullptr;
  };
  const internal::RejectedLookup rejected = rejected_owner;
  auto lookup = [this](const ResourceType* type, absl::string_view name) {
    return Served(type, name);
  };
  // A large batch (a first build) has its references checked over the cores
  // first, against what is served now: the pass below takes an object's
  // result from there unless something served changed since, and checks
  // again otherwise, as it would have.
  struct Ahead {
    const ServedResource* resource = nullptr;
    std::vector<Finding> problems;
  };
  absl::flat_hash_map<const Entry*, Ahead> ahead;
  const uint64_t ahead_of = served_changes_;
  if (work.size() >= 2 * kObjectsPerThread) {
    std::vector<std::pair<const Entry*, Ahead>> batch;
    for (const Item& item : work) {
      const Entry& entry = *item.second;
      const ServedResource* resource =
          entry.served != nullptr ? entry.served.get()
          : entry.new_ok && !entry.duplicate_of && !entry.new_problems.empty()
              ? entry.own.resource.get()
              : nullptr;
      if (resource != nullptr) batch.emplace_back(&entry, Ahead{resource, {}});
    }
    ParallelFor(batch.size(), kObjectsPerThread, [&](size_t i) {
      Ahead& check = batch[i].second;
      check.problems = internal::CheckReferences(*check.resource, lookup, options_, &rejected);
    });
    ahead.reserve(batch.size());
    for (auto& [entry, check] : batch) ahead.emplace(entry, std::move(check));
  }
  auto check_references = [&](const Entry& entry, const ServedResource& resource) {
    ++result_->reference_checks;
    if (served_changes_ == ahead_of) {
      if (auto it = ahead.find(&entry); it != ahead.end() && it->second.resource == &resource) {
        std::vector<Finding> problems = std::move(it->second.problems);
        ahead.erase(it);
        return problems;
      }
    }
    return internal::CheckReferences(resource, lookup, options_, &rejected);
  };
  while (!work.empty()) {
    Entry& entry = *work.begin()->second;
    const ObjectRef& ref = entry.object.ref;
    work.erase(work.begin());
    if (entry.served == nullptr) {
      // Serving nothing: what its revision refers to changed, so keep the
      // reasons it is rejected current (a referenced object now rejected,
      // deleted or renamed).
      if (entry.new_ok && !entry.duplicate_of && !entry.new_problems.empty()) {
        std::vector<Finding> problems = check_references(entry, *entry.own.resource);
        if (!problems.empty() && problems != entry.new_problems) {
          Touch(entry);
          entry.new_problems = std::move(problems);
        }
      }
      continue;
    }
    std::vector<Finding> problems = check_references(entry, *entry.served);
    const bool is_new = entry.served == entry.own.resource;
    if (problems.empty()) {
      if (is_new) entry.new_problems.clear();
      continue;
    }
    Touch(entry);
    const NameKey old_key(entry.served->type, entry.served->name);
    if (is_new) {
      entry.new_problems = std::move(problems);
      std::shared_ptr<const ServedResource> fallback = Fallback(entry);
      if (fallback != nullptr && fallback != entry.own.resource) {
        const ServedResource* holder = Served(fallback->type, fallback->name);
        const bool name_free = holder == nullptr || holder->owner == ref ||
                               (fallback->type == old_key.first && fallback->name == old_key.second);
        if (!name_free) fallback = nullptr;
      } else {
        fallback = nullptr;
      }
      SetServed(entry, std::move(fallback));
      if (entry.served != nullptr) add(entry);  // Check it too.
    } else {
      entry.fallback_problem = Finding{
          Severity::kError, "DanglingReference", "spec",
          absl::StrCat("the previously accepted revision no longer resolves either (",
                       problems.front().message, "), so it stopped serving")};
      SetServed(entry, nullptr);
    }
    // Whatever referred to the name this object gave up is checked again.
    if (auto it = referrers.find(old_key); it != referrers.end()) {
      for (const ObjectRef& other : it->second) {
        if (!(other == ref)) add(entries.at(other));
      }
    }
  }
}

std::shared_ptr<const ObjectStatus> IncrementalBuilder::State::MakeStatus(
    const Entry& entry) const {
  ObjectStatus status;
  status.ref = entry.object.ref;
  status.generation = entry.object.generation;
  status.location = entry.object.location;
  status.served_name = entry.own.served_name;
  status.findings.reserve(entry.own.findings.size() + entry.admission.size() + 2);
  const size_t at = entry.own.admission_at;
  status.findings.insert(status.findings.end(), entry.own.findings.begin(),
                         entry.own.findings.begin() + at);
  status.findings.insert(status.findings.end(), entry.admission.begin(), entry.admission.end());
  status.findings.insert(status.findings.end(), entry.own.findings.begin() + at,
                         entry.own.findings.end());
  if (entry.duplicate_of) {
    const ResourceType* type = entry.claim ? entry.claim->first : nullptr;
    auto winner = entries.find(*entry.duplicate_of);
    std::string holder;
    if (winner != entries.end() && winner->second.object.generated_from) {
      holder = absl::StrCat("is already generated for ", *winner->second.object.generated_from);
    } else if (entry.object.generated_from) {
      holder = absl::StrCat("is already declared by ", entry.duplicate_of->kind, " ",
                            entry.duplicate_of->ToString(), ", which serves it instead");
    } else {
      holder = absl::StrCat("is already declared by ", entry.duplicate_of->ToString());
    }
    status.findings.push_back(
        {Severity::kError, "DuplicateName", "spec.name",
         absl::StrCat("duplicate: ", type != nullptr ? type->alias() : "resource", " ",
                      Quote(entry.claim ? entry.claim->second : ""), " ", holder)});
  } else if (auto claimants = entry.claim ? claims.find(*entry.claim) : claims.end();
             claimants != claims.end() && !entry.object.generated_from) {
    // The generated claimants it keeps the name from.
    for (const ObjectRef& ref : claimants->second) {
      const std::optional<std::string>& from = entries.at(ref).object.generated_from;
      if (!from) continue;
      status.findings.push_back(
          {Severity::kWarning, "DuplicateName", "spec.name",
           absl::StrCat(entry.claim->first->alias(), " ", Quote(entry.claim->second),
                        " is also generated for ", *from, "; this ", entry.object.ref.kind,
                        " serves it")});
    }
  }
  const bool serves_new = entry.served != nullptr && entry.served == entry.own.resource;
  if (entry.new_ok && !serves_new && !entry.duplicate_of) {
    status.findings.insert(status.findings.end(), entry.new_problems.begin(),
                           entry.new_problems.end());
  }
  if (entry.served == nullptr && entry.fallback_problem) {
    status.findings.push_back(*entry.fallback_problem);
  }
  status.accepted = serves_new;
  status.serving_previous = entry.served != nullptr && !serves_new;
  if (entry.served != nullptr) status.variants = entry.served->variants;
  return std::make_shared<const ObjectStatus>(std::move(status));
}

IncrementalBuilder::Result IncrementalBuilder::State::Build() {
  Result result;
  result_ = &result;
  ++build_number;
  overlay_.clear();
  touched_.clear();
  restatus_.clear();
  changed_names_.clear();
  std::set<NameKey> claim_names;

  // Objects serving nothing whose last accepted revision changed.
  for (const ObjectRef& ref : pending_last_good) {
    auto it = entries.find(ref);
    if (it != entries.end() && it->second.served == nullptr) Touch(it->second);
  }
  pending_last_good.clear();

  // Deletions.
  for (const ObjectRef& ref : pending_removals) {
    last_good.erase(ref);
    if (authorities.erase(ref) > 0) {
      if (auto status = authority_statuses.find(ref);
          status != authority_statuses.end() && !status->second->accepted) {
        --rejected;
      }
      authority_statuses.erase(ref);
      result.removed_statuses.push_back(ref);
      continue;
    }
    auto it = entries.find(ref);
    if (it == entries.end()) continue;
    Entry& entry = it->second;
    SetServed(entry, nullptr);
    if (entry.claim) {
      claim_names.insert(*entry.claim);
      auto claim = claims.find(*entry.claim);
      if (claim != claims.end()) {
        claim->second.erase(ref);
        if (claim->second.empty()) claims.erase(claim);
      }
    }
    Unindex(entry);
    touched_.erase(ref);
    if (entry.status != nullptr && !entry.status->accepted) --rejected;
    Declare(entry, std::nullopt);
    entries.erase(it);
    result.removed_statuses.push_back(ref);
  }
  const bool authorities_changed =
      !pending_authorities.empty() ||
      std::any_of(result.removed_statuses.begin(), result.removed_statuses.end(),
                  [](const ObjectRef& ref) { return ref.kind == kXdsAuthorityKind; });
  pending_removals.clear();
  if (authorities_changed || build_number == 1) ApplyAuthorities();

  // New and changed objects.
  // Each object's own checks depend on nothing else: spread a large batch
  // (a first build) over the cores.
  std::vector<internal::OwnValidation> validated = ValidateAll(pending_resources);
  ReleaseSpecs(validated);
  size_t next_validated = 0;
  std::set<ObjectRef> deferred;
  for (auto& [ref, pending] : pending_resources) {
    internal::OwnValidation& own = validated[next_validated++];
    result_->search_steps += own.search_steps;
    if (own.deferred) {
      // Its turn comes in the next build; until then nothing changes for it.
      deferred.insert(ref);
      continue;
    }
    auto [it, inserted] = entries.try_emplace(ref);
    Entry& entry = it->second;
    const ResourceObject& object = pending.first;
    entry.object.ref = object.ref;
    entry.object.generation = object.generation;
    entry.object.location = object.location;
    SetGeneratedFrom(entry, object.generated_from, &claim_names);
    entry.digest = *pending.second;
    if (inserted && seed != nullptr) entry.served = seed->FindByOwner(ref);
    Touch(entry);
    entry.own = std::move(own);
    Declare(entry, entry.own.type != nullptr && !entry.own.served_name.empty()
                       ? std::optional<NameKey>(NameKey(entry.own.type, entry.own.served_name))
                       : std::nullopt);
    ++result_->validated_objects;
    if (entry.own.variant_set_searched) ++result_->variant_set_searches;
    Readmit(entry);
    entry.new_problems.clear();
    entry.fallback_problem.reset();
  }
  for (auto it = pending_resources.begin(); it != pending_resources.end();) {
    it = deferred.count(it->first) > 0 ? std::next(it) : pending_resources.erase(it);
  }
  result.deferred_objects = static_cast<int64_t>(deferred.size());
  for (const auto& [ref, metadata] : pending_metadata) {
    auto it = entries.find(ref);
    if (it == entries.end()) continue;
    it->second.object.generation = metadata.generation;
    it->second.object.location = metadata.location;
    SetGeneratedFrom(it->second, metadata.generated_from, &claim_names);
    Touch(it->second);
  }
  pending_metadata.clear();

  if (seed != nullptr) {
    // Seeded fallbacks are not served until they win their names.
    for (const ObjectRef& ref : touched_) entries.at(ref).served = nullptr;
  }
  for (Entry* entry : TouchedEntries()) {
    UpdateClaim(*entry, &claim_names);
    Reindex(*entry);
  }
  // Claims follow what each object can still serve (an earlier revision
  // that stopped resolving is gone), which may hand a name to another
  // claimant: repeat until no claim moves (bounded: claims only shrink).
  std::set<ObjectRef> queue = touched_;
  for (int round = 0; round < 8 && (round == 0 || !queue.empty()); ++round) {
    const std::set<ObjectRef> moved = ResolveClaims(claim_names);
    queue.insert(moved.begin(), moved.end());
    Upgrade(queue);
    Prune(queue);
    claim_names.clear();
    for (Entry* entry : TouchedEntries()) {
      if (!entry->new_ok && entry->served == nullptr) entry->fallback = nullptr;
      UpdateClaim(*entry, &claim_names);
    }
    queue.clear();
    if (!claim_names.empty()) {
      const std::set<ObjectRef> next = ResolveClaims(claim_names);
      queue.insert(next.begin(), next.end());
      claim_names.clear();
    }
  }
  restatus_.insert(touched_.begin(), touched_.end());
  for (const ObjectRef& ref : restatus_) {
    Entry& entry = entries.at(ref);
    std::shared_ptr<const ObjectStatus> status = MakeStatus(entry);
    if (entry.status == nullptr || !(*entry.status == *status)) {
      if (entry.status != nullptr && !entry.status->accepted) --rejected;
      if (!status->accepted) ++rejected;
      entry.status = status;
      result.changed_statuses.push_back(std::move(status));
    }
  }

  // The next snapshot, derived from this one.
  std::vector<std::shared_ptr<const ServedResource>> upserts;
  std::vector<std::pair<const ResourceType*, std::string>> removals;
  for (const auto& [key, resource] : overlay_) {
    if (resource != nullptr) {
      upserts.push_back(resource);
    } else {
      removals.push_back(key);
    }
  }
  if (!upserts.empty() || !removals.empty() || seed != nullptr ||
      snapshot->shared_access() != table.access) {
    std::shared_ptr<const Snapshot> next =
        Snapshot::Derive(*snapshot, upserts, removals, table.access);
    if (next->version() != snapshot->version() || seed != nullptr) {
      snapshot = std::move(next);
      result.snapshot_changed = true;
    }
  }
  seed = nullptr;
  result.snapshot = snapshot;
  result_ = nullptr;
  return result;
}

IncrementalBuilder::IncrementalBuilder(BuildOptions options)
    : options_(std::move(options)),
      state_(std::make_unique<State>(options_)),
      snapshot_(std::make_shared<const Snapshot>()) {}

IncrementalBuilder::~IncrementalBuilder() = default;

void IncrementalBuilder::Upsert(ResourceObject object) {
  state_->pending_removals.erase(object.ref);
  auto it = state_->entries.find(object.ref);
  // A new object's digest is left to Build(), which spreads a first build's
  // over the cores.
  std::optional<Digest128> digest;
  if (it != state_->entries.end()) digest = SpecDigest(object);
  if (it != state_->entries.end() && state_->pending_resources.count(object.ref) == 0 &&
      it->second.digest == *digest) {
    // Same content: only what labels the status may change.
    if (it->second.object.generation != object.generation ||
        it->second.object.location != object.location ||
        it->second.object.generated_from != object.generated_from) {
      state_->pending_metadata[object.ref] = {object.generation, object.location,
                                              std::move(object.generated_from)};
    } else {
      // Back to what is held: a change recorded earlier in this batch is void.
      state_->pending_metadata.erase(object.ref);
    }
    return;
  }
  state_->pending_metadata.erase(object.ref);
  const ObjectRef ref = object.ref;
  state_->pending_resources[ref] = {std::move(object), std::move(digest)};
}

void IncrementalBuilder::Upsert(AuthorityObject object) {
  state_->pending_removals.erase(object.ref);
  auto it = state_->authorities.find(object.ref);
  if (it != state_->authorities.end() && state_->pending_authorities.count(object.ref) == 0 &&
      SameAuthority(it->second, object) && it->second.generation == object.generation &&
      it->second.location == object.location) {
    return;
  }
  state_->pending_authorities[object.ref] = std::move(object);
}

void IncrementalBuilder::Remove(const ObjectRef& ref) {
  state_->pending_resources.erase(ref);
  state_->pending_authorities.erase(ref);
  state_->pending_metadata.erase(ref);
  if (state_->entries.count(ref) > 0 || state_->authorities.count(ref) > 0) {
    state_->pending_removals.insert(ref);
  }
}

bool IncrementalBuilder::has_pending() const {
  return !state_->pending_resources.empty() || !state_->pending_authorities.empty() ||
         !state_->pending_removals.empty() || !state_->pending_metadata.empty() ||
         !state_->pending_last_good.empty();
}

void IncrementalBuilder::SetLastGoodLookup(LastGoodLookup lookup) {
  state_->last_good_lookup = std::move(lookup);
  state_->last_good.clear();
}

void IncrementalBuilder::LastGoodChanged(const ObjectRef& ref) {
  state_->last_good.erase(ref);
  auto it = state_->entries.find(ref);
  if (it != state_->entries.end() && it->second.served == nullptr) {
    state_->pending_last_good.insert(ref);
  }
}

void IncrementalBuilder::SeedFallbacks(const Snapshot* previous) { state_->seed = previous; }

IncrementalBuilder::Result IncrementalBuilder::Build() {
  Result result = state_->Build();
  snapshot_ = result.snapshot;
  rejected_ = state_->rejected;
  return result;
}

IncrementalBuilder::Result IncrementalBuilder::BuildUntilDecided() {
  // Objects a build's search budget left for later are checked by the
  // builds that follow.
  Result result = Build();
  while (result.deferred_objects > 0) result = Build();
  return result;
}

std::vector<std::shared_ptr<const ObjectStatus>> IncrementalBuilder::Statuses() const {
  std::vector<std::shared_ptr<const ObjectStatus>> out;
  out.reserve(state_->entries.size() + state_->authority_statuses.size());
  for (const auto& [ref, status] : state_->authority_statuses) out.push_back(status);
  for (const auto& [ref, entry] : state_->entries) {
    if (entry.status != nullptr) out.push_back(entry.status);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a->ref < b->ref; });
  return out;
}

std::shared_ptr<const ObjectStatus> IncrementalBuilder::StatusOf(const ObjectRef& ref) const {
  auto it = state_->entries.find(ref);
  if (it != state_->entries.end()) return it->second.status;
  auto authority = state_->authority_statuses.find(ref);
  return authority == state_->authority_statuses.end() ? nullptr : authority->second;
}

size_t IncrementalBuilder::object_count() const {
  return state_->entries.size() + state_->authorities.size();
}

}  // namespace facet::xds
