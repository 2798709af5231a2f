// `facet relay`: a TP2 caching xDS proxy in front of upstream xDS servers.
#ifndef FACET_CONTROLLER_CLI_RELAY_COMMAND_H_
#define FACET_CONTROLLER_CLI_RELAY_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "controller/cli/serving_runner.h"
#include "xds_server/relay/relay.h"

namespace facet::controller {

// Runs until SIGTERM or SIGINT, then drains streams and returns 0. Returns 2
// on bad flags or a bad --config file and 1 when it cannot start (address in
// use, unreadable file).
int RunRelay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Builds `facet relay`'s parts on `run` (ServingRunner::Run's `build`): the
// relay with `options`, the ADS service it observes, and their stops, so the
// relay publishes only while the service watches the store. The
// announcement goes to `out`.
absl::StatusOr<ServingParts> StartRelay(ServingRunner& run, const xds::Relay::Options& options,
                                        std::ostream& out);

// The most resources /upstreams lists (the cache keeps one per resource
// downstream asks for; the rest are counted).
inline constexpr size_t kMaxUpstreamResourcesShown = 2000;

// Returns `facet relay`'s /upstreams, for the console's clients page: each
// upstream server list (its first server_uri, whether connected) with the
// cached resources it serves and, for each, the downstream parameter sets
// answered from the cache (hits) and those that waited for upstream
// (misses): {"resources_shown":N,"resources_total":N,"upstreams":[
// {"connected","resources":[{"cached_variants","hits","misses","name",
// "type"}...],"server_uri"}...]}, keys sorted. `resources` are
// Relay::ResourceStats' (`total` their number before the bound).
std::string RelayUpstreamsJson(const xds::RelayStats& stats,
                               absl::Span<const xds::RelayResourceStats> resources, size_t total);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_RELAY_COMMAND_H_
