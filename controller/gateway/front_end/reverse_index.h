// A many-to-many relation kept from both sides, so that "who refers to K"
// is a lookup, never a scan: GRPCRoutes by parent or backend Service, slices
// by Service, routes by the namespaces their backendRefs reach.
#ifndef FACET_CONTROLLER_GATEWAY_FRONT_END_REVERSE_INDEX_H_
#define FACET_CONTROLLER_GATEWAY_FRONT_END_REVERSE_INDEX_H_

#include <cstddef>
#include <map>
#include <set>
#include <utility>

namespace facet::controller::gateway {

// Maps each value (a referring object) to its keys (what it refers to) and
// each key back to its values. Thread-compatible.
template <typename Key, typename Value>
class ReverseIndex {
 public:
  // Makes `keys` the keys of `value`: it leaves the keys it no longer has
  // and joins the new ones. Empty `keys` forget `value`.
  void Set(const Value& value, std::set<Key> keys) {
    auto it = keys_.find(value);
    if (it != keys_.end()) {
      for (const Key& key : it->second) {
        if (keys.count(key) == 0) Leave(key, value);
      }
    }
    for (const Key& key : keys) values_[key].insert(value);
    if (keys.empty()) {
      if (it != keys_.end()) keys_.erase(it);
    } else if (it != keys_.end()) {
      it->second = std::move(keys);
    } else {
      keys_.emplace(value, std::move(keys));
    }
  }

  // Forgets `value` (a no-op for an unknown one).
  void Erase(const Value& value) { Set(value, {}); }

  // Returns the values that have `key` (empty when none).
  const std::set<Value>& ValuesOf(const Key& key) const {
    auto it = values_.find(key);
    return it == values_.end() ? Empty<Value>() : it->second;
  }

  // Returns the keys of `value` (empty when unknown).
  const std::set<Key>& KeysOf(const Value& value) const {
    auto it = keys_.find(value);
    return it == keys_.end() ? Empty<Key>() : it->second;
  }

  // The number of keys some value has.
  size_t key_count() const { return values_.size(); }

 private:
  template <typename T>
  static const std::set<T>& Empty() {
    static const std::set<T>* const empty = new std::set<T>();
    return *empty;
  }

  void Leave(const Key& key, const Value& value) {
    auto it = values_.find(key);
    if (it == values_.end()) return;
    it->second.erase(value);
    if (it->second.empty()) values_.erase(it);
  }

  std::map<Value, std::set<Key>> keys_;
  std::map<Key, std::set<Value>> values_;
};

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_FRONT_END_REVERSE_INDEX_H_
