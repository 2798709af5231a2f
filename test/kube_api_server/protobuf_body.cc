#include "test/kube_api_server/protobuf_body.h"

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace facet::testing {
namespace {

// Calls `field` for each field of one protobuf message (wire types 0 and 2;
// others are skipped). Returns false on malformed input.
bool ForEachField(
    absl::string_view message,
    const std::function<void(int number, uint64_t varint, absl::string_view bytes)>& field) {
  size_t pos = 0;
  auto read_varint = [&](uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= message.size()) return false;
      uint8_t byte = static_cast<uint8_t>(message[pos++]);
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  };
  while (pos < message.size()) {
    uint64_t key;
    if (!read_varint(&key)) return false;
    int number = static_cast<int>(key >> 3);
    switch (key & 7) {
      case 0: {
        uint64_t value;
        if (!read_varint(&value)) return false;
        field(number, value, {});
        break;
      }
      case 1:
        pos += 8;
        break;
      case 2: {
        uint64_t length;
        if (!read_varint(&length) || length > message.size() - pos) return false;
        field(number, 0, message.substr(pos, length));
        pos += length;
        break;
      }
      case 5:
        pos += 4;
        break;
      default:
        return false;
    }
  }
  return pos == message.size();
}

bool DecodeStringMap(absl::string_view entry, Json* map) {
  std::string key;
  std::string value;
  bool ok = ForEachField(entry, [&](int number, uint64_t, absl::string_view bytes) {
    if (number == 1) key = std::string(bytes);
    if (number == 2) value = std::string(bytes);
  });
  (*map)[key] = value;
  return ok;
}

// ObjectMeta: name=1 generateName=2 namespace=3 labels=11 annotations=12 finalizers=14.
bool DecodeObjectMeta(absl::string_view message, Json* metadata) {
  *metadata = Json::object();
  bool ok = true;
  bool parsed = ForEachField(message, [&](int number, uint64_t, absl::string_view bytes) {
    switch (number) {
      // Kubernetes' gogo protobuf writes empty strings too; JSON omits them.
      case 1:
        if (!bytes.empty()) (*metadata)["name"] = std::string(bytes);
        break;
      case 2:
        if (!bytes.empty()) (*metadata)["generateName"] = std::string(bytes);
        break;
      case 3:
        if (!bytes.empty()) (*metadata)["namespace"] = std::string(bytes);
        break;
      case 11:
        ok = ok && DecodeStringMap(bytes, &(*metadata)["labels"]);
        break;
      case 12:
        ok = ok && DecodeStringMap(bytes, &(*metadata)["annotations"]);
        break;
      case 14: {
        Json& finalizers = (*metadata)["finalizers"];
        if (!finalizers.is_array()) finalizers = Json::array();
        finalizers.push_back(Json(std::string(bytes)));
        break;
      }
      default:
        break;
    }
  });
  return ok && parsed;
}

}  // namespace

absl::StatusOr<Json> DecodeKubernetesProtobuf(absl::string_view body) {
  constexpr absl::string_view kMagic("k8s\0", 4);
  if (body.substr(0, 4) != kMagic) {
    return absl::InvalidArgumentError("protobuf body does not start with the k8s magic");
  }
  std::string api_version;
  std::string kind;
  absl::string_view raw;
  bool parsed = ForEachField(body.substr(4), [&](int number, uint64_t, absl::string_view bytes) {
    if (number == 1) {
      ForEachField(bytes, [&](int type_field, uint64_t, absl::string_view value) {
        if (type_field == 1) api_version = std::string(value);
        if (type_field == 2) kind = std::string(value);
      });
    } else if (number == 2) {
      raw = bytes;
    }
  });
  if (!parsed) return absl::InvalidArgumentError("malformed protobuf envelope");
  if (api_version != "v1" || kind != "Namespace") {
    return absl::UnimplementedError(
        absl::StrCat("protobuf bodies are only decoded for v1 Namespace, not ", api_version, " ",
                     kind, "; send JSON"));
  }
  Json object = Json::object();
  object["apiVersion"] = api_version;
  object["kind"] = kind;
  bool ok = true;
  parsed = ForEachField(raw, [&](int number, uint64_t, absl::string_view bytes) {
    if (number == 1) ok = ok && DecodeObjectMeta(bytes, &object["metadata"]);
    if (number == 2) {
      ForEachField(bytes, [&](int spec_field, uint64_t, absl::string_view value) {
        if (spec_field != 1) return;
        Json& finalizers = object["spec"]["finalizers"];
        if (!finalizers.is_array()) finalizers = Json::array();
        finalizers.push_back(Json(std::string(value)));
      });
    }
  });
  if (!parsed || !ok) return absl::InvalidArgumentError("malformed protobuf Namespace");
  return object;
}

}  // namespace facet::testing
