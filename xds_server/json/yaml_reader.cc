#include "xds_server/json/yaml_reader.h"

#include <istream>
#include <streambuf>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "xds_server/common/log_text.h"
#include "xds_server/json/yaml_detail.h"
#include "yaml-cpp/anchor.h"
#include "yaml-cpp/depthguard.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/exceptions.h"
#include "yaml-cpp/mark.h"
#include "yaml-cpp/parser.h"

#include <yaml.h>  // libyaml

namespace facet::json {
namespace {

using DetailNode = YAML::detail::node;
using Wrapper = internal::YamlDetailAccess;

YamlPosition PositionOf(const YAML::Mark& mark) { return {mark.line + 1, mark.column + 1}; }

std::string Where(const YAML::Mark& mark) {
  return absl::StrCat(mark.line + 1, ":", mark.column + 1);
}

// Builds documents from parser events with yaml-cpp's detail API, as
// YAML::Load does: every node is created in the text's one memory pool and
// attached to its parent directly, so each node costs the same whatever the
// document's size, and no Node handle (a reference-counted copy of the
// pool's pointer) is made per node. After the first problem it records
// nothing more.
class BoundedBuilder : public YAML::EventHandler {
 public:
  // `check_progress`: fail a document that does not start after the
  // previous one (a yaml-cpp loop; libyaml always moves on).
  BoundedBuilder(const YamlLimits& limits, bool check_progress)
      : limits_(limits), check_progress_(check_progress) {}

  const std::optional<YamlReadError>& error() const { return error_; }
  // The document being read (complete or not).
  YAML::Node root() const {
    if (root_ != nullptr) return Wrapper::Wrap(*root_, memory_);
    return in_document_ ? YAML::Node(YAML::NodeType::Null) : YAML::Node();
  }

  // Returns the document read since the last call.
  YamlDocument TakeDocument() {
    YamlDocument document{root(), position_, std::move(item_positions_)};
    root_ = nullptr;
    in_document_ = false;
    item_positions_.clear();
    return document;
  }

  void OnDocumentStart(const YAML::Mark& mark) override {
    // yaml-cpp reads some invalid text (a line of "?" in a block map, say) as
    // an endless run of empty documents, all at one position: a document that
    // does not start after the previous one is that loop.
    if (check_progress_ && last_document_start_.has_value() &&
        mark.pos <= *last_document_start_) {
      Fail(mark, "not valid YAML: the parser makes no progress here");
    }
    last_document_start_ = mark.pos;
    stack_.clear();
    anchors_.clear();
    anchor_names_.clear();
    object_.reset();
    // Every node of the text is created in one yaml-cpp pool, so that
    // attaching a node merges nothing and key nodes can be shared.
    if (memory_ == nullptr) memory_ = std::make_shared<YAML::detail::memory_holder>();
    root_ = nullptr;
    in_document_ = true;
    position_ = YamlPosition();
    item_positions_.clear();
  }
  void OnDocumentEnd() override {}

