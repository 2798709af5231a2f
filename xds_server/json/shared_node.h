// A yaml-cpp node that is held, not edited: a member or container value that
// refers into a tree other holders read too (the Kubernetes watch cache's
// objects, a parsed manifest).
//
// YAML::Node's own operator= writes through to the tree the node already
// refers to (and so into every copy sharing it), its non-const operator[]
// inserts a missing key (even to read), and its copy constructor is not
// noexcept. A SharedNode is a YAML::Node whose assignment rebinds and whose
// moves are noexcept, so a struct that holds one can keep its defaulted
// copy, move and assignment, live in a growing vector without being copied,
// and be replaced in a map (`pending[key] = delta`) without changing what a
// copy elsewhere reads. It reads as a const YAML::Node: operator[], begin()
// and end() are the const ones, and the mutators (push_back, remove,
// force_insert, SetTag, SetStyle, assigning a value) do not compile. To build
// a changed tree, YAML::Clone it into a plain YAML::Node.
#ifndef FACET_XDS_SERVER_JSON_SHARED_NODE_H_
#define FACET_XDS_SERVER_JSON_SHARED_NODE_H_

#include <new>

#include "yaml-cpp/yaml.h"

namespace facet::json {

class SharedNode final : public YAML::Node {
 public:
  SharedNode() = default;
  // Implicit: a SharedNode is a YAML::Node held under these rules.
  SharedNode(const YAML::Node& node) : YAML::Node(node) {}  // NOLINT(runtime/explicit)

  // Copying a valid node only adds a reference to its tree; the allocation a
  // copy can make (the key of an invalid node) is treated as fatal.
  // (Cast: YAML::Node's template constructor would take a SharedNode as a
  // value to convert.)
  SharedNode(const SharedNode& other) noexcept
      : YAML::Node(static_cast<const YAML::Node&>(other)) {}
  SharedNode(SharedNode&& other) noexcept : YAML::Node(static_cast<const YAML::Node&>(other)) {}

  SharedNode& operator=(const SharedNode& other) noexcept {
    Rebind(other);
    return *this;
  }
  SharedNode& operator=(SharedNode&& other) noexcept {
    Rebind(other);
    return *this;
  }
  SharedNode& operator=(const YAML::Node& other) noexcept {
    Rebind(other);
    return *this;
  }
  // Hides YAML::Node's template operator=(const T&), which would write a
  // value into the shared tree.
  template <typename T>
  SharedNode& operator=(const T&) = delete;

  // Reading only: these hide YAML::Node's non-const overloads.
  template <typename Key>
  const YAML::Node operator[](const Key& key) const {
    return node()[key];
  }
  YAML::const_iterator begin() const { return node().begin(); }
  YAML::const_iterator end() const { return node().end(); }
  template <typename... Args>
  void push_back(Args&&...) = delete;
  template <typename... Args>
  bool remove(Args&&...) = delete;
  template <typename... Args>
  void force_insert(Args&&...) = delete;
  template <typename... Args>
  void SetTag(Args&&...) = delete;
  template <typename... Args>
  void SetStyle(Args&&...) = delete;

  ~SharedNode() = default;

  // This node as a plain YAML::Node, for initialising one directly
  // (`YAML::Node copy(shared)` would pick YAML::Node's template constructor,
  // which takes a value to convert, and does not compile).
  const YAML::Node& node() const { return *this; }

 private:
  // Node::reset would do, but it throws when either node is invalid (what a
  // const node's operator[] returns for a missing key); a copy of `other`
  // put in this one's place is the same rebinding for every node.
  void Rebind(const YAML::Node& other) noexcept {
    if (static_cast<const YAML::Node*>(this) == &other) return;
    // `other` is a handle of its own, holding its tree: dropping this one's
    // reference cannot free what it refers to.
    this->~SharedNode();
    ::new (static_cast<void*>(this)) SharedNode(other);
  }
};

}  // namespace facet::json

#endif  // FACET_XDS_SERVER_JSON_SHARED_NODE_H_
