#include "controller/sources/manifest/manifest_loader.h"

#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/objects/object_parser.h"
#include "xds_server/common/digest.h"
#include "xds_server/common/parallel.h"
#include "xds_server/common/regular_file.h"
#include "xds_server/json/yaml_json.h"
#include "xds_server/json/yaml_reader.h"

namespace facet::controller {
namespace {

namespace fs = std::filesystem;

// Returns a digest of what defines an object read from `document` at
// `location`: its content (as JSON, so formatting does not count) and where
// it is (statuses report the location).
xds::Digest128 Fingerprint(const YAML::Node& document, const std::string& location) {
  absl::StatusOr<std::string> json = json::YamlToJson(document, "");
  xds::DigestStream<128> digest;
  digest.AddField(json.ok() ? *json : YAML::Dump(document)).AddField(location);
  return digest.Finish();
}

// A Service, EndpointSlice or ReferenceGrant defined again is a warning:
// Facet does not own them (and one file may well repeat another's Service).
ManifestProblem DefinedAgain(const xds::ObjectRef& ref, const std::string& location,
                             const std::string& first) {
  return {gateway::IsReadOnlyKind(ref.kind) ? ManifestProblem::Kind::kWarning
                                            : ManifestProblem::Kind::kError,
          location,
          absl::StrCat(ref.ToString(), ": defined again (first at ", first,
                       "); the later definition is ignored")};
}

// Returns strerror's text for `error`, in lower case like the other messages
// ("too many levels of symbolic links").
std::string ErrorText(int error) {
  std::string text = std::strerror(error);
  absl::AsciiStrToLower(&text);
  return text;
}

const std::string& LocationOf(const FileObject& read) {
  return std::visit([](const auto& o) -> const std::string& { return o.location; }, read.object);
}

void AddDocument(const YAML::Node& document, const std::string& location, bool fingerprints,
                 ManifestFile* file, std::map<xds::ObjectRef, std::string>* seen) {
  ParsedDocument parsed = ParseDocument(document, location, kDefaultNamespace);
  auto add = [&](auto&& object) {
    auto [it, inserted] = seen->emplace(object.ref, location);
    if (!inserted) {
      file->problems.push_back(DefinedAgain(object.ref, location, it->second));
      return;
    }
    file->objects.push_back(
        {std::move(object), fingerprints ? Fingerprint(document, location) : xds::Digest128()});
  };
  if (auto* resource = std::get_if<xds::ResourceObject>(&parsed)) {
    add(std::move(*resource));
  } else if (auto* authority = std::get_if<xds::AuthorityObject>(&parsed)) {
    add(std::move(*authority));
  } else if (auto* gateway_object = std::get_if<gateway::GatewayObject>(&parsed)) {
    add(std::move(*gateway_object));
  } else if (auto* foreign = std::get_if<ForeignObject>(&parsed)) {
    file->problems.push_back({ManifestProblem::Kind::kWarning, location,
                              absl::StrCat("ignored: ", foreign->kind, " ", foreign->name,
                                           " is not a Facet object")});
  } else {
    file->problems.push_back(
        {ManifestProblem::Kind::kError, location, std::get<UnusableDocument>(parsed).message});
  }
}

}  // namespace

// glibc's default M_MXFAST: 64 * sizeof(size_t) / 4 bytes.
constexpr int kDefaultMaxFast = 64 * sizeof(size_t) / 4;
// glibc's default M_TOP_PAD, and the one for a bulk load: the most a
// thread's heap grows by at once (its 64 MiB reservation).
constexpr int kDefaultTopPad = 128 * 1024;
constexpr int kBulkTopPad = 64 * 1024 * 1024;

BulkLoadAllocation::BulkLoadAllocation() {
  mallopt(M_MXFAST, 0);
  mallopt(M_TOP_PAD, kBulkTopPad);
}

BulkLoadAllocation::~BulkLoadAllocation() {
  mallopt(M_MXFAST, kDefaultMaxFast);
  mallopt(M_TOP_PAD, kDefaultTopPad);
}

const xds::ObjectRef& FileObject::ref() const {
  return std::visit([](const auto& o) -> const xds::ObjectRef& { return o.ref; }, object);
}

bool IsManifestFileName(absl::string_view name) {
  return !absl::StartsWith(name, ".") &&
         (absl::EndsWith(name, ".yaml") || absl::EndsWith(name, ".yml") ||
          absl::EndsWith(name, ".json"));
}

ManifestFile ReadManifestFile(const std::string& path, bool fingerprints) {
  ManifestFile file;
  auto unreadable = [&](std::string message) {
    file.unreadable = true;
    file.problems.push_back({ManifestProblem::Kind::kUnreadable, path, std::move(message)});
    return std::move(file);
  };
  // Only a regular file is read (not a FIFO, a device such as /dev/zero, a
  // socket), opened without blocking.
  xds::RegularFileRead read = xds::ReadRegularFile(path, kMaxManifestFileBytes);
  using Outcome = xds::RegularFileRead::Outcome;
  if (read.outcome == Outcome::kCannotRead || read.outcome == Outcome::kNotRegular) {
    return unreadable(xds::DescribeFailure(read, kMaxManifestFileBytes, "a manifest file"));
  }
  file.opened = true;
  if (read.outcome == Outcome::kTooLarge) {
    return unreadable(absl::StrCat(
        xds::DescribeFailure(read, kMaxManifestFileBytes, "a manifest file"), ": split it"));
  }
  std::string text = std::move(read.text);
  ManifestFile parsed = ParseManifestText(text, path, fingerprints);
  parsed.opened = true;
  if (!parsed.unreadable) parsed.text = std::move(text);
  return parsed;
}

ManifestFile ParseManifestText(absl::string_view text, const std::string& path,
                               bool fingerprints) {
  ManifestFile file;
  file.opened = true;
  json::YamlDocuments read = json::ReadYamlDocuments(text);
  if (read.error.has_value()) {
    const json::YamlPosition& at = read.error->position;
    file.unreadable = true;
    file.problems.push_back(
        {ManifestProblem::Kind::kUnreadable,
         at.line > 0 ? absl::StrCat(path, ":", at.line, ":", at.column) : path,
         read.error->message, at.line, at.column});
    return file;
  }
  std::map<xds::ObjectRef, std::string> seen;
  for (const json::YamlDocument& document : read.documents) {
    const YAML::Node& node = document.node;
    if (!node.IsDefined() || node.IsNull()) continue;  // Empty document.
    const YAML::Node kind = json::Child(node, "kind");
    const YAML::Node items = json::Child(node, "items");
    if (node.IsMap() && kind.IsScalar() && kind.Scalar() == "List" && items.IsSequence()) {
      // Each item has its own position; aliases may repeat an item, which
      // then counts once per appearance.
      size_t i = 0;
      for (const YAML::Node& item : items) {
        const int line = i < document.item_positions.size() ? document.item_positions[i].line
                                                            : document.position.line;
        ++i;
        AddDocument(item, absl::StrCat(path, ":", line), fingerprints, &file, &seen);
      }
      continue;
    }
    AddDocument(node, absl::StrCat(path, ":", document.position.line), fingerprints, &file,
                &seen);
  }
  return file;
}

std::vector<std::string> ListManifestFiles(absl::Span<const std::string> paths,
                                           std::vector<ManifestProblem>* problems) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code error;
    if (fs::is_directory(path, error)) {
      std::vector<std::string> entries;
      for (const auto& entry : fs::directory_iterator(path, error)) {
        if (entry.is_regular_file(error) &&
            IsManifestFileName(entry.path().filename().string())) {
          entries.push_back(entry.path().string());
        }
      }
      if (error) {
        problems->push_back({ManifestProblem::Kind::kUnreadable, path,
                             absl::StrCat("cannot list directory: ", error.message())});
      }
      std::sort(entries.begin(), entries.end());
      files.insert(files.end(), entries.begin(), entries.end());
    } else if (fs::exists(path, error)) {
      files.push_back(path);
    } else {
      // Not only a missing path: a symbolic link loop (ELOOP), a denied
      // directory on the way (EACCES).
      problems->push_back({ManifestProblem::Kind::kUnreadable, path,
                           error ? ErrorText(error.value()) : "no such file or directory"});
    }
  }
  return files;
}

