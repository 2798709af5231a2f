#include "xds_server/resources/wire_check.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "xds_server/names/names.h"

namespace facet::xds {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::internal::WireFormatLite;

// protobuf's own default nesting limit: deeper messages do not parse anyway.
constexpr int kMaxDepth = 100;

std::string Join(absl::string_view prefix, absl::string_view field) {
  return prefix.empty() ? std::string(field) : absl::StrCat(prefix, ".", field);
}

using Problem = std::optional<EncodedProblem>;

Problem Check(const Descriptor& descriptor, absl::string_view bytes, absl::string_view prefix,
              int depth);

// Checks the value of a google.protobuf.Any (`bytes`) at `path`: its value as
// the generated type its type URL names, if there is one.
Problem CheckAny(absl::string_view bytes, const std::string& path, int depth) {
  google::protobuf::Any any;
  if (!any.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return std::nullopt;  // Left for the parser.
  }
  const absl::string_view type_url = any.type_url();
  const size_t slash = type_url.rfind('/');
  const Descriptor* inner =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
          std::string(slash == absl::string_view::npos ? type_url : type_url.substr(slash + 1)));
  if (inner == nullptr) return std::nullopt;
  return Check(*inner, any.value(), absl::StrCat(path, "[", inner->full_name(), "]"), depth + 1);
}

Problem Check(const Descriptor& descriptor, absl::string_view bytes, absl::string_view prefix,
              int depth) {
  if (depth > kMaxDepth) return std::nullopt;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  std::map<int, size_t> items;  // Items seen so far of each repeated field.
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return std::nullopt;
    const FieldDescriptor* field =
        descriptor.FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
    if (field == nullptr) {
      if (!WireFormatLite::SkipField(&in, tag)) return std::nullopt;
      continue;
    }
    std::string path = Join(prefix, field->name());
    if (field->is_repeated()) {
      const size_t index = items[field->number()]++;
      if (index == json::kMaxRepeatedFieldItems) {
        return EncodedProblem{
            path, absl::StrCat("has more than ", json::kMaxRepeatedFieldItems,
                               " items; the limit per field is ", json::kMaxRepeatedFieldItems)};
      }
      absl::StrAppend(&path, "[", index, "]");
    }
    const bool string = field->type() == FieldDescriptor::TYPE_STRING;
    const bool message = field->type() == FieldDescriptor::TYPE_MESSAGE;
    if ((!string && !message) ||
        WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(&in, tag)) return std::nullopt;
      continue;
    }
    uint32_t length = 0;
    if (!in.ReadVarint32(&length) || length > bytes.size() - in.CurrentPosition()) {
      return std::nullopt;
    }
    const absl::string_view value = bytes.substr(in.CurrentPosition(), length);
    in.Skip(static_cast<int>(length));
    if (string) {
      if (const size_t at = InvalidUtf8Offset(value); at < value.size()) {
        return EncodedProblem{path, absl::StrCat("is not valid UTF-8 (at byte ", at, ")")};
      }
    } else if (field->message_type() == google::protobuf::Any::descriptor()) {
      // The Any's own type_url is a string field too: checked first.
      if (Problem problem = Check(*field->message_type(), value, path, depth + 1)) return problem;
      if (Problem problem = CheckAny(value, path, depth)) return problem;
    } else if (Problem problem = Check(*field->message_type(), value, path, depth + 1)) {
      return problem;
    }
  }
}

}  // namespace

std::string EncodedProblem::ToString() const {
  return field.empty() ? reason : absl::StrCat(field, ": ", reason);
}

std::optional<EncodedProblem> CheckEncodedMessage(const Descriptor& descriptor,
                                                  absl::string_view bytes) {
  return Check(descriptor, bytes, "", 0);
}

std::optional<EncodedProblem> CheckEncodedResource(const ResourceType& type,
                                                   absl::string_view bytes) {
  if (bytes.size() > kMaxResourceBytes) {
    return EncodedProblem{"", absl::StrCat("is ", bytes.size(), " bytes encoded; the limit is ",
                                           kMaxResourceBytes, " bytes per resource")};
  }
  return CheckEncodedMessage(*type.New()->GetDescriptor(), bytes);
}

}  // namespace facet::xds
