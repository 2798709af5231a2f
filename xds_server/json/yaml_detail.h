// yaml-cpp's detail API for the json component's hot loops, which build and
// read documents without a yaml-cpp Node per node (each Node is a counted
// reference to its document's pool, taken and dropped atomically). Not for
// use outside xds_server/json.
#ifndef FACET_XDS_SERVER_JSON_YAML_DETAIL_H_
#define FACET_XDS_SERVER_JSON_YAML_DETAIL_H_

#include <utility>

#include "yaml-cpp/node/detail/memory.h"
#include "yaml-cpp/node/detail/node.h"
#include "yaml-cpp/node/impl.h"
#include "yaml-cpp/yaml.h"

namespace facet::json::internal {
// Names the one specialization of YAML::as_if below.
struct YamlDetail;
}  // namespace facet::json::internal

namespace YAML {
// yaml-cpp's Node befriends every as_if<T, S>: this specialization is where
// Facet reaches past Node, as yaml-cpp's own (unexported) NodeBuilder does
// for YAML::Load.
template <>
struct as_if<facet::json::internal::YamlDetail, void> {
  // Returns the node `node` refers to; null for an invalid Node (a missing
  // key's zombie) or one made without a node.
  static detail::node* NodeOf(const Node& node) {
    return node.m_isValid ? node.m_pNode : nullptr;
  }
  // Returns the pool of `node`'s document.
  static const detail::shared_memory_holder& MemoryOf(const Node& node) { return node.m_pMemory; }
  // Returns a Node for `node` of the document whose pool is `memory`.
  static Node Wrap(detail::node& node, detail::shared_memory_holder memory) {
    return Node(node, std::move(memory));
  }
};
}  // namespace YAML

namespace facet::json::internal {
using YamlDetailAccess = YAML::as_if<YamlDetail, void>;
}  // namespace facet::json::internal

#endif  // FACET_XDS_SERVER_JSON_YAML_DETAIL_H_