std::vector<ManifestFile> ReadManifestFiles(absl::Span<const std::string> paths,
                                            bool fingerprints) {
  std::vector<ManifestFile> out(paths.size());
  // Below 32 files a thread costs more than it saves.
  xds::ParallelFor(paths.size(), /*min_per_thread=*/32,
                   [&](size_t i) { out[i] = ReadManifestFile(paths[i], fingerprints); });
  return out;
}

ManifestSet LoadManifests(absl::Span<const std::string> paths) {
  ManifestSet set;
  std::map<xds::ObjectRef, std::string> seen;  // Across files: the first definition wins.
  const std::vector<std::string> listed = ListManifestFiles(paths, &set.problems);
  std::vector<ManifestFile> files = ReadManifestFiles(listed, /*fingerprints=*/false);
  for (size_t f = 0; f < listed.size(); ++f) {
    const std::string& path = listed[f];
    ManifestFile& file = files[f];
    if (file.opened) set.files.push_back(path);
    std::string().swap(file.text);  // Only the objects are kept.
    set.problems.insert(set.problems.end(), std::make_move_iterator(file.problems.begin()),
                        std::make_move_iterator(file.problems.end()));
    for (FileObject& read : file.objects) {
      auto [it, inserted] = seen.emplace(read.ref(), LocationOf(read));
      if (!inserted) {
        set.problems.push_back(DefinedAgain(read.ref(), LocationOf(read), it->second));
        continue;
      }
      if (auto* resource = std::get_if<xds::ResourceObject>(&read.object)) {
        set.resources.push_back(std::move(*resource));
      } else if (auto* authority = std::get_if<xds::AuthorityObject>(&read.object)) {
        set.authorities.push_back(std::move(*authority));
      } else {
        set.gateway_objects.push_back(std::get<gateway::GatewayObject>(std::move(read.object)));
      }
    }
  }
  return set;
}

}  // namespace facet::controller
