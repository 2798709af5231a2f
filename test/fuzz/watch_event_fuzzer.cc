// Fuzzes the Kubernetes watch stream's framing and event decoding
// (controller/kubernetes/client/watch_stream): the input arrives in chunks (sizes taken
// from the input), is split into lines under a line limit, and every line is
// decoded as a watch event.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "controller/kubernetes/client/watch_stream.h"
#include "test/fuzz/fuzz_support.h"

namespace {

using facet::fuzz::Check;

constexpr size_t kMaxLineBytes = 4096;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using facet::controller::kube::NdjsonSplitter;
  FuzzedDataProvider provider(data, size);
  NdjsonSplitter splitter(kMaxLineBytes);
  while (provider.remaining_bytes() > 0) {
    size_t chunk = provider.ConsumeIntegralInRange<size_t>(0, 512);
    std::string bytes = provider.ConsumeBytesAsString(chunk);
    std::vector<std::string> lines;
    absl::Status fed = splitter.Feed(bytes, lines);
    for (const std::string& line : lines) {
      Check(line.find('\n') == std::string::npos && !line.empty());
      auto event = facet::controller::kube::ParseWatchEvent(line, "watch of fuzz");
      Check(event.ok() || !event.status().message().empty());
    }
    if (!fed.ok()) {
      Check(fed.code() == absl::StatusCode::kResourceExhausted);
      return 0;
    }
    Check(splitter.pending().size() <= kMaxLineBytes);
  }
  return 0;
}
