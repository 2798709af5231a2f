// `facet relay`: a TP2 caching xDS proxy in front of upstream xDS servers.
#ifndef FACET_CONTROLLER_CLI_RELAY_COMMAND_H_
#define FACET_CONTROLLER_CLI_RELAY_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace facet::controller {

// Runs until SIGTERM or SIGINT, then drains streams and returns 0. Returns 2
// on bad flags or a bad --config file and 1 when it cannot start (address in
// use, unreadable file).
int RunRelay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_RELAY_COMMAND_H_
