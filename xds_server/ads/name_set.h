// A sorted set of strings sized for the per-stream sets of StreamState.
#ifndef FACET_XDS_SERVER_ADS_NAME_SET_H_
#define FACET_XDS_SERVER_ADS_NAME_SET_H_

#include <cstddef>
#include <iterator>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/btree_set.h"

namespace facet::xds {

// A sorted set of names (a stream's names of one type to re-examine or
// answer, a name's rejected variant keys), for sets that are nearly always
// empty or hold one name. One pointer while empty; one allocation while it
// holds one name (the name that changed, in a push's sets); a tree from the
// second name on. Freed when the set empties again. Its iterators are
// invalidated by any change to the set.
class NameSet {
  using Set = absl::btree_set<std::string>;

 public:
  // Over the one name, or over the tree.
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string*;
    using reference = const std::string&;

    const_iterator() = default;
    reference operator*() const { return one_ != nullptr ? *one_ : *it_; }
    pointer operator->() const { return &**this; }
    const_iterator& operator++() {
      if (one_ != nullptr) {
        one_ = nullptr;
      } else {
        ++it_;
      }
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.one_ == b.one_ && a.it_ == b.it_;
    }
    friend bool operator!=(const const_iterator& a, const const_iterator& b) {
      return !(a == b);
    }

   private:
    friend class NameSet;
    const std::string* one_ = nullptr;  // The one name; null past it, or over a tree.
    Set::const_iterator it_;
  };

  NameSet() = default;
  NameSet(const NameSet& other)
      : rep_(other.rep_ == nullptr ? nullptr : std::make_unique<Rep>(*other.rep_)) {}
  NameSet& operator=(const NameSet& other) {
    rep_ = other.rep_ == nullptr ? nullptr : std::make_unique<Rep>(*other.rep_);
    return *this;
  }
  NameSet(NameSet&&) noexcept = default;
  NameSet& operator=(NameSet&&) noexcept = default;

  bool empty() const { return rep_ == nullptr; }
  size_t size() const {
    if (rep_ == nullptr) return 0;
    return HoldsOne() ? 1 : rep_->many.size();
  }
  size_t count(const std::string& name) const {
    if (rep_ == nullptr) return 0;
    return HoldsOne() ? (rep_->one == name ? 1 : 0) : rep_->many.count(name);
  }
  const_iterator begin() const {
    const_iterator it;
    if (rep_ == nullptr) return it;
    if (HoldsOne()) {
      it.one_ = &rep_->one;
    } else {
      it.it_ = rep_->many.begin();
    }
    return it;
  }
  const_iterator end() const {
    const_iterator it;
    if (rep_ != nullptr && !HoldsOne()) it.it_ = rep_->many.end();
    return it;
  }
  void insert(const std::string& name) {
    if (rep_ == nullptr) {
      rep_ = std::make_unique<Rep>();
      rep_->one = name;
    } else if (!HoldsOne()) {
      rep_->many.insert(name);
    } else if (rep_->one != name) {
      rep_->many.insert(std::move(rep_->one));
      rep_->one = std::string();
      rep_->many.insert(name);
    }
  }
  size_t erase(const std::string& name) {
    if (rep_ == nullptr) return 0;
    if (HoldsOne()) {
      if (rep_->one != name) return 0;
      rep_.reset();
      return 1;
    }
    const size_t erased = rep_->many.erase(name);
    if (rep_->many.empty()) rep_.reset();
    return erased;
  }
  template <typename Predicate>
  void EraseIf(Predicate predicate) {
    if (rep_ == nullptr) return;
    if (HoldsOne()) {
      if (predicate(rep_->one)) rep_.reset();
      return;
    }
    absl::erase_if(rep_->many, predicate);
    if (rep_->many.empty()) rep_.reset();
  }
  void clear() { rep_.reset(); }
  // Moves every name of `other` into this set, and empties `other` (unless
  // it is this set).
  void merge(NameSet& other) {
    if (&other == this || other.rep_ == nullptr) return;
    if (rep_ == nullptr) {
      rep_ = std::move(other.rep_);
      return;
    }
    for (const std::string& name : other) insert(name);
    other.clear();
  }

 private:
  struct Rep {
    std::string one;  // The name, while `many` is empty.
    Set many;         // Two names or more.
  };
  // Whether a non-empty set keeps its name in `one` (no tree made yet).
  bool HoldsOne() const { return rep_->many.empty(); }
  std::unique_ptr<Rep> rep_;  // Null when empty.
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_NAME_SET_H_
