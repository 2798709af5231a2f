// Fuzzes reading a manifest file into Facet objects (controller/sources/manifest):
// YAML or JSON, multi-document, `kind: List`, every object parsed down to its
// variants' constraints and resources. The input is the file's content.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <variant>

#include "controller/sources/manifest/manifest_loader.h"
#include "test/fuzz/fuzz_support.h"

using facet::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  facet::fuzz::MemoryFile file(data, size);
  facet::controller::ManifestFile read =
      facet::controller::ReadManifestFile(file.path(), /*fingerprints=*/true);
  Check(read.opened);
  for (const auto& problem : read.problems) Check(!problem.message.empty());
  for (const auto& object : read.objects) Check(!object.ref().name.empty());
  return 0;
}
