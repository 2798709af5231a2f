// Fuzzes loading a kubeconfig file (controller/kubernetes/client/kube_config): the input is
// the file's content; the context is the current-context.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "controller/kubernetes/client/kube_config.h"
#include "test/fuzz/fuzz_support.h"

using facet::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  facet::fuzz::MemoryFile file(data, size);
  absl::StatusOr<facet::controller::kube::ClusterConfig> config =
      facet::controller::kube::LoadKubeconfig({file.path()});
  if (config.ok()) {
    Check(!config->server.empty());
  } else {
    Check(!config.status().message().empty());
  }
  return 0;
}