  void OnAnchor(const YAML::Mark& /*mark*/, const std::string& name) override {
    pending_anchor_name_ = name;
  }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (failed() || !AcceptValue(mark, "null")) return;
    BeginValue();
    if (!Count(mark, 1, 0)) return;
    DetailNode& node = memory_->create_node();
    node.set_null();
    Place(mark, node);
    Anchor(anchor, node, 1, 0);
    EndScalarObject();
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (failed()) return;
    const bool is_key = !stack_.empty() && stack_.back().is_map && !stack_.back().has_key;
    if (!is_key) BeginValue();
    if (!Count(mark, 1, value.size())) return;
    DetailNode& node = is_key ? KeyNode(tag, value) : memory_->create_node();
    if (!is_key) {
      node.set_scalar(value);
      node.set_tag(tag);
    }
    if (is_key) {
      Open& map = stack_.back();
      // Keys are viewed in their nodes, which the document keeps unchanged.
      if (const YAML::Mark* first = map.AddKey(node.scalar(), mark); first != nullptr) {
        Fail(mark, absl::StrCat("duplicate key \"", value, "\" in a map (first at ", Where(*first),
                                "); a key may appear once, as the Kubernetes API requires"));
        return;
      }
      map.key = &node;
      map.has_key = true;
    } else {
      Place(mark, node);
    }
    Anchor(anchor, node, 1, value.size());
    if (!is_key) EndScalarObject();
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (failed() || !AcceptValue(mark, "an alias")) return;
    auto it = anchors_.find(anchor);
    const std::string name = AnchorName(anchor);
    if (it == anchors_.end() || !it->second.complete) {
      Fail(mark, absl::StrCat("alias *", name,
                              " is inside the node it refers to (a cycle has no JSON form)"));
      return;
    }
    const Anchored& target = it->second;
    BeginValue();
    if (!Count(mark, target.nodes, target.bytes, &name)) return;
    Place(mark, *target.node);
    EndScalarObject();
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value style) override {
    StartContainer(mark, tag, anchor, style, /*is_map=*/false);
  }
  void OnSequenceEnd() override { EndContainer(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value style) override {
    StartContainer(mark, tag, anchor, style, /*is_map=*/true);
  }
  void OnMapEnd() override { EndContainer(); }

 private:
  struct Open {
    DetailNode* node = nullptr;
    bool is_map = false;
    YAML::anchor_t anchor = YAML::NullAnchor;
    // The counters when this node opened (itself not counted).
    size_t nodes_before = 0;
    size_t bytes_before = 0;
    // Maps: the key waiting for its value, and every key seen (in a list
    // while the map is small, then in a hash map).
    bool has_key = false;
    DetailNode* key = nullptr;
    std::vector<std::pair<absl::string_view, YAML::Mark>> few_keys;
    absl::flat_hash_map<absl::string_view, YAML::Mark> many_keys;

    // Records `key`; returns where it was first seen if it was already.
    const YAML::Mark* AddKey(absl::string_view key, const YAML::Mark& mark) {
      constexpr size_t kFew = 16;
      if (many_keys.empty()) {
        for (const auto& [seen, at] : few_keys) {
          if (seen == key) return &at;
        }
        if (few_keys.size() < kFew) {
          few_keys.emplace_back(key, mark);
          return nullptr;
        }
        many_keys.insert(few_keys.begin(), few_keys.end());
        few_keys.clear();
      }
      auto [it, inserted] = many_keys.try_emplace(key, mark);
      return inserted ? nullptr : &it->second;
    }
    // The `items` list of a document's root map: record item positions.
    bool items = false;
    size_t elements = 0;  // Lists: how many elements were placed.
  };

  // An object of YamlLimits::object_paths being read.
  struct OpenObject {
    size_t stack_index = 0;  // Where its container is (or would be) in stack_.
    size_t nodes_before = 0;
    size_t bytes_before = 0;
    std::string label;  // Its path, e.g. "items[3]".
  };

  struct Anchored {
    DetailNode* node = nullptr;
    bool complete = false;  // False while the anchored container is open.
    size_t nodes = 0;       // Expanded size of its subtree.
    size_t bytes = 0;
  };

  bool failed() const { return error_.has_value(); }

  // Escapes `message` (xds::EscapeText): it may quote the text's bytes.
  void Fail(const YAML::Mark& mark, const std::string& message) {
    if (!failed()) error_ = YamlReadError{PositionOf(mark), xds::EscapeText(message)};
  }

  std::string AnchorName(YAML::anchor_t anchor) const {
    auto it = anchor_names_.find(anchor);
    return it == anchor_names_.end() ? absl::StrCat(anchor) : it->second;
  }

  // Starts an object of YamlLimits::object_paths when the value about to be
  // placed is at one of them (and no object is open already).
  void BeginValue() {
    if (object_.has_value()) return;
    for (const std::vector<absl::string_view>& path : limits_.object_paths) {
      if (path.size() != stack_.size() || path.empty()) continue;
      std::string label;
      bool matches = true;
      for (size_t i = 0; i < path.size() && matches; ++i) {
        const Open& open = stack_[i];
        const bool innermost = i + 1 == path.size();
        if (path[i] == kEachElement) {
          matches = !open.is_map;
          // An enclosing list's current element was placed already.
          absl::StrAppend(&label, "[", innermost ? open.elements : open.elements - 1, "]");
        } else {
          matches = open.is_map && (!innermost || open.has_key) && open.key->scalar() == path[i];
          absl::StrAppend(&label, i == 0 ? "" : ".", path[i]);
        }
      }
      if (matches) {
        object_ = OpenObject{stack_.size(), nodes_, bytes_, std::move(label)};
        return;
      }
    }
  }

  // Ends an object that was a single scalar, null or alias.
  void EndScalarObject() {
    if (object_.has_value() && object_->stack_index == stack_.size()) object_.reset();
  }

  // Fails unless `nodes` and `bytes` more fit in `max_nodes` and `max_bytes`
  // with `used_nodes` and `used_bytes` taken: the limits of `object` (its
  // label), or of the whole text when null. `alias` as for Count.
  bool Fits(const YAML::Mark& mark, size_t nodes, size_t bytes, size_t used_nodes,
            size_t used_bytes, size_t max_nodes, size_t max_bytes, const std::string* object,
            const std::string* alias) {
    const bool too_many = nodes > max_nodes - used_nodes;
    if (!too_many && bytes <= max_bytes - used_bytes) return true;
    const std::string via =
        alias == nullptr ? "" : absl::StrCat(" (alias *", *alias, " repeats ", nodes,
                                             " nodes and ", bytes, " bytes)");
    const std::string per =
        object != nullptr ? "object"
                          : absl::StrCat(limits_.unit, limits_.advice.empty() ? "" : ": ",
                                         limits_.advice);
    Fail(mark, absl::StrCat(object != nullptr ? absl::StrCat(*object, " has more") : "more",
                            " than ",
                            too_many ? absl::StrCat(max_nodes, " YAML nodes, counting each alias "
                                                               "as the nodes it repeats")
                                     : absl::StrCat(max_bytes, " bytes of keys and values, "
                                                               "counting each alias as the bytes "
                                                               "it repeats"),
                            via, "; that is the limit per ", per));
    return false;
  }

  // Adds `nodes` and `bytes` to the document's totals (and the open
  // object's); fails past a limit. `alias` names the alias that repeats
  // them, if one does.
  bool Count(const YAML::Mark& mark, size_t nodes, size_t bytes,
             const std::string* alias = nullptr) {
    if (object_.has_value() &&
        !Fits(mark, nodes, bytes, nodes_ - object_->nodes_before, bytes_ - object_->bytes_before,
              limits_.per_object.max_nodes, limits_.per_object.max_scalar_bytes, &object_->label,
              alias)) {
      return false;
    }
    if (!Fits(mark, nodes, bytes, nodes_, bytes_, limits_.max_nodes, limits_.max_scalar_bytes,
              /*object=*/nullptr, alias)) {
      return false;
    }
    nodes_ += nodes;
    bytes_ += bytes;
    return true;
  }

  // Checks that a non-scalar node may stand where it is (not as a map key).
  bool AcceptValue(const YAML::Mark& mark, absl::string_view what) {
    if (!stack_.empty() && stack_.back().is_map && !stack_.back().has_key) {
      Fail(mark, absl::StrCat("map keys must be strings, found ", what));
      return false;
    }
    return true;
  }

  // Attaches `node` to the open container (or makes it the root).
  // Returns the text's node for a map key: one per distinct key and tag,
  // shared by every map that holds the key, as an alias shares its anchor
  // (about a third of a manifest's nodes are keys, most of them repeated).
  DetailNode& KeyNode(const std::string& tag, const std::string& value) {
    auto it = keys_.find(std::make_pair(absl::string_view(tag), absl::string_view(value)));
    if (it != keys_.end()) return *it->second;
    DetailNode& node = memory_->create_node();
    node.set_scalar(value);
    node.set_tag(tag);
    // Viewed in the node, which the document keeps unchanged.
    keys_.emplace(std::make_pair(absl::string_view(node.tag()), absl::string_view(node.scalar())),
                  &node);
    return node;
  }

  void Place(const YAML::Mark& mark, DetailNode& node) {
    if (stack_.empty()) {
      root_ = &node;
      position_ = PositionOf(mark);
      return;
    }
    Open& parent = stack_.back();
    if (parent.is_map) {
      parent.node->insert(*parent.key, node, memory_);
      parent.has_key = false;
    } else {
      if (parent.items) item_positions_.push_back(PositionOf(mark));
      parent.node->push_back(node, memory_);
      ++parent.elements;
    }
  }

  void Anchor(YAML::anchor_t anchor, DetailNode& node, size_t nodes, size_t bytes) {
    if (anchor == YAML::NullAnchor) return;
    anchor_names_[anchor] = std::move(pending_anchor_name_);
    anchors_.erase(anchor);
    anchors_.emplace(anchor, Anchored{&node, /*complete=*/true, nodes, bytes});
  }

  void StartContainer(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                      YAML::EmitterStyle::value style, bool is_map) {
    if (failed() || !AcceptValue(mark, is_map ? "a map" : "a list")) return;
    BeginValue();
    if (object_.has_value() &&
        stack_.size() - object_->stack_index >= static_cast<size_t>(limits_.per_object.max_depth)) {
      Fail(mark, absl::StrCat(object_->label, " has lists and maps nested more than ",
                              limits_.per_object.max_depth, " levels deep (the limit per object)"));
      return;
    }
    if (stack_.size() >= static_cast<size_t>(limits_.max_depth)) {
      Fail(mark, absl::StrCat("lists and maps nested more than ", limits_.max_depth,
                              " levels deep (the limit)"));
      return;
    }
    Open open;
    open.nodes_before = nodes_;
    open.bytes_before = bytes_;
    if (!Count(mark, 1, 0)) return;
    open.node = &memory_->create_node();
    open.node->set_type(is_map ? YAML::NodeType::Map : YAML::NodeType::Sequence);
    open.node->set_tag(tag);
    open.node->set_style(style);
    open.is_map = is_map;
    open.anchor = anchor;
    open.items = !is_map && stack_.size() == 1 && stack_[0].is_map && stack_[0].has_key &&
                 stack_[0].key->scalar() == "items";
    Place(mark, *open.node);
    if (anchor != YAML::NullAnchor) {
      anchor_names_[anchor] = std::move(pending_anchor_name_);
      anchors_.erase(anchor);
      anchors_.emplace(anchor, Anchored{open.node, /*complete=*/false, 0, 0});
    }
    stack_.push_back(std::move(open));
  }

  void EndContainer() {
    if (failed() || stack_.empty()) return;
    Open& open = stack_.back();
    if (open.anchor != YAML::NullAnchor) {
      Anchored& anchored = anchors_.at(open.anchor);
      anchored.complete = true;
      anchored.nodes = nodes_ - open.nodes_before;
      anchored.bytes = bytes_ - open.bytes_before;
    }
    stack_.pop_back();
    if (object_.has_value() && object_->stack_index == stack_.size()) object_.reset();
  }

  const YamlLimits& limits_;
  const bool check_progress_;
  std::optional<YamlReadError> error_;
  // Totals over the whole text, aliases expanded.
  size_t nodes_ = 0;
  size_t bytes_ = 0;
  // The text's pool, and the root of the document being read once placed.
  YAML::detail::shared_memory_holder memory_;
  DetailNode* root_ = nullptr;
  bool in_document_ = false;
  // The text's key nodes by (tag, scalar).
  absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, DetailNode*> keys_;
  YamlPosition position_;
  std::vector<YamlPosition> item_positions_;
  std::vector<Open> stack_;
  std::optional<OpenObject> object_;
  absl::flat_hash_map<YAML::anchor_t, Anchored> anchors_;
  absl::flat_hash_map<YAML::anchor_t, std::string> anchor_names_;
  std::string pending_anchor_name_;
  std::optional<int> last_document_start_;  // Mark::pos, in bytes.
};

// An input buffer over text that outlives it (no copy).
class ViewBuffer : public std::streambuf {
 public:
  explicit ViewBuffer(absl::string_view text) {
    char* begin = const_cast<char*>(text.data());
    setg(begin, begin, begin + text.size());
  }
};

// The same as yaml-cpp's IsNullString: the plain scalars yaml-cpp reports
// as null (OnNull) when they carry no tag.
bool IsNullString(absl::string_view value) {
  return value.empty() || value == "~" || value == "null" || value == "Null" || value == "NULL";
}

YAML::Mark MarkOf(const yaml_mark_t& mark) {
  YAML::Mark out;
  out.pos = static_cast<int>(mark.index);
  out.line = static_cast<int>(mark.line);
  out.column = static_cast<int>(mark.column);
  return out;
}

absl::string_view View(const yaml_char_t* text) {
  return text == nullptr ? absl::string_view() : reinterpret_cast<const char*>(text);
}

// Feeds `builder` the events libyaml parses from `text`, as yaml-cpp's
// parser would report them (the same tags for untagged nodes, nulls, styles
// and anchors). Returns false when libyaml refuses the text (or an alias
// names no anchor): then nothing read is to be used. `documents` receives
// every document read until the builder reports a problem.
bool ReadWithLibyaml(absl::string_view text, BoundedBuilder& builder,
                     std::vector<YamlDocument>* documents) {
  yaml_parser_t parser;
  if (yaml_parser_initialize(&parser) == 0) return false;
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  // Anchor names to the ids yaml-cpp would give them (1, 2, ... in order of
  // definition; a redefined name refers to its latest node).
  absl::flat_hash_map<std::string, YAML::anchor_t> anchors;
  YAML::anchor_t next_anchor = 1;
  auto anchor_of = [&](const yaml_mark_t& mark, const yaml_char_t* name) -> YAML::anchor_t {
    if (name == nullptr) return YAML::NullAnchor;
    const std::string key(View(name));
    const YAML::anchor_t id = next_anchor++;
    anchors[key] = id;
    builder.OnAnchor(MarkOf(mark), key);
    return id;
  };
  auto collection_tag = [](const yaml_char_t* tag) {
    return tag == nullptr ? std::string("?") : std::string(View(tag));
  };
  auto style = [](bool flow) { return flow ? YAML::EmitterStyle::Flow : YAML::EmitterStyle::Block; };
  // Reused for every scalar, so that passing one on allocates nothing.
  std::string tag_buffer;
  std::string value_buffer;
  bool ok = true;
  bool done = false;
  while (!done) {
    yaml_event_t event;
    if (yaml_parser_parse(&parser, &event) == 0) {
      ok = false;
      break;
    }
    const YAML::Mark mark = MarkOf(event.start_mark);
    if (builder.error().has_value()) {
      // As with yaml-cpp, the rest of the document is parsed: invalid YAML
      // there is the answer rather than what the events showed before it.
      done = event.type == YAML_DOCUMENT_END_EVENT || event.type == YAML_STREAM_END_EVENT;
      yaml_event_delete(&event);
      continue;
    }
    switch (event.type) {
      case YAML_STREAM_END_EVENT:
        done = true;
        break;
      case YAML_DOCUMENT_START_EVENT:
        builder.OnDocumentStart(mark);
        break;
      case YAML_DOCUMENT_END_EVENT:
        builder.OnDocumentEnd();
        if (!builder.error().has_value()) documents->push_back(builder.TakeDocument());
        break;
      case YAML_ALIAS_EVENT: {
        auto it = anchors.find(View(event.data.alias.anchor));
        if (it == anchors.end()) {
          ok = false;  // yaml-cpp says why.
          done = true;
          break;
        }
        builder.OnAlias(mark, it->second);
        break;
      }
      case YAML_SCALAR_EVENT: {
        const auto& scalar = event.data.scalar;
        const YAML::anchor_t anchor = anchor_of(event.start_mark, scalar.anchor);
        const absl::string_view value(reinterpret_cast<const char*>(scalar.value), scalar.length);
        const bool plain = scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if (scalar.tag == nullptr && plain && IsNullString(value)) {
          builder.OnNull(mark, anchor);
        } else {
          const absl::string_view tag =
              scalar.tag != nullptr ? View(scalar.tag) : (plain ? "?" : "!");
          tag_buffer.assign(tag.data(), tag.size());
          value_buffer.assign(value.data(), value.size());
          builder.OnScalar(mark, tag_buffer, anchor, value_buffer);
        }
        break;
      }
      case YAML_SEQUENCE_START_EVENT: {
        const auto& start = event.data.sequence_start;
        builder.OnSequenceStart(mark, collection_tag(start.tag),
                                anchor_of(event.start_mark, start.anchor),
                                style(start.style == YAML_FLOW_SEQUENCE_STYLE));
        break;
      }
      case YAML_SEQUENCE_END_EVENT:
        builder.OnSequenceEnd();
        break;
      case YAML_MAPPING_START_EVENT: {
        const auto& start = event.data.mapping_start;
        builder.OnMapStart(mark, collection_tag(start.tag), anchor_of(event.start_mark, start.anchor),
                           style(start.style == YAML_FLOW_MAPPING_STYLE));
        break;
      }
      case YAML_MAPPING_END_EVENT:
        builder.OnMapEnd();
        break;
      case YAML_STREAM_START_EVENT:
      case YAML_NO_EVENT:
        break;
    }
    yaml_event_delete(&event);
  }
  yaml_parser_delete(&parser);
  return ok;
}

// Finishes `out` from what `builder` found.
void SetBuilderError(const BoundedBuilder& builder, YamlDocuments* out) {
  if (!out->error.has_value() && builder.error().has_value()) {
    out->error = builder.error();
    out->partial.reset(builder.root());
  }
  if (out->error.has_value()) out->documents.clear();
}

}  // namespace

namespace internal {

YamlDocuments ReadYamlDocumentsWithYamlCpp(absl::string_view text, const YamlLimits& limits) {
  YamlDocuments out;
  ViewBuffer buffer(text);
  std::istream in(&buffer);
  BoundedBuilder builder(limits, /*check_progress=*/true);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
      if (builder.error().has_value()) break;
      out.documents.push_back(builder.TakeDocument());
    }
  } catch (const YAML::Exception& e) {
    // The depth bound, passed before yaml-cpp's recursion guard gave up (a
    // few hundred levels past it), is the error. Otherwise yaml-cpp's is: a
    // problem the events showed just before may only follow from the text
    // yaml-cpp could not parse (a text cut short inside a flow map).
    const bool deep = dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr;
    if (!deep || !builder.error().has_value()) {
      // What yaml-cpp says when a key is longer than YAML allows an implicit
      // key to be (1,024 characters), even in valid JSON.
      const bool maybe_long_key =
          e.msg == YAML::ErrorMsg::END_OF_MAP_FLOW || e.msg == YAML::ErrorMsg::MAP_VALUE;
      // yaml-cpp's message may quote a byte of the text ("unknown escape
      // character: " and the byte, a NUL included): escaped.
      out.error = YamlReadError{
          PositionOf(e.mark),
          absl::StrCat("not valid YAML: ", xds::EscapeText(e.msg),
                       maybe_long_key ? " (or a map key is longer than 1024 characters, the "
                                        "limit for a key in YAML, JSON included)"
                                      : "")};
    }
  }
  SetBuilderError(builder, &out);
  return out;
}

}  // namespace internal

YamlDocuments ReadYamlDocuments(absl::string_view text, const YamlLimits& limits) {
  // libyaml's parser is several times faster than yaml-cpp's (0.15 s
  // against 0.85 s for the load world's 8 MB). A text libyaml refuses is
  // read again by yaml-cpp, which decides as it always did: what is
  // accepted and every message about invalid YAML stay yaml-cpp's.
  YamlDocuments out;
  BoundedBuilder builder(limits, /*check_progress=*/false);
  if (!ReadWithLibyaml(text, builder, &out.documents)) {
    return internal::ReadYamlDocumentsWithYamlCpp(text, limits);
  }
  SetBuilderError(builder, &out);
  return out;
}

}  // namespace facet::json
