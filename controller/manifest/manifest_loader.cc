#include "controller/manifest/manifest_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/manifest/object_parser.h"
#include "xds_server/json/yaml_json.h"

namespace facet::controller {
namespace {

namespace fs = std::filesystem;

bool IsManifestFile(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

void AddDocument(const YAML::Node& document, const std::string& location, ManifestSet* set,
                 std::map<xds::ObjectRef, std::string>* seen) {
  ParsedDocument parsed = ParseDocument(document, location, kDefaultNamespace);
  auto check_unique = [&](const xds::ObjectRef& ref) {
    auto [it, inserted] = seen->emplace(ref, location);
    if (!inserted) {
      set->problems.push_back({ManifestProblem::Kind::kError, location,
                               absl::StrCat(ref.ToString(), ": defined again (first at ",
                                            it->second, "); the later definition is ignored")});
    }
    return inserted;
  };
  if (auto* resource = std::get_if<xds::ResourceObject>(&parsed)) {
    if (check_unique(resource->ref)) set->resources.push_back(std::move(*resource));
  } else if (auto* authority = std::get_if<xds::AuthorityObject>(&parsed)) {
    if (check_unique(authority->ref)) set->authorities.push_back(std::move(*authority));
  } else if (auto* foreign = std::get_if<ForeignObject>(&parsed)) {
    set->problems.push_back({ManifestProblem::Kind::kWarning, location,
                             absl::StrCat("ignored: ", foreign->kind, " ", foreign->name,
                                          " is not a Facet object")});
  } else {
    set->problems.push_back(
        {ManifestProblem::Kind::kError, location, std::get<UnusableDocument>(parsed).message});
  }
}

void LoadFile(const std::string& path, ManifestSet* set,
              std::map<xds::ObjectRef, std::string>* seen) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    set->problems.push_back({ManifestProblem::Kind::kUnreadable, path, "cannot be read"});
    return;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  set->files.push_back(path);
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(buffer.str());
  } catch (const YAML::Exception& e) {
    set->problems.push_back({ManifestProblem::Kind::kUnreadable,
                             absl::StrCat(path, ":", e.mark.line + 1),
                             absl::StrCat("not valid YAML: ", e.msg)});
    return;
  }
  for (const YAML::Node& document : documents) {
    if (!document.IsDefined() || document.IsNull()) continue;  // Empty document.
    const std::string location = absl::StrCat(path, ":", document.Mark().line + 1);
    if (document.IsMap() && json::Child(document, "kind").IsScalar() && json::Child(document, "kind").Scalar() == "List" &&
        json::Child(document, "items").IsSequence()) {
      for (const YAML::Node& item : json::Child(document, "items")) {
        AddDocument(item, absl::StrCat(path, ":", item.Mark().line + 1), set, seen);
      }
      continue;
    }
    AddDocument(document, location, set, seen);
  }
}

}  // namespace

std::vector<std::string> ListManifestFiles(absl::Span<const std::string> paths,
                                           std::vector<ManifestProblem>* problems) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code error;
    if (fs::is_directory(path, error)) {
      std::vector<std::string> entries;
      for (const auto& entry : fs::directory_iterator(path, error)) {
        if (entry.is_regular_file(error) && IsManifestFile(entry.path()) &&
            !absl::StartsWith(entry.path().filename().string(), ".")) {
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
      problems->push_back({ManifestProblem::Kind::kUnreadable, path, "no such file or directory"});
    }
  }
  return files;
}

ManifestSet LoadManifests(absl::Span<const std::string> paths) {
  ManifestSet set;
  std::map<xds::ObjectRef, std::string> seen;
  for (const std::string& file : ListManifestFiles(paths, &set.problems)) {
    LoadFile(file, &set, &seen);
  }
  return set;
}

}  // namespace facet::controller
