#ifndef FACET_XDS_SERVER_ADS_FAIR_QUEUE_H_
#define FACET_XDS_SERVER_ADS_FAIR_QUEUE_H_

#include <cstddef>
#include <deque>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace facet::xds {

// A queue served round-robin by key (a connection): Pop takes the oldest item
// of the key whose turn it is and passes the turn to the next key with items.
// An item pushed under a key with none waiting is popped after at most one
// item of each other key waiting then: the number of keys ahead of it, not
// the number of their items, bounds its wait. O(1) per Push and Pop. Not
// thread-safe: its owner locks.
template <typename T>
class FairQueue {
 public:
  void Push(absl::string_view key, T item) {
    auto [line, inserted] = lines_.try_emplace(key);
    if (inserted) turns_.emplace_back(key);
    line->second.push_back(std::move(item));
    ++size_;
  }

  // Returns the oldest item of the key whose turn it is. Requires !empty().
  T Pop() {
    std::string key = std::move(turns_.front());
    turns_.pop_front();
    auto line = lines_.find(key);
    T item = std::move(line->second.front());
    line->second.pop_front();
    --size_;
    if (line->second.empty()) {
      lines_.erase(line);
    } else {
      turns_.push_back(std::move(key));
    }
    return item;
  }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

 private:
  // Items by key; a key is here, and once in turns_, while it has items.
  absl::flat_hash_map<std::string, std::deque<T>> lines_;
  std::deque<std::string> turns_;
  size_t size_ = 0;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_FAIR_QUEUE_H_
