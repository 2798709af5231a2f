// Reading manifests as `facet validate` and `facet serve` do
// (ParseManifestText): the synthetic world of docs/performance.md (2,000
// files of six objects each) and, for comparison, yaml-cpp's unbounded
// YAML::LoadAll followed by the same ParseDocument per document, then the
// YAML reading alone both ways; a `kind: List` of 2,000 objects; and the
// hostile inputs (a million list elements, the 900-byte alias bomb), which
// must be refused in time linear in what was read.
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "controller/sources/manifest/manifest_loader.h"
#include "controller/objects/object_parser.h"
#include "test/load/world.h"
#include "xds_server/json/hostile_yaml.h"
#include "xds_server/json/yaml_reader.h"
#include "yaml-cpp/yaml.h"

namespace facet {
namespace {

std::vector<std::string> World(int services) {
  std::vector<std::string> files;
  for (int i = 0; i < services; ++i) files.push_back(load::ServiceManifest(i, /*edited=*/false));
  return files;
}

void BM_ParseManifestText(benchmark::State& state) {
  const std::vector<std::string> files = World(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    size_t objects = 0;
    for (const std::string& text : files) {
      objects += controller::ParseManifestText(text, "svc.yaml", /*fingerprints=*/false)
                     .objects.size();
    }
    if (objects != files.size() * 6) state.SkipWithError("objects lost");
  }
  state.counters["objects"] = static_cast<double>(files.size() * 6);
}
BENCHMARK(BM_ParseManifestText)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_LoadAllThenParseDocument(benchmark::State& state) {
  const std::vector<std::string> files = World(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    size_t objects = 0;
    for (const std::string& text : files) {
      for (const YAML::Node& document : YAML::LoadAll(text)) {
        controller::ParsedDocument parsed =
            controller::ParseDocument(document, "svc.yaml", "default");
        objects += std::holds_alternative<xds::ResourceObject>(parsed) ? 1 : 0;
      }
    }
    if (objects != files.size() * 6) state.SkipWithError("objects lost");
  }
  state.counters["objects"] = static_cast<double>(files.size() * 6);
}
BENCHMARK(BM_LoadAllThenParseDocument)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_ReadYamlDocuments(benchmark::State& state) {
  const std::vector<std::string> files = World(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    for (const std::string& text : files) benchmark::DoNotOptimize(json::ReadYamlDocuments(text));
  }
}
BENCHMARK(BM_ReadYamlDocuments)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_LoadAll(benchmark::State& state) {
  const std::vector<std::string> files = World(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    for (const std::string& text : files) benchmark::DoNotOptimize(YAML::LoadAll(text));
  }
}
BENCHMARK(BM_LoadAll)->Arg(2000)->Unit(benchmark::kMillisecond);

std::string List(int items) {
  std::string text = "apiVersion: v1\nkind: List\nitems:\n";
  for (int i = 0; i < items; ++i) {
    absl::StrAppend(&text, "- apiVersion: facet.dev/v1alpha1\n  kind: XdsResource\n",
                    "  metadata: {name: ep-", i, ", namespace: demo}\n",
                    "  spec: {type: endpoint, name: ep-", i,
                    ", variants: [{resource: {endpoints: [{priority: ", i, "}]}}]}\n");
  }
  return text;
}

void BM_ParseList(benchmark::State& state) {
  const std::string text = List(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    controller::ManifestFile file =
        controller::ParseManifestText(text, "list.yaml", /*fingerprints=*/false);
    if (file.objects.size() != static_cast<size_t>(state.range(0))) state.SkipWithError("lost");
    benchmark::DoNotOptimize(file);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseList)->Arg(200)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_RefuseMillionElements(benchmark::State& state) {
  std::string text = "apiVersion: v1\nkind: List\nitems:\n";
  for (int i = 0; i < 1'000'000; ++i) text.append("- 1\n");
  for (auto _ : state) {
    controller::ManifestFile file =
        controller::ParseManifestText(text, "million.yaml", /*fingerprints=*/false);
    if (!file.unreadable) state.SkipWithError("accepted");
  }
}
BENCHMARK(BM_RefuseMillionElements)->Unit(benchmark::kMillisecond);

void BM_RefuseAliasBomb(benchmark::State& state) {
  const std::string text = json::AliasBomb();
  for (auto _ : state) {
    controller::ManifestFile file =
        controller::ParseManifestText(text, "bomb.yaml", /*fingerprints=*/false);
    if (!file.unreadable) state.SkipWithError("accepted");
  }
}
BENCHMARK(BM_RefuseAliasBomb)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace facet

BENCHMARK_MAIN();
